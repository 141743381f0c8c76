#include "workloads/page_allocation.hpp"

#include <algorithm>
#include <numeric>

#include "workloads/counter_rng.hpp"

namespace attn {

namespace {

// A uniform integer in [0, bound) from 64 random bits (Lemire's multiply-shift). The bias is at
// most bound / 2^64 (< 2^-33 here): immaterial for page ids, and it keeps one draw per step.
uint64_t below(uint64_t bits, uint64_t bound) {
  return uint64_t((static_cast<unsigned __int128>(bits) * bound) >> 64);
}

// Fisher-Yates over [0, n): step i (from n-1 down to 1) swaps i with a draw in [0, i], the draw
// being counter i of the shuffle stream. Portable: the same permutation on every platform.
std::vector<int32_t> shuffled_pages(int64_t n, uint64_t seed) {
  std::vector<int32_t> pages(static_cast<size_t>(n));
  std::iota(pages.begin(), pages.end(), 0);
  const unsigned long long key = stream_key(seed, kPageShuffleStream);
  for (int64_t i = n - 1; i > 0; --i) {
    const uint64_t j = below(counter_bits(key, uint64_t(i)), uint64_t(i) + 1);
    std::swap(pages[size_t(i)], pages[size_t(j)]);
  }
  return pages;
}

// A FIFO free list over a fixed ring: allocation takes the front, a freed page joins the back
// (vLLM's free block queue does the same, so recently freed pages are reused last).
class FreeList {
 public:
  explicit FreeList(int64_t pages) : ring_(size_t(pages)), size_(pages) {
    std::iota(ring_.begin(), ring_.end(), 0);
  }
  int64_t size() const { return size_; }
  int32_t take() {
    const int32_t page = ring_[size_t(head_)];
    head_ = (head_ + 1) % int64_t(ring_.size());
    --size_;
    return page;
  }
  void give_back(int32_t page) {
    ring_[size_t((head_ + size_) % int64_t(ring_.size()))] = page;
    ++size_;
  }
  std::vector<int32_t> in_order() const {
    std::vector<int32_t> out(static_cast<size_t>(size_));
    for (int64_t i = 0; i < size_; ++i)
      out[size_t(i)] = ring_[size_t((head_ + i) % int64_t(ring_.size()))];
    return out;
  }

 private:
  std::vector<int32_t> ring_;
  int64_t head_ = 0;
  int64_t size_ = 0;
};

}  // namespace

std::vector<int32_t> free_list_after_serving(int64_t pages, uint64_t seed, int64_t page_moves) {
  FreeList free(pages);
  std::vector<std::vector<int32_t>> live;  // each running request's pages, in token order
  const unsigned long long key = stream_key(seed, kServingHistoryStream);
  // Requests of up to pages / 16 pages (at most 256: a 4k-token prompt in 16-token pages).
  const uint64_t largest_request = uint64_t(std::clamp<int64_t>(pages / 16, 1, 256));
  int64_t moved = 0;  // pages taken or given back so far
  auto finish = [&](uint64_t bits) {
    const size_t r = size_t(below(bits, live.size()));
    moved += int64_t(live[r].size());
    // Freed tail first, as vLLM does: the request's last pages are reused first.
    for (auto it = live[r].rbegin(); it != live[r].rend(); ++it) free.give_back(*it);
    std::swap(live[r], live.back());
    live.pop_back();
  };
  int64_t step = 0;
  for (; moved < page_moves; ++step) {
    const uint64_t index = uint64_t(step) * 3;
    const uint64_t action = below(counter_bits(key, index), 4);
    const uint64_t bits = counter_bits(key, index + 1);
    const bool crowded = free.size() < pages / 4;
    if (!live.empty() && (action == 3 || crowded)) {  // a request finishes
      finish(bits);
    } else if (action == 2 && !live.empty() && free.size() > 0) {  // one grows by a page
      live[size_t(below(bits, live.size()))].push_back(free.take());
      ++moved;
    } else {  // a request arrives with its prompt's pages
      const int64_t want = 1 + int64_t(below(counter_bits(key, index + 2), largest_request));
      moved += want;
      if (free.size() < want) continue;
      std::vector<int32_t> request;
      for (int64_t i = 0; i < want; ++i) request.push_back(free.take());
      live.push_back(std::move(request));
    }
  }
  // The history ends with every request finished, in a seeded order.
  for (uint64_t i = 0; !live.empty(); ++i) finish(counter_bits(key, uint64_t(step) * 3 + i));
  return free.in_order();
}

std::vector<int32_t> page_order(PageAllocation allocation, int64_t pool_pages, uint64_t seed) {
  const int64_t n = pool_pages + 1;  // with the poison page
  switch (allocation) {
    case PageAllocation::shuffled:
      return shuffled_pages(n, seed);
    case PageAllocation::fragmented:
      // Each page taken and freed about four times scatters the pool; bounded so that a huge
      // pool stays quick.
      return free_list_after_serving(n, seed, std::min<int64_t>(8 * n, int64_t(1) << 24));
    case PageAllocation::sequential:
    case PageAllocation::shared_prefix:
      break;
  }
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

}  // namespace attn
