#include "workloads/batch_data.hpp"

#include <cmath>
#include <cstring>
#include <ostream>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "base/dtype.hpp"

namespace attn {

// Readable test parameters in gtest's output (found by argument-dependent lookup).
inline void PrintTo(KvLayout layout, std::ostream* out) {
  *out << to_string(layout);
}
inline void PrintTo(PageAllocation allocation, std::ostream* out) {
  *out << to_string(allocation);
}
inline void PrintTo(DType dtype, std::ostream* out) {
  *out << to_string(dtype);
}

namespace {

WorkloadSpec data_spec(int page_size, KvLayout layout, PageAllocation allocation, DType dtype,
                       uint64_t seed = 5) {
  WorkloadSpec spec;
  spec.name = "data-test";
  spec.model = {8, 2, 64, dtype, std::nullopt};
  spec.kv_cache = {page_size, layout, allocation};
  spec.sequences = {{0, 1, 1}, {20, 3, 2}, {47, 1, 1}, {5, 11, 1}};
  spec.seed = seed;
  return spec;
}

// The pool element holding (seq, position, head, dim) of a batch.
int64_t element_of(const Batch& b, DataStream stream, int seq, int64_t position, int head,
                   int dim) {
  const int32_t page = b.page_indices[size_t(b.page_indptr[size_t(seq)] + position / b.page_size)];
  return pool_offset(b, stream, page, int(position % b.page_size), head, dim);
}

std::vector<uint16_t> filled_pool(const Batch& b, DataStream stream) {
  std::vector<uint16_t> pool(size_t(pool_elements(b, stream)), 0x1234);  // a non-NaN marker
  fill_kv_pool(b, stream, pool.data());
  return pool;
}

uint16_t rounded(DType dtype, float value) {
  return dtype == DType::bf16 ? float_to_bf16(value) : float_to_fp16(value);
}

uint16_t nan_bits(DType dtype) {
  return dtype == DType::bf16 ? 0x7FC0 : 0x7E00;
}

TEST(BatchData, PoolOffsetFollowsTheLayout) {
  Batch nhd = generate_batch(data_spec(16, KvLayout::nhd, PageAllocation::sequential, DType::bf16));
  Batch hnd = generate_batch(data_spec(16, KvLayout::hnd, PageAllocation::sequential, DType::bf16));
  // NHD: [pages, page_size, kv_heads, head_dim]; HND: [pages, kv_heads, page_size, head_dim].
  EXPECT_EQ(pool_offset(nhd, DataStream::key, 3, 5, 1, 7), ((3 * 16 + 5) * 2 + 1) * 64 + 7);
  EXPECT_EQ(pool_offset(hnd, DataStream::key, 3, 5, 1, 7), ((3 * 2 + 1) * 16 + 5) * 64 + 7);
  EXPECT_EQ(pool_elements(nhd, DataStream::key), nhd.num_pages * 16 * 2 * 64);
  EXPECT_EQ(pool_elements(nhd, DataStream::value), nhd.num_pages * 16 * 2 * 64);
  EXPECT_EQ(query_elements(nhd), nhd.total_q * 8 * 64);
}

class BatchDataLayouts
    : public ::testing::TestWithParam<std::tuple<KvLayout, PageAllocation, DType, int>> {};

TEST_P(BatchDataLayouts, PoolHoldsKvValueAtPoolOffsetAndNaNElsewhere) {
  const auto [layout, allocation, dtype, page_size] = GetParam();
  Batch b = generate_batch(data_spec(page_size, layout, allocation, dtype));
  const int kv_heads = b.spec.model.num_kv_heads;
  const int head_dim = b.spec.model.head_dim;
  for (DataStream stream : {DataStream::key, DataStream::value}) {
    std::vector<uint16_t> pool = filled_pool(b, stream);
    std::vector<bool> owned(pool.size(), false);
    for (int s = 0; s < b.num_seqs; ++s) {
      for (int64_t pos = 0; pos < b.kv_lens[size_t(s)]; ++pos) {
        for (int h = 0; h < kv_heads; ++h) {
          for (int d = 0; d < head_dim; ++d) {
            const int64_t e = element_of(b, stream, s, pos, h, d);
            ASSERT_FALSE(owned[size_t(e)]) << "two elements at " << e;
            owned[size_t(e)] = true;
            ASSERT_EQ(pool[size_t(e)], rounded(dtype, kv_value(b, stream, s, pos, h, d)))
                << "seq " << s << " pos " << pos << " head " << h << " dim " << d;
          }
        }
      }
    }
    size_t nan_count = 0;
    for (size_t e = 0; e < pool.size(); ++e) {
      if (!owned[e]) {
        ASSERT_EQ(pool[e], nan_bits(dtype)) << "unowned element " << e << " is not NaN";
        ++nan_count;
      }
    }
    // Exactly the slots no token owns: the poison page and the tails of last pages.
    EXPECT_EQ(int64_t(nan_count), (b.num_pages * page_size - b.total_kv) * kv_heads * head_dim);
    EXPECT_GE(int64_t(nan_count), int64_t(page_size) * kv_heads * head_dim);
  }
}

INSTANTIATE_TEST_SUITE_P(
    BatchData, BatchDataLayouts,
    ::testing::Combine(::testing::Values(KvLayout::nhd, KvLayout::hnd, KvLayout::vllm),
                       ::testing::Values(PageAllocation::sequential, PageAllocation::shuffled),
                       ::testing::Values(DType::bf16, DType::fp16), ::testing::Values(1, 7, 16)),
    [](const auto& info) {
      return to_string(std::get<0>(info.param)) + "_" + to_string(std::get<1>(info.param)) + "_" +
             to_string(std::get<2>(info.param)) + "_page" + std::to_string(std::get<3>(info.param));
    });

TEST(BatchData, QueryHoldsQueryValueInTokenHeadDimOrder) {
  for (DType dtype : {DType::bf16, DType::fp16}) {
    Batch b = generate_batch(data_spec(16, KvLayout::nhd, PageAllocation::shuffled, dtype));
    std::vector<uint16_t> q(size_t(query_elements(b)));
    fill_query(b, q.data());
    const int heads = b.spec.model.num_q_heads;
    const int head_dim = b.spec.model.head_dim;
    for (int64_t t = 0; t < b.total_q; ++t) {
      for (int h = 0; h < heads; ++h) {
        for (int d = 0; d < head_dim; ++d) {
          const size_t i = size_t((t * heads + h) * head_dim + d);
          ASSERT_EQ(q[i], rounded(dtype, query_value(b, t, h, d))) << t << "," << h << "," << d;
        }
      }
    }
  }
}

TEST(BatchData, ValuesAreTheSameWhateverThePagingAndLayout) {
  // The same sequences and seed in other pages, layouts and allocations hold the same numbers.
  const Batch reference =
      generate_batch(data_spec(16, KvLayout::nhd, PageAllocation::sequential, DType::bf16));
  const std::vector<uint16_t> reference_pool = filled_pool(reference, DataStream::key);
  for (int page_size : {1, 7, 64}) {
    for (KvLayout layout : {KvLayout::nhd, KvLayout::hnd, KvLayout::vllm}) {
      Batch b = generate_batch(data_spec(page_size, layout, PageAllocation::shuffled, DType::bf16));
      ASSERT_NE(b.page_indices, reference.page_indices);
      std::vector<uint16_t> pool = filled_pool(b, DataStream::key);
      for (int s = 0; s < b.num_seqs; ++s) {
        for (int64_t pos = 0; pos < b.kv_lens[size_t(s)]; ++pos) {
          for (int h = 0; h < 2; ++h) {
            for (int d = 0; d < 64; d += 5) {
              ASSERT_EQ(
                  pool[size_t(element_of(b, DataStream::key, s, pos, h, d))],
                  reference_pool[size_t(element_of(reference, DataStream::key, s, pos, h, d))])
                  << "page size " << page_size << " seq " << s << " pos " << pos;
            }
          }
        }
      }
    }
  }
}

TEST(BatchData, ValuesLieInTheirRanges) {
  Batch b = generate_batch(data_spec(16, KvLayout::nhd, PageAllocation::shuffled, DType::bf16));
  float kv_min = 1, kv_max = -1, q_min = 0, q_max = 0;
  double kv_sum = 0;
  int64_t kv_count = 0;
  for (DataStream stream : {DataStream::key, DataStream::value}) {
    for (int s = 0; s < b.num_seqs; ++s) {
      for (int64_t pos = 0; pos < b.kv_lens[size_t(s)]; ++pos) {
        for (int h = 0; h < 2; ++h) {
          for (int d = 0; d < 64; ++d) {
            const float v = kv_value(b, stream, s, pos, h, d);
            ASSERT_GE(v, -1.0f);
            ASSERT_LT(v, 1.0f);
            kv_min = std::min(kv_min, v);
            kv_max = std::max(kv_max, v);
            kv_sum += v;
            ++kv_count;
          }
        }
      }
    }
  }
  for (int64_t t = 0; t < b.total_q; ++t) {
    for (int h = 0; h < 8; ++h) {
      for (int d = 0; d < 64; ++d) {
        const float v = query_value(b, t, h, d);
        ASSERT_GE(v, -kQueryAmplitude);
        ASSERT_LT(v, kQueryAmplitude);
        q_min = std::min(q_min, v);
        q_max = std::max(q_max, v);
      }
    }
  }
  // Spread over the whole range, centred on zero (not a constant or a narrow band).
  EXPECT_LT(kv_min, -0.99f);
  EXPECT_GT(kv_max, 0.99f);
  EXPECT_NEAR(kv_sum / double(kv_count), 0.0, 0.02);
  EXPECT_LT(q_min, -0.99f * kQueryAmplitude);
  EXPECT_GT(q_max, 0.99f * kQueryAmplitude);

  // Rounded to the dtype, values stay within [-1, 1] (rounding may reach 1 exactly).
  std::vector<uint16_t> pool = filled_pool(b, DataStream::value);
  for (uint16_t bits : pool) {
    const float v = bf16_to_float(bits);
    if (std::isnan(v)) continue;
    ASSERT_GE(v, -1.0f);
    ASSERT_LE(v, 1.0f);
  }
}

size_t differing(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

TEST(BatchData, TheSeedAndTheStreamChangeTheData) {
  Batch b5 =
      generate_batch(data_spec(16, KvLayout::nhd, PageAllocation::sequential, DType::bf16, 5));
  Batch b6 =
      generate_batch(data_spec(16, KvLayout::nhd, PageAllocation::sequential, DType::bf16, 6));
  std::vector<uint16_t> k5 = filled_pool(b5, DataStream::key);
  std::vector<uint16_t> k5_again = filled_pool(b5, DataStream::key);
  std::vector<uint16_t> v5 = filled_pool(b5, DataStream::value);
  std::vector<uint16_t> k6 = filled_pool(b6, DataStream::key);
  EXPECT_EQ(k5, k5_again);  // deterministic
  const size_t owned = size_t(b5.total_kv * 2 * 64);
  // Nearly every owned element differs (equal bf16 values by chance are rare).
  EXPECT_GT(differing(k5, k6), owned * 95 / 100);
  EXPECT_GT(differing(k5, v5), owned * 95 / 100);

  std::vector<uint16_t> q5(size_t(query_elements(b5))), q6(q5.size());
  fill_query(b5, q5.data());
  fill_query(b6, q6.data());
  EXPECT_GT(differing(q5, q6), q5.size() * 95 / 100);
}

TEST(BatchData, Fp32UsesQuietNaN) {
  Batch b = generate_batch(data_spec(16, KvLayout::hnd, PageAllocation::shuffled, DType::bf16));
  b.spec.model.dtype = DType::fp32;  // the spec schema allows bf16/fp16; the fills support fp32
  b.dtype = b.kv_dtype = DType::fp32;
  std::vector<float> pool(size_t(pool_elements(b, DataStream::key)), 0.0f);
  fill_kv_pool(b, DataStream::key, pool.data());
  const int64_t poison = pool_offset(b, DataStream::key, b.poison_page, 0, 0, 0);
  EXPECT_EQ(float_to_bits(pool[size_t(poison)]), 0x7FC00000u);
  const int64_t first = element_of(b, DataStream::key, 1, 3, 1, 9);
  EXPECT_EQ(pool[size_t(first)], kv_value(b, DataStream::key, 1, 3, 1, 9));
  std::vector<float> q(size_t(query_elements(b)));
  fill_query(b, q.data());
  EXPECT_EQ(q[5], query_value(b, 0, 0, 5));
}

TEST(BatchData, LargeFillsMatchThePerElementFunctions) {
  // Big enough that parallel_for splits it across threads; spot-check elements everywhere.
  WorkloadSpec spec = data_spec(16, KvLayout::hnd, PageAllocation::shuffled, DType::bf16);
  spec.model = {32, 8, 128, DType::bf16, std::nullopt};
  spec.sequences = {{4000, 1, 8}, {1, 1, 3}, {777, 5, 2}};
  Batch b = generate_batch(spec);
  std::vector<uint16_t> pool = filled_pool(b, DataStream::value);
  for (int s = 0; s < b.num_seqs; ++s) {
    for (int64_t pos = 0; pos < b.kv_lens[size_t(s)]; pos += 37) {
      const int h = int(pos % 8), d = int(pos % 128);
      ASSERT_EQ(pool[size_t(element_of(b, DataStream::value, s, pos, h, d))],
                rounded(DType::bf16, kv_value(b, DataStream::value, s, pos, h, d)));
    }
  }
}

}  // namespace
}  // namespace attn
