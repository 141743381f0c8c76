// minimum_traffic against a brute-force count over the dense visibility mask: every (sequence, kv
// head, key) asks key_visible for every q head of the group and every query; a row some query sees
// is read once per sequence (logical) and once per (page, slot, kv head) in memory (unique). Random
// small batches over many seeds, each feature forced on in turn: sliding windows, block-sparse
// layouts, explicit masks, causal and non-causal prefill, shared prefixes, fp8 KV, GQA groups and
// sequences without queries or keys. The visible pairs behind the FLOPs are checked over the same
// mask.
#include "workloads/traffic.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <set>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "workloads/batch.hpp"
#include "workloads/explicit_mask.hpp"
#include "workloads/visibility.hpp"

namespace attn {
namespace {

struct DenseCount {
  int64_t rows = 0;         // (sequence, kv head, key) some query of the group sees
  int64_t unique_rows = 0;  // distinct (page, slot, kv head) of those rows
  int64_t pages = 0;        // distinct (sequence, page) holding such a row
  int64_t pairs = 0;        // (sequence, q head, query, key) with the key visible to the query
};

DenseCount dense_count(const Batch& b) {
  const int group = b.spec.group_size();
  std::set<std::tuple<int32_t, int64_t, int>> slots;
  std::set<std::pair<int, int64_t>> pages;
  DenseCount count;
  for (int s = 0; s < b.num_seqs; ++s) {
    for (int g = 0; g < b.spec.model.num_kv_heads; ++g) {
      for (int64_t k = 0; k < b.kv_lens[size_t(s)]; ++k) {
        bool seen = false;
        for (int h = g * group; h < (g + 1) * group && !seen; ++h) {
          for (int64_t i = 0; i < b.query_lens[size_t(s)] && !seen; ++i) {
            seen = key_visible(b, s, h, i, k);
          }
        }
        for (int h = g * group; h < (g + 1) * group; ++h) {
          for (int64_t i = 0; i < b.query_lens[size_t(s)]; ++i)
            count.pairs += key_visible(b, s, h, i, k);
        }
        if (!seen) continue;
        ++count.rows;
        const int64_t page = k / b.page_size;
        pages.insert({s, page});
        slots.insert({b.page_indices[size_t(b.page_indptr[size_t(s)] + page)], k % b.page_size, g});
      }
    }
  }
  count.unique_rows = int64_t(slots.size());
  count.pages = int64_t(pages.size());
  return count;
}

// The bytes the definition in traffic.hpp gives for these counts.
double expected_bytes(const Batch& b, int64_t rows, int64_t pages) {
  const ModelShape& m = b.spec.model;
  double bytes = 2.0 * double(b.total_q) * m.num_q_heads * m.head_dim * double(size_of(b.dtype));
  bytes += 2.0 * double(rows) * m.head_dim * double(size_of(b.kv_dtype));
  bytes += 4.0 * double(pages);
  if (b.kv_dtype == DType::fp8_e4m3 && rows > 0) {
    bytes += 4.0 * double(b.k_scales.size() + b.v_scales.size());
  }
  if (b.explicit_mask) bytes += double(b.explicit_mask->bits.size());
  return bytes;
}

enum class Feature {
  window,
  block_sparse,
  explicit_mask,
  causal_prefill,
  non_causal,
  shared_prefix,
  fp8,
  gqa,
  no_queries,
};

const char* name_of(Feature f) {
  switch (f) {
    case Feature::window:
      return "window";
    case Feature::block_sparse:
      return "block_sparse";
    case Feature::explicit_mask:
      return "explicit_mask";
    case Feature::causal_prefill:
      return "causal_prefill";
    case Feature::non_causal:
      return "non_causal";
    case Feature::shared_prefix:
      return "shared_prefix";
    case Feature::fp8:
      return "fp8";
    case Feature::gqa:
      return "gqa";
    case Feature::no_queries:
      return "no_queries";
  }
  return "?";
}

int pick(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

// A small random workload with `forced` on and the other features drawn.
WorkloadSpec random_spec(std::mt19937& rng, Feature forced) {
  WorkloadSpec spec;
  spec.name = std::string("traffic-") + name_of(forced);
  spec.seed = rng();
  const int kv_heads = pick(rng, 1, 3);
  const int group = forced == Feature::gqa ? pick(rng, 2, 4) : pick(rng, 1, 3);
  spec.model.num_kv_heads = kv_heads;
  spec.model.num_q_heads = kv_heads * group;
  spec.model.head_dim = pick(rng, 0, 1) ? 64 : 128;
  spec.model.dtype = pick(rng, 0, 1) ? DType::bf16 : DType::fp16;
  if (forced == Feature::fp8 || pick(rng, 0, 4) == 0) {
    spec.model.kv_dtype = DType::fp8_e4m3;
    spec.model.kv_scale =
        pick(rng, 0, 1) ? KvScaleGranularity::per_head : KvScaleGranularity::per_tensor;
  }
  spec.kv_cache.page_size = std::vector<int>{1, 3, 4, 16}[size_t(pick(rng, 0, 3))];
  spec.kv_cache.allocation = PageAllocation(pick(rng, 0, 2));
  if (forced == Feature::shared_prefix || pick(rng, 0, 3) == 0) {
    spec.kv_cache.allocation = PageAllocation::shared_prefix;
    spec.kv_cache.shared_prefix = SharedPrefixSpec{pick(rng, 1, 40), pick(rng, 2, 4)};
  }
  // Sequence groups: decode, prefill and chunked prefill of awkward lengths.
  const bool prefill = forced == Feature::causal_prefill || forced == Feature::non_causal;
  for (int e = pick(rng, 1, 3); e > 0; --e) {
    SequenceSpec seq;
    const int kind = prefill ? 1 : pick(rng, 0, 2);
    seq.context_len =
        LengthSpec(kind == 1 ? (pick(rng, 0, 2) == 0 ? pick(rng, 0, 30) : 0) : pick(rng, 0, 60));
    seq.query_len = LengthSpec(kind == 0 ? 1 : pick(rng, 2, 24));
    seq.count = pick(rng, 1, 4);
    spec.sequences.push_back(seq);
  }
  spec.mask.causal = forced == Feature::non_causal
                         ? false
                         : forced == Feature::causal_prefill || pick(rng, 0, 4) != 0;
  const bool may_block_sparse = spec.mask.causal && forced != Feature::explicit_mask;
  const bool may_explicit = forced != Feature::window && forced != Feature::block_sparse;
  if (forced == Feature::block_sparse || (may_block_sparse && pick(rng, 0, 3) == 0)) {
    spec.mask.causal = true;
    BlockSparseSpec bs;
    bs.block_size = pick(rng, 1, 9);
    bs.local_blocks = pick(rng, 1, 3);
    bs.vertical_stride = pick(rng, 1, 5);
    bs.head_sliding_step = pick(rng, 0, 3);
    bs.homo_head = pick(rng, 0, 3) == 0;
    spec.mask.block_sparse = bs;
  } else if (forced == Feature::explicit_mask || (may_explicit && pick(rng, 0, 4) == 0)) {
    ExplicitMaskSpec mask;
    mask.kind = pick(rng, 0, 2) == 0 ? ExplicitMaskKind::causal : ExplicitMaskKind::random;
    mask.density = 0.05 + 0.9 * std::uniform_real_distribution<double>(0, 1)(rng);
    spec.mask.explicit_mask = mask;
  }
  if (!spec.mask.explicit_mask && (forced == Feature::window || pick(rng, 0, 2) == 0)) {
    spec.model.sliding_window = pick(rng, 1, 30);
  }
  return spec;
}

// Sequence s loses its queries (and, with `keys`, its context too): a sequence that reads nothing.
void drop_queries(Batch& b, size_t s, bool keys) {
  b.query_lens[s] = 0;
  if (keys) b.context_lens[s] = 0;
  b.kv_lens[s] = b.context_lens[s];
  for (size_t i = 0; i < size_t(b.num_seqs); ++i) {
    b.cu_seqlens_q[i + 1] = b.cu_seqlens_q[i] + b.query_lens[i];
    b.cu_seqlens_kv[i + 1] = b.cu_seqlens_kv[i] + b.kv_lens[i];
  }
  b.total_q = b.cu_seqlens_q.back();
  b.total_kv = b.cu_seqlens_kv.back();
  if (b.explicit_mask) b.explicit_mask = build_explicit_mask(b);
}

class TrafficAgainstDenseMask : public ::testing::TestWithParam<Feature> {};

TEST_P(TrafficAgainstDenseMask, EqualsTheBruteForceCount) {
  const Feature feature = GetParam();
  std::mt19937 rng(1234 + int(feature));
  int shared_rows_seen = 0;  // seeds where some row is shared (unique below logical)
  for (int seed = 0; seed < 60; ++seed) {
    const WorkloadSpec spec = random_spec(rng, feature);
    Batch b = generate_batch(spec);
    SCOPED_TRACE(
        std::string(name_of(feature)) + " seed " + std::to_string(seed) + ": " +
        std::to_string(b.num_seqs) + " sequences, heads " + std::to_string(spec.model.num_q_heads) +
        "/" + std::to_string(spec.model.num_kv_heads) + ", page " + std::to_string(b.page_size) +
        ", window " + std::to_string(b.sliding_window) + (b.causal ? " causal" : " non-causal") +
        (b.block_sparse ? " block-sparse" : "") + (b.explicit_mask ? " explicit-mask" : "") +
        (spec.kv_cache.shared_prefix ? " shared-prefix" : ""));
    // The forced feature is in the batch.
    switch (feature) {
      case Feature::window:
        ASSERT_GT(b.sliding_window, 0);
        break;
      case Feature::block_sparse:
        ASSERT_TRUE(b.block_sparse.has_value());
        break;
      case Feature::explicit_mask:
        ASSERT_TRUE(b.explicit_mask.has_value());
        break;
      case Feature::causal_prefill:
      case Feature::non_causal:
        ASSERT_EQ(b.causal, feature == Feature::causal_prefill);
        ASSERT_GT(b.max_query_len(), 1);
        break;
      case Feature::shared_prefix:
        ASSERT_EQ(spec.kv_cache.allocation, PageAllocation::shared_prefix);
        break;
      case Feature::fp8:
        ASSERT_EQ(b.kv_dtype, DType::fp8_e4m3);
        ASSERT_FALSE(b.k_scales.empty());
        break;
      case Feature::gqa:
        ASSERT_GT(spec.group_size(), 1);
        break;
      case Feature::no_queries:
        break;
    }
    if (feature == Feature::no_queries || pick(rng, 0, 5) == 0) {
      const size_t s = size_t(pick(rng, 0, b.num_seqs - 1));
      drop_queries(b, s, pick(rng, 0, 1) == 1);
    }
    if (feature == Feature::no_queries) {
      ASSERT_EQ(*std::min_element(b.query_lens.begin(), b.query_lens.end()), 0);
    }
    const DenseCount dense = dense_count(b);
    shared_rows_seen += dense.unique_rows < dense.rows;

    const MinimumTraffic paged = minimum_traffic(b, KvStorage::paged);
    EXPECT_EQ(paged.kv_rows, dense.rows);
    EXPECT_EQ(paged.unique_kv_rows, dense.unique_rows);
    EXPECT_EQ(paged.page_entries, dense.pages);
    EXPECT_DOUBLE_EQ(paged.bytes(), expected_bytes(b, dense.rows, dense.pages));
    EXPECT_DOUBLE_EQ(paged.unique_bytes(), expected_bytes(b, dense.unique_rows, dense.pages));

    // Gathered K/V: no page table, and nothing shared between sequences.
    const MinimumTraffic contiguous = minimum_traffic(b, KvStorage::contiguous);
    EXPECT_EQ(contiguous.kv_rows, dense.rows);
    EXPECT_EQ(contiguous.unique_kv_rows, dense.rows);
    EXPECT_EQ(contiguous.page_entries, 0);
    EXPECT_DOUBLE_EQ(contiguous.bytes(), expected_bytes(b, dense.rows, 0));
    EXPECT_DOUBLE_EQ(contiguous.unique_bytes(), contiguous.bytes());

    // The FLOPs (4 x head_dim x visible pairs) come from the same visibility.
    EXPECT_EQ(visible_pairs(b), dense.pairs);
  }
  if (feature == Feature::shared_prefix) {
    EXPECT_GT(shared_rows_seen, 10);
  }
}

INSTANTIATE_TEST_SUITE_P(Features, TrafficAgainstDenseMask,
                         ::testing::Values(Feature::window, Feature::block_sparse,
                                           Feature::explicit_mask, Feature::causal_prefill,
                                           Feature::non_causal, Feature::shared_prefix,
                                           Feature::fp8, Feature::gqa, Feature::no_queries),
                         [](const ::testing::TestParamInfo<Feature>& info) {
                           return std::string(name_of(info.param));
                         });

WorkloadSpec decode_spec(int64_t context, int count, int64_t window) {
  WorkloadSpec spec;
  spec.name = "decode";
  spec.model.num_q_heads = 32;
  spec.model.num_kv_heads = 8;
  spec.model.head_dim = 128;
  if (window > 0) spec.model.sliding_window = window;
  SequenceSpec seq;
  seq.context_len = LengthSpec(context);
  seq.count = count;
  spec.sequences = {seq};
  return spec;
}

TEST(Traffic, ADecodeWindowReadsOnlyTheWindowsRows) {
  // 64 sequences of 8192 keys (8191 cached + the new one), a window of 4096: each query reads its
  // last 4096 keys, in 256 whole pages of 16, for 8 kv heads of 128 bf16 elements, K and V.
  const Batch b = generate_batch(decode_spec(8191, 64, 4096));
  const MinimumTraffic t = minimum_traffic(b, KvStorage::paged);
  EXPECT_EQ(t.kv_rows, int64_t(64) * 4096 * 8);
  EXPECT_EQ(t.page_entries, 64 * 256);
  const double q_and_out = 2.0 * 64 * 32 * 128 * 2;
  EXPECT_DOUBLE_EQ(t.bytes(), q_and_out + 2.0 * 64 * 4096 * 8 * 128 * 2 + 4.0 * 64 * 256);
  EXPECT_DOUBLE_EQ(t.unique_bytes(), t.bytes());
  // The whole cache is twice as much: the window halves the traffic.
  const MinimumTraffic full =
      minimum_traffic(generate_batch(decode_spec(8191, 64, 0)), KvStorage::paged);
  EXPECT_EQ(full.kv_rows, 2 * t.kv_rows);
  // A window that is not page-aligned touches one more page: 128 keys ending at key 8191 start at
  // key 8064 = page 504 exactly; ending at key 8192 they span pages 504..512.
  EXPECT_EQ(
      minimum_traffic(generate_batch(decode_spec(8191, 1, 128)), KvStorage::paged).page_entries, 8);
  EXPECT_EQ(
      minimum_traffic(generate_batch(decode_spec(8192, 1, 128)), KvStorage::paged).page_entries, 9);
}

TEST(Traffic, ASharedPrefixIsReadOncePerSequenceLogicallyAndOnceInMemory) {
  WorkloadSpec spec = decode_spec(3000, 8, 0);
  spec.kv_cache.allocation = PageAllocation::shared_prefix;
  spec.kv_cache.shared_prefix = SharedPrefixSpec{2000, 4};  // 125 pages of 16 shared per group
  const Batch b = generate_batch(spec);
  const MinimumTraffic t = minimum_traffic(b, KvStorage::paged);
  EXPECT_EQ(t.kv_rows, int64_t(8) * 3001 * 8);
  // Two groups of 4: the 2000 shared rows once per group, the 1001 private rows per sequence.
  EXPECT_EQ(t.unique_kv_rows, (int64_t(2) * 2000 + int64_t(8) * 1001) * 8);
  EXPECT_LT(t.unique_bytes(), t.bytes());
  // Gathered into per-sequence buffers, nothing is shared.
  EXPECT_EQ(minimum_traffic(b, KvStorage::contiguous).unique_kv_rows, t.kv_rows);
}

int64_t traffic_elapsed_ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

TEST(Traffic, CountsA128kPrefillFast) {
  WorkloadSpec spec = decode_spec(0, 1, 0);
  spec.sequences[0].query_len = LengthSpec(131072);
  for (const int64_t window : {int64_t(0), int64_t(4096)}) {
    spec.model.sliding_window.reset();
    if (window > 0) spec.model.sliding_window = window;
    const Batch b = generate_batch(spec);
    const auto start = std::chrono::steady_clock::now();
    const MinimumTraffic t = minimum_traffic(b, KvStorage::paged);
    EXPECT_LT(traffic_elapsed_ms(start), 200) << "window " << window;
    EXPECT_EQ(t.kv_rows, int64_t(131072) * 8);  // every key is some query's
  }
  // Block-sparse: per kept block of each of the 32 q heads' rows.
  spec.model.sliding_window.reset();
  BlockSparseSpec bs;
  bs.block_size = 64;
  bs.local_blocks = 16;
  bs.vertical_stride = 8;
  spec.mask.block_sparse = bs;
  const Batch b = generate_batch(spec);
  const auto start = std::chrono::steady_clock::now();
  const MinimumTraffic t = minimum_traffic(b, KvStorage::paged);
  EXPECT_LT(traffic_elapsed_ms(start), 1000);
  EXPECT_GT(t.kv_rows, 0);
  EXPECT_LE(t.kv_rows, int64_t(131072) * 8);
}

}  // namespace
}  // namespace attn
