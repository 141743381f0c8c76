#include "workloads/batch.hpp"

#include <algorithm>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "tests/workloads/test_util.hpp"

namespace attn {
namespace {

WorkloadSpec make_spec(int page_size, PageAllocation allocation,
                       std::vector<SequenceSpec> sequences, uint64_t seed = 11) {
  WorkloadSpec spec;
  spec.name = "batch-test";
  spec.model = {8, 2, 64, DType::bf16, std::nullopt};
  spec.kv_cache = {page_size, KvLayout::nhd, allocation};
  spec.sequences = std::move(sequences);
  spec.seed = seed;
  return spec;
}

// Every structural invariant of a batch, for any spec.
void check_invariants(const Batch& b) {
  SCOPED_TRACE(canonical_json(b.spec));
  const size_t n = size_t(b.num_seqs);
  ASSERT_EQ(b.context_lens.size(), n);
  ASSERT_EQ(b.query_lens.size(), n);
  ASSERT_EQ(b.kv_lens.size(), n);
  ASSERT_EQ(b.cu_seqlens_q.size(), n + 1);
  ASSERT_EQ(b.cu_seqlens_kv.size(), n + 1);
  ASSERT_EQ(b.page_indptr.size(), n + 1);
  ASSERT_EQ(b.last_page_len.size(), n);
  EXPECT_EQ(b.cu_seqlens_q[0], 0);
  EXPECT_EQ(b.cu_seqlens_kv[0], 0);
  EXPECT_EQ(b.page_indptr[0], 0);
  const int64_t ps = b.page_size;
  for (size_t s = 0; s < n; ++s) {
    EXPECT_EQ(b.kv_lens[s], b.context_lens[s] + b.query_lens[s]);
    EXPECT_EQ(b.cu_seqlens_q[s + 1] - b.cu_seqlens_q[s], b.query_lens[s]);
    EXPECT_EQ(b.cu_seqlens_kv[s + 1] - b.cu_seqlens_kv[s], b.kv_lens[s]);
    const int64_t pages = b.page_indptr[s + 1] - b.page_indptr[s];
    EXPECT_EQ(pages, (b.kv_lens[s] + ps - 1) / ps);
    if (pages == 0) {
      EXPECT_EQ(b.last_page_len[s], 0);
    } else {
      EXPECT_GE(b.last_page_len[s], 1);
      EXPECT_LE(b.last_page_len[s], ps);
      EXPECT_EQ((pages - 1) * ps + b.last_page_len[s], b.kv_lens[s]);
    }
  }
  EXPECT_EQ(b.total_q, b.cu_seqlens_q.back());
  EXPECT_EQ(b.total_kv, b.cu_seqlens_kv.back());

  // Every page in [0, num_pages) is used exactly once: by one sequence, or as the poison page.
  ASSERT_EQ(int64_t(b.page_indices.size()), int64_t(b.page_indptr.back()));
  EXPECT_EQ(b.num_pages, int64_t(b.page_indices.size()) + 1);
  std::vector<int> uses(size_t(b.num_pages), 0);
  for (int32_t page : b.page_indices) {
    ASSERT_GE(page, 0);
    ASSERT_LT(page, b.num_pages);
    ++uses[size_t(page)];
  }
  ASSERT_GE(b.poison_page, 0);
  ASSERT_LT(b.poison_page, b.num_pages);
  EXPECT_EQ(uses[size_t(b.poison_page)], 0) << "the poison page belongs to a sequence";
  ++uses[size_t(b.poison_page)];
  EXPECT_TRUE(std::all_of(uses.begin(), uses.end(), [](int u) { return u == 1; }));

  // The padded table holds each sequence's CSR row, then the poison page.
  int max_pages = 0;
  for (size_t s = 0; s < n; ++s) {
    max_pages = std::max(max_pages, b.page_indptr[s + 1] - b.page_indptr[s]);
  }
  EXPECT_EQ(b.max_pages_per_seq, max_pages);
  const std::vector<int32_t> block_table = padded_block_table(b);
  ASSERT_EQ(block_table.size(), n * size_t(b.max_pages_per_seq));
  for (size_t s = 0; s < n; ++s) {
    const int32_t row_pages = b.page_indptr[s + 1] - b.page_indptr[s];
    for (int32_t k = 0; k < b.max_pages_per_seq; ++k) {
      const int32_t entry = block_table[s * size_t(b.max_pages_per_seq) + size_t(k)];
      if (k < row_pages) {
        EXPECT_EQ(entry, b.page_indices[size_t(b.page_indptr[s] + k)]) << s << "," << k;
      } else {
        EXPECT_EQ(entry, b.poison_page) << s << "," << k;
      }
    }
  }

  // Each new token's slot is the last query_len positions, through the block table.
  ASSERT_EQ(int64_t(b.slot_mapping.size()), b.total_q);
  std::set<int64_t> slots;
  for (size_t s = 0; s < n; ++s) {
    for (int64_t i = 0; i < b.query_lens[s]; ++i) {
      const int64_t position = b.context_lens[s] + i;
      const int64_t slot = b.slot_mapping[size_t(b.cu_seqlens_q[s] + i)];
      const int32_t page = block_table[s * size_t(b.max_pages_per_seq) + size_t(position / ps)];
      EXPECT_EQ(slot / ps, page);
      EXPECT_EQ(slot % ps, position % ps);
      EXPECT_NE(slot / ps, b.poison_page);
      EXPECT_TRUE(slots.insert(slot).second) << "two new tokens share slot " << slot;
    }
  }
}

TEST(BatchTest, ExpandsSequencesInOrderWithPrefixSums) {
  Batch b = generate_batch(
      make_spec(16, PageAllocation::shuffled, {{5, 2, 2}, {0, 1, 1}, {31, 3, 1}, {100, 1, 3}}));
  check_invariants(b);
  EXPECT_EQ(b.num_seqs, 7);
  EXPECT_EQ(b.context_lens, (std::vector<int64_t>{5, 5, 0, 31, 100, 100, 100}));
  EXPECT_EQ(b.query_lens, (std::vector<int64_t>{2, 2, 1, 3, 1, 1, 1}));
  EXPECT_EQ(b.kv_lens, (std::vector<int64_t>{7, 7, 1, 34, 101, 101, 101}));
  EXPECT_EQ(b.cu_seqlens_q, (std::vector<int64_t>{0, 2, 4, 5, 8, 9, 10, 11}));
  EXPECT_EQ(b.cu_seqlens_kv, (std::vector<int64_t>{0, 7, 14, 15, 49, 150, 251, 352}));
  EXPECT_EQ(b.page_indptr, (std::vector<int32_t>{0, 1, 2, 3, 6, 13, 20, 27}));
  EXPECT_EQ(b.last_page_len, (std::vector<int32_t>{7, 7, 1, 2, 5, 5, 5}));
  EXPECT_EQ(b.total_q, 11);
  EXPECT_EQ(b.total_kv, 352);
  EXPECT_EQ(b.num_pages, 28);
  EXPECT_EQ(b.max_pages_per_seq, 7);
  EXPECT_FALSE(b.decode_only());
  EXPECT_EQ(b.max_query_len(), 3);
  EXPECT_EQ(b.max_kv_len(), 101);
}

TEST(BatchTest, RecordsScaleSeedAndHash) {
  WorkloadSpec spec = make_spec(16, PageAllocation::shuffled, {{10, 1, 4}}, 1234);
  Batch b = generate_batch(spec);
  EXPECT_EQ(b.spec_hash, content_hash(spec));
  EXPECT_EQ(b.data_seed, 1234u);
  EXPECT_FLOAT_EQ(b.softmax_scale, 0.125f);
  EXPECT_EQ(b.page_size, 16);
  EXPECT_TRUE(b.decode_only());
  spec.model.softmax_scale = 0.07;
  EXPECT_FLOAT_EQ(generate_batch(spec).softmax_scale, 0.07f);
}

TEST(BatchTest, LastPageLenEdgeCases) {
  // kv_len a multiple of the page size fills the last page; kv_len 1 (no context) is one token.
  Batch b = generate_batch(
      make_spec(16, PageAllocation::sequential, {{15, 1, 1}, {0, 1, 1}, {31, 1, 1}, {16, 16, 1}}));
  check_invariants(b);
  EXPECT_EQ(b.last_page_len, (std::vector<int32_t>{16, 1, 16, 16}));
  EXPECT_EQ(b.page_indptr, (std::vector<int32_t>{0, 1, 2, 4, 6}));
  // Page size 1: every page is full.
  b = generate_batch(make_spec(1, PageAllocation::shuffled, {{0, 1, 2}, {9, 3, 1}}));
  check_invariants(b);
  EXPECT_EQ(b.last_page_len, (std::vector<int32_t>{1, 1, 1}));
  EXPECT_EQ(b.page_indptr, (std::vector<int32_t>{0, 1, 2, 14}));
  EXPECT_EQ(b.num_pages, 15);
}

TEST(BatchTest, PageSizeSevenWithPrimeLengths) {
  std::vector<SequenceSpec> seqs;
  for (int64_t kv : {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47}) {
    seqs.push_back({kv - 1, 1, 1});
  }
  for (PageAllocation allocation : {PageAllocation::sequential, PageAllocation::shuffled}) {
    Batch b = generate_batch(make_spec(7, allocation, seqs));
    check_invariants(b);
    for (size_t s = 0; s < size_t(b.num_seqs); ++s) {
      const int64_t kv = b.kv_lens[s];
      EXPECT_EQ(b.page_indptr[s + 1] - b.page_indptr[s], (kv + 6) / 7) << kv;
      EXPECT_EQ(b.last_page_len[s], (kv - 1) % 7 + 1) << kv;
    }
  }
}

TEST(BatchTest, InvariantsHoldAcrossPageSizesAndAllocations) {
  const std::vector<SequenceSpec> seqs = {{0, 1, 3},     {1, 1, 1},  {254, 2, 2},
                                          {1000, 17, 1}, {63, 1, 5}, {4096, 1, 1}};
  for (int page_size : {1, 2, 3, 16, 100, 128, 256}) {
    for (PageAllocation allocation : {PageAllocation::sequential, PageAllocation::shuffled}) {
      check_invariants(generate_batch(make_spec(page_size, allocation, seqs)));
    }
  }
}

TEST(BatchTest, SlotMappingPointsAtTheNewTokens) {
  Batch b = generate_batch(make_spec(4, PageAllocation::sequential, {{6, 3, 1}, {0, 2, 1}}));
  check_invariants(b);
  // Sequence 0: kv 9 in pages 0, 1, 2; new tokens at positions 6, 7, 8.
  // Sequence 1: kv 2 in page 3; new tokens at positions 0, 1.
  EXPECT_EQ(b.slot_mapping, (std::vector<int64_t>{6, 7, 8, 12, 13}));
  EXPECT_EQ(b.poison_page, 4);
}

TEST(BatchTest, SequentialAllocationIsInOrderWithThePoisonPageLast) {
  Batch b = generate_batch(make_spec(16, PageAllocation::sequential, {{100, 1, 4}}));
  std::vector<int32_t> expected(b.page_indices.size());
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = int32_t(i);
  EXPECT_EQ(b.page_indices, expected);
  EXPECT_EQ(b.poison_page, b.num_pages - 1);
}

TEST(BatchTest, ShuffledAllocationIsAPortableSeededPermutation) {
  const std::vector<SequenceSpec> seqs = {{100, 1, 4}};
  Batch sequential = generate_batch(make_spec(16, PageAllocation::sequential, seqs));
  Batch shuffled = generate_batch(make_spec(16, PageAllocation::shuffled, seqs));
  check_invariants(shuffled);
  EXPECT_NE(shuffled.page_indices, sequential.page_indices);
  // Neighbours in a sequence are not neighbours in the pool (28 pages: some pair at least).
  int adjacent = 0;
  for (size_t i = 1; i < shuffled.page_indices.size(); ++i) {
    adjacent += shuffled.page_indices[i] == shuffled.page_indices[i - 1] + 1;
  }
  EXPECT_LT(adjacent, 5);

  // The same spec gives the same batch; another seed another permutation.
  Batch again = generate_batch(make_spec(16, PageAllocation::shuffled, seqs));
  EXPECT_EQ(again.page_indices, shuffled.page_indices);
  EXPECT_EQ(again.poison_page, shuffled.poison_page);
  EXPECT_EQ(padded_block_table(again), padded_block_table(shuffled));
  EXPECT_EQ(again.slot_mapping, shuffled.slot_mapping);
  Batch other = generate_batch(make_spec(16, PageAllocation::shuffled, seqs, 12));
  EXPECT_NE(other.page_indices, shuffled.page_indices);

  // Pinned: the permutation is part of what a result means; it must not change across platforms
  // or standard libraries.
  Batch small = generate_batch(make_spec(4, PageAllocation::shuffled, {{8, 1, 2}}, 42));
  EXPECT_EQ(small.page_indices, (std::vector<int32_t>{1, 5, 4, 2, 6, 0}));
  EXPECT_EQ(small.poison_page, 3);
}

TEST(BatchTest, ThePoisonPageIsNotAlwaysLastWhenShuffled) {
  std::set<int32_t> positions;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Batch b = generate_batch(make_spec(16, PageAllocation::shuffled, {{40, 1, 3}}, seed));
    positions.insert(b.poison_page);
  }
  EXPECT_GT(positions.size(), 3u);
}

TEST(BatchTest, InvalidSpecIsAnInputError) {
  WorkloadSpec spec = make_spec(16, PageAllocation::shuffled, {{10, 1, 1}});
  spec.model.num_kv_heads = 3;
  try {
    generate_batch(spec);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), "workload \"batch-test\"");
    EXPECT_PROBLEM(e.problems(), "/model/num_kv_heads: must divide num_q_heads (8), got 3");
  }
}

}  // namespace
}  // namespace attn
