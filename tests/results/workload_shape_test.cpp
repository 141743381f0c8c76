// The shape export buckets a workload by, and the power-of-two buckets.
#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "results/workload_shape.hpp"

namespace attn {
namespace {

TEST(WorkloadShape, ReadsTheModelTheCacheAndTheDrawnLengths) {
  const WorkloadSpec spec = parse_workload(R"({
    "schema_version": 2, "name": "mixed",
    "model": {"num_q_heads": 64, "num_kv_heads": 8, "head_dim": 128, "dtype": "bf16",
              "kv_dtype": "fp8_e4m3"},
    "kv_cache": {"page_size": 32},
    "sequences": [{"context_len": 999, "query_len": 1, "count": 3},
                  {"context_len": 100, "query_len": 4, "count": 1}]
  })",
                                           "test");
  const WorkloadShape s = shape_of(spec);
  EXPECT_EQ(s.batch_size, 4);
  // Keys: 3 x 1000 + 104 = 3104 over 4 sequences = 776.
  EXPECT_EQ(s.context_len, 776);
  EXPECT_EQ(s.max_context_len, 1000);
  EXPECT_EQ(s.query_tokens, 7);
  EXPECT_EQ(s.gqa_ratio, 8);
  EXPECT_EQ(s.head_dim, 128);
  EXPECT_EQ(s.dtype, "bf16");
  EXPECT_EQ(s.kv_dtype, "fp8_e4m3");
  EXPECT_EQ(s.page_size, 32);
}

TEST(WorkloadShape, MeanContextRoundsUp) {
  // 1001 + 1000 keys over 2 sequences: 1000.5 -> 1001.
  const WorkloadSpec spec = parse_workload(R"({
    "schema_version": 2, "name": "two",
    "model": {"num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "dtype": "fp16"},
    "sequences": [{"context_len": 1000, "query_len": 1}, {"context_len": 999, "query_len": 1}]
  })",
                                           "test");
  const WorkloadShape s = shape_of(spec);
  EXPECT_EQ(s.context_len, 1001);
  EXPECT_EQ(s.kv_dtype, "fp16");  // no kv_dtype: the same as dtype
  EXPECT_EQ(s.page_size, 16);     // the default
}

TEST(WorkloadShape, CanonicalJsonGivesTheSameShape) {
  const WorkloadSpec spec = parse_workload(R"({
    "schema_version": 2, "name": "w",
    "model": {"num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "dtype": "bf16"},
    "sequences": [{"context_len": 3999, "query_len": 1, "count": 40}]
  })",
                                           "test");
  const WorkloadShape a = shape_of(spec);
  const WorkloadShape b = shape_of_canonical_json(canonical_json(spec), "w");
  EXPECT_EQ(a.batch_size, b.batch_size);
  EXPECT_EQ(a.context_len, b.context_len);
  EXPECT_EQ(b.context_len, 4000);
  EXPECT_THROW(shape_of_canonical_json("{\"name\": 1}", "broken"), InputError);
}

TEST(Pow2Bucket, EdgesArePowersOfTwo) {
  EXPECT_EQ(pow2_bucket(0), 0);
  EXPECT_EQ(pow2_bucket(1), 0);
  EXPECT_EQ(pow2_bucket(2), 1);
  EXPECT_EQ(pow2_bucket(3), 2);
  EXPECT_EQ(pow2_bucket(4), 2);
  EXPECT_EQ(pow2_bucket(32), 5);
  EXPECT_EQ(pow2_bucket(33), 6);
  EXPECT_EQ(pow2_bucket(64), 6);
  EXPECT_EQ(pow2_bucket(65), 7);
  EXPECT_EQ(pow2_bucket(int64_t(1) << 40), 40);
  EXPECT_EQ(to_string(pow2_bucket_range(6)), "[33, 64]");
  EXPECT_EQ(to_string(pow2_bucket_range(0)), "[1, 1]");
  EXPECT_EQ(to_string(pow2_bucket_range(1)), "[2, 2]");
  EXPECT_EQ(to_string(pow2_bucket_range(2)), "[3, 4]");
  // Every value lies in the range of its bucket.
  for (int64_t v = 1; v < 5000; ++v) {
    const BucketRange r = pow2_bucket_range(pow2_bucket(v));
    ASSERT_LE(r.lo, v);
    ASSERT_GE(r.hi, v);
  }
}

}  // namespace
}  // namespace attn
