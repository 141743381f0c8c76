// Page-table properties under every allocation policy and awkward page sizes: every token has
// exactly one slot, no page is shared unless a shared prefix says so (and then exactly the prefix
// pages), padding is the poison page, slot_mapping points at the new tokens' slots, and a pool
// that is too small is refused with the number of pages needed.
#include <map>
#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "tests/workloads/test_util.hpp"
#include "workloads/batch.hpp"
#include "workloads/page_allocation.hpp"

namespace attn {
namespace {

WorkloadSpec spec_for(PageAllocation allocation, int page_size) {
  WorkloadSpec spec;
  spec.name = "pages";
  spec.model.num_q_heads = 4;
  spec.model.num_kv_heads = 2;
  spec.model.head_dim = 64;
  spec.kv_cache.page_size = page_size;
  spec.kv_cache.allocation = allocation;
  if (allocation == PageAllocation::shared_prefix) spec.kv_cache.shared_prefix = {300, 3};
  // Edge cases: zero context, length 1, primes, a last page holding one token, a chunk.
  spec.sequences = {{0, 1, 1},   {0, 7, 1},   {1, 1, 2},     {256, 1, 1},
                    {331, 1, 4}, {512, 1, 3}, {1009, 13, 2}, {256 * 3, 1, 1}};
  spec.seed = 99;
  return spec;
}

class PageTableProperties : public ::testing::TestWithParam<std::tuple<PageAllocation, int>> {};

TEST_P(PageTableProperties, EveryTokenHasExactlyOneSlot) {
  const auto [allocation, page_size] = GetParam();
  const Batch b = generate_batch(spec_for(allocation, page_size));
  ASSERT_EQ(b.page_indptr.back(), int32_t(b.page_indices.size()));
  // Who uses each (page, slot): a token of a sequence, or (for shared pages) several sequences'
  // same position, whose data comes from the prefix source.
  std::map<int64_t, std::set<int>> users;
  std::set<int32_t> all_pages;
  const std::vector<int32_t> block_table = padded_block_table(b);
  for (int s = 0; s < b.num_seqs; ++s) {
    const int64_t pages = (b.kv_lens[size_t(s)] + page_size - 1) / page_size;
    ASSERT_EQ(b.page_indptr[size_t(s) + 1] - b.page_indptr[size_t(s)], pages);
    ASSERT_EQ(b.last_page_len[size_t(s)], b.kv_lens[size_t(s)] - (pages - 1) * page_size);
    for (int64_t pos = 0; pos < b.kv_lens[size_t(s)]; ++pos) {
      const int32_t page = b.page_indices[size_t(b.page_indptr[size_t(s)] + pos / page_size)];
      ASSERT_GE(page, 0);
      ASSERT_LT(page, b.num_pages);
      ASSERT_NE(page, b.poison_page);
      ASSERT_EQ(block_table[size_t(s) * size_t(b.max_pages_per_seq) + size_t(pos / page_size)],
                page);
      users[int64_t(page) * page_size + pos % page_size].insert(s);
      all_pages.insert(page);
    }
    for (int k = int(pages); k < b.max_pages_per_seq; ++k) {
      ASSERT_EQ(block_table[size_t(s) * size_t(b.max_pages_per_seq) + size_t(k)], b.poison_page);
    }
  }
  for (const auto& [slot, seqs] : users) {
    if (seqs.size() == 1) continue;
    ASSERT_EQ(allocation, PageAllocation::shared_prefix) << "slot " << slot << " is shared";
    // Shared: only the source and sequences of its group, at positions inside their prefix.
    const int source = *seqs.begin();
    for (int s : seqs) {
      ASSERT_EQ(b.prefix_source[size_t(s)], source);
      const int64_t page = slot / page_size;
      const int32_t first = b.page_indptr[size_t(s)];
      bool in_prefix = false;
      for (int64_t k = 0; k * page_size < b.shared_prefix_len[size_t(s)]; ++k) {
        in_prefix = in_prefix || b.page_indices[size_t(first + k)] == page;
      }
      ASSERT_TRUE(s == source || in_prefix) << "seq " << s << " shares a page outside its prefix";
    }
  }
  if (allocation != PageAllocation::shared_prefix) {
    EXPECT_EQ(all_pages.size(), b.page_indices.size()) << "a page is used twice";
    for (int s = 0; s < b.num_seqs; ++s) EXPECT_EQ(b.shared_prefix_len[size_t(s)], 0);
  }
  // slot_mapping: the slot of each new token's position.
  for (int s = 0; s < b.num_seqs; ++s) {
    for (int64_t i = 0; i < b.query_lens[size_t(s)]; ++i) {
      const int64_t pos = b.context_lens[size_t(s)] + i;
      const int32_t page = b.page_indices[size_t(b.page_indptr[size_t(s)] + pos / page_size)];
      ASSERT_EQ(b.slot_mapping[size_t(b.cu_seqlens_q[size_t(s)] + i)],
                int64_t(page) * page_size + pos % page_size);
    }
  }
  EXPECT_EQ(all_pages.count(b.poison_page), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Pages, PageTableProperties,
    ::testing::Combine(::testing::Values(PageAllocation::sequential, PageAllocation::shuffled,
                                         PageAllocation::fragmented, PageAllocation::shared_prefix),
                       ::testing::Values(1, 7, 16, 256)),
    [](const auto& info) {
      return to_string(std::get<0>(info.param)) + "_page" + std::to_string(std::get<1>(info.param));
    });

TEST(SharedPrefix, GroupsShareExactlyTheWholePrefixPages) {
  WorkloadSpec spec = spec_for(PageAllocation::shared_prefix, 16);
  spec.kv_cache.shared_prefix = {100, 4};  // 6 whole pages (96 tokens)
  spec.sequences = {{500, 1, 4}, {50, 1, 1}, {500, 1, 3}};
  const Batch b = generate_batch(spec);
  // Group 0: sequences 0..3, source 0. Group 1: 4..7, source 4, whose 50 tokens of context hold
  // only 3 whole pages, so the group shares 3.
  EXPECT_EQ(b.prefix_source, (std::vector<int32_t>{0, 0, 0, 0, 4, 4, 4, 4}));
  EXPECT_EQ(b.shared_prefix_len, (std::vector<int64_t>{0, 96, 96, 96, 0, 48, 48, 48}));
  for (int s : {1, 2, 3}) {
    for (int k = 0; k < 7; ++k) {
      EXPECT_EQ(b.page_indices[size_t(b.page_indptr[size_t(s)] + k)] == b.page_indices[size_t(k)],
                k < 6)
          << "seq " << s << " page " << k;
    }
  }
  const int64_t unshared = 4 * 32 + 4 + 3 * 32;
  EXPECT_EQ(b.num_pages, unshared - 3 * 6 - 3 * 3 + 1);
}

TEST(PoolCapacity, TooSmallAPoolIsRefusedWithThePagesNeeded) {
  WorkloadSpec spec = spec_for(PageAllocation::shuffled, 16);
  spec.sequences = {{100, 1, 2}};  // 7 pages each
  spec.kv_cache.num_pages = 13;
  try {
    generate_batch(spec);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_PROBLEM(e.problems(), "/kv_cache/num_pages: the batch does not fit: it needs 14 pages",
                   "the pool has 13");
  }
  spec.kv_cache.num_pages = 40;  // room to spare: the spare pages are nobody's
  const Batch b = generate_batch(spec);
  EXPECT_EQ(b.num_pages, 41);
  EXPECT_EQ(b.page_indices.size(), 14u);
}

TEST(Fragmented, PagesAreScatteredAndTheDefaultPoolIsTwiceTheNeed) {
  WorkloadSpec spec = spec_for(PageAllocation::fragmented, 16);
  spec.sequences = {{16 * 64 - 1, 1, 8}};  // 64 pages each, 512 in all
  const Batch b = generate_batch(spec);
  EXPECT_EQ(b.num_pages, 2 * 512 + 1);
  int contiguous = 0;
  for (size_t k = 1; k < b.page_indices.size(); ++k) {
    contiguous += b.page_indices[k] == b.page_indices[k - 1] + 1;
  }
  EXPECT_LT(contiguous, 256) << "the free list left by the history should not be in order";
  const std::vector<int32_t> history = free_list_after_serving(100, 5, 400);
  std::set<int32_t> distinct(history.begin(), history.end());
  EXPECT_EQ(distinct.size(), 100u);  // every page is free again, once
}

}  // namespace
}  // namespace attn
