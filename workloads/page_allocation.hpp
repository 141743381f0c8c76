// The order in which a page allocation policy hands out page ids (docs/workload.md, "Pages").
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/workload_spec.hpp"

namespace attn {

// Counter streams of the allocators; apart from the data streams (1..3) and the length streams
// (32 and up).
inline constexpr unsigned kPageShuffleStream = 16;
inline constexpr unsigned kServingHistoryStream = 17;

// Page ids in the order the batch takes them: the sequences' distinct pages are the first ones,
// in batch order, and the entry after them is the poison page. `pool_pages + 1` entries (the
// pool and the poison page), a permutation of 0..pool_pages.
//   sequential, shared_prefix's distinct pages: 0, 1, 2, ...
//   shuffled: a seeded Fisher-Yates permutation
//   fragmented: the free list a simulated serving history leaves behind
std::vector<int32_t> page_order(PageAllocation allocation, int64_t pool_pages, uint64_t seed);

// The fragmented policy's history on its own: on a pool of `pages` pages, requests arrive (taking
// pages off the front of a FIFO free list), grow by a page, and finish (giving their pages back
// to the end, last page first), chosen by the counter RNG, until `page_moves` pages have been
// taken or given back; then every request finishes. Returns the free list: all pages, scattered.
std::vector<int32_t> free_list_after_serving(int64_t pages, uint64_t seed, int64_t page_moves);

}  // namespace attn
