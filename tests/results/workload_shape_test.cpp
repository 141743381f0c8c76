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
  // Cached tokens: 3 x 999 + 100 = 3097 over 4 sequences = 774.25, rounded up to 775.
  EXPECT_EQ(s.context_len, 775);
  EXPECT_EQ(s.max_context_len, 999);
  EXPECT_EQ(s.query_tokens, 7);
  EXPECT_EQ(s.gqa_ratio, 8);
  EXPECT_EQ(s.head_dim, 128);
  EXPECT_EQ(s.dtype, "bf16");
  EXPECT_EQ(s.kv_dtype, "fp8_e4m3");
  EXPECT_EQ(s.page_size, 32);
}

TEST(WorkloadShape, MeanContextRoundsUp) {
  // 1000 + 999 cached tokens over 2 sequences: 999.5 -> 1000.
  const WorkloadSpec spec = parse_workload(R"({
    "schema_version": 2, "name": "two",
    "model": {"num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "dtype": "fp16"},
    "sequences": [{"context_len": 1000, "query_len": 1}, {"context_len": 999, "query_len": 1}]
  })",
                                           "test");
  const WorkloadShape s = shape_of(spec);
  EXPECT_EQ(s.context_len, 1000);
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
  EXPECT_EQ(b.context_len, 3999);
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
  EXPECT_EQ(to_string(batch_bucket_range(6)), "[33, 64]");
  EXPECT_EQ(to_string(batch_bucket_range(0)), "[1, 1]");
  EXPECT_EQ(to_string(batch_bucket_range(1)), "[2, 2]");
  EXPECT_EQ(to_string(batch_bucket_range(2)), "[3, 4]");
  EXPECT_EQ(to_string(context_bucket_range(0)), "[0, 1]");  // no cached token, or one
  EXPECT_EQ(to_string(context_bucket_range(12)), "[2049, 4096]");
  // Every value lies in the range of its bucket.
  for (int64_t v = 0; v < 5000; ++v) {
    const BucketRange c = context_bucket_range(pow2_bucket(v));
    ASSERT_LE(c.lo, v);
    ASSERT_GE(c.hi, v);
    if (v == 0) continue;
    const BucketRange b = batch_bucket_range(pow2_bucket(v));
    ASSERT_LE(b.lo, v);
    ASSERT_GE(b.hi, v);
  }
}

// The context length is the cached tokens: a decode step over 4096 cached tokens (4097 keys with
// its new token) is 4096, in the bucket [2049, 4096] a caller asking with 4096 finds; a prefill
// without a prefix is 0; a prefix prefill counts its prefix, not its new tokens.
TEST(WorkloadShape, ContextLengthIsTheCachedTokens) {
  const auto shape = [](const std::string& sequences) {
    return shape_of(parse_workload(R"({"schema_version": 2, "name": "w",
      "model": {"num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "dtype": "bf16"},
      "sequences": )" + sequences + "}",
                                   "test"));
  };
  const WorkloadShape decode = shape(R"([{"context_len": 4096, "query_len": 1, "count": 8}])");
  EXPECT_EQ(decode.context_len, 4096);
  EXPECT_EQ(pow2_bucket(decode.context_len), pow2_bucket(4096));
  EXPECT_EQ(to_string(context_bucket_range(pow2_bucket(decode.context_len))), "[2049, 4096]");
  const WorkloadShape prefill = shape(R"([{"context_len": 0, "query_len": 512, "count": 2}])");
  EXPECT_EQ(prefill.context_len, 0);
  EXPECT_EQ(prefill.query_tokens, 1024);
  EXPECT_EQ(to_string(context_bucket_range(pow2_bucket(prefill.context_len))), "[0, 1]");
  const WorkloadShape prefix = shape(R"([{"context_len": 4096, "query_len": 128, "count": 2}])");
  EXPECT_EQ(prefix.context_len, 4096);
}

}  // namespace
}  // namespace attn
