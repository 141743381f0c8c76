#include "kernels/flash_fwd/work_order.hpp"

#include <algorithm>
#include <functional>
#include <queue>

#include "kernels/flash_fwd/sm90_wgmma_traits.hpp"

namespace attn {

double greedy_makespan(const std::vector<double>& costs, int ctas) {
  std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
  for (int c = 0; c < std::max(ctas, 1); ++c) free_at.push(0.0);
  double end = 0.0;
  for (const double cost : costs) {
    const double start = free_at.top();
    free_at.pop();
    free_at.push(start + cost);
    end = std::max(end, start + cost);
  }
  return end;
}

namespace {

// Query tile t's first row in its sequence, tiles counted from the end (QueryTilesFrom::end):
// q_len - (m + 1) tile_m, negative for a top tile that reaches above the sequence.
int first_row(const QueryTile& t, const std::vector<int64_t>& query_lens, int tile_m) {
  return int(query_lens[size_t(t.seq)] - int64_t(t.m_block + 1) * tile_m);
}

}  // namespace

std::vector<QueryTile> weigh_shared_rows(std::vector<QueryTile> tiles,
                                         const std::vector<int64_t>& query_lens, int tile_m,
                                         int warpgroups) {
  for (QueryTile& t : tiles) {
    if (flash_fwd::sm90_wgmma::shared_rows_item(first_row(t, query_lens, tile_m), int(t.key_tiles),
                                                warpgroups)) {
      t.key_tiles = (t.key_tiles + warpgroups - 1) / warpgroups;
    }
  }
  std::stable_sort(tiles.begin(), tiles.end(), [](const QueryTile& a, const QueryTile& b) {
    return a.key_tiles > b.key_tiles;
  });
  return tiles;
}

std::vector<bool> stacked_tiles(const std::vector<QueryTile>& tiles,
                                const std::vector<int64_t>& query_lens, int tile_m,
                                int warpgroups) {
  std::vector<bool> stacked;
  stacked.reserve(tiles.size());
  for (const QueryTile& t : tiles)
    stacked.push_back(
        flash_fwd::sm90_wgmma::stacked_item(first_row(t, query_lens, tile_m), warpgroups));
  return stacked;
}

namespace {

struct Item {
  int32_t seq, m_block, q_head;
  int64_t key_tiles;
};

// The (q head, sequence) pairs in head-major order: pair i is sequence i % seqs of head i / seqs.
// Head-major for every item outside the last `tail` pairs; those pairs' items after all the
// others, heaviest first over all of them (a stable sort: equal weights keep head-major order,
// so the items in flight still read few heads).
std::vector<Item> ordered(const std::vector<QueryTile>& tiles, const WorkOrderShape& shape,
                          int seqs, int64_t tail) {
  const int num_q_heads = std::max(shape.num_q_heads, 1);
  const int64_t first_tail_pair = int64_t(num_q_heads) * seqs - tail;
  std::vector<Item> items, tail_items;
  items.reserve(tiles.size() * size_t(num_q_heads));
  for (int h = 0; h < num_q_heads; ++h) {
    for (size_t i = 0; i < tiles.size(); ++i) {
      const QueryTile& t = tiles[i];
      if (!shape.stacked.empty() && shape.stacked[i] && h % shape.stack_heads != 0) continue;
      const Item item{t.seq, t.m_block, h, t.key_tiles};
      const bool in_tail = tail > 0 && int64_t(h) * seqs + t.seq >= first_tail_pair;
      (in_tail ? tail_items : items).push_back(item);
    }
  }
  std::stable_sort(tail_items.begin(), tail_items.end(),
                   [](const Item& a, const Item& b) { return a.key_tiles > b.key_tiles; });
  items.insert(items.end(), tail_items.begin(), tail_items.end());
  return items;
}

// The simulated end of the grid under each fixed item cost of kItemOverheadTiles.
std::vector<double> makespans(const std::vector<Item>& items, int ctas) {
  std::vector<double> spans, costs(items.size());
  for (const double overhead : kItemOverheadTiles) {
    for (size_t i = 0; i < items.size(); ++i) costs[i] = double(items[i].key_tiles) + overhead;
    spans.push_back(greedy_makespan(costs, ctas));
  }
  return spans;
}

// The most (q head, sequence) pairs, counted from the last, whose K and V fit `budget` bytes: a
// kv head's sequence counts once for the q heads of its GQA group (consecutive heads).
int64_t pairs_within(const WorkOrderShape& shape, int seqs, double budget) {
  const int heads = std::max(shape.num_q_heads, 1), group = std::max(shape.group, 1);
  double bytes = 0.0;
  int64_t pairs = 0;
  for (int h = heads - 1; h >= 0; --h) {
    for (int s = seqs - 1; s >= 0; --s) {
      // The group's last head, the first of it met from the end, brings the kv head's
      // sequence in.
      if (h % group == group - 1) bytes += double(shape.kv_seq_bytes[size_t(s)]);
      if (bytes > budget) return pairs;
      ++pairs;
    }
  }
  return pairs;
}

}  // namespace

std::vector<int32_t> flash_fwd_work_order(const std::vector<QueryTile>& tiles,
                                          const WorkOrderShape& shape, int64_t* tail_pairs) {
  const int heads = std::max(shape.num_q_heads, 1);
  const int seqs = int(shape.kv_seq_bytes.size());
  // Candidates: head-major (no tail), and tails of up to kTailCandidates evenly spaced pair
  // counts within the L2 budget. Each costs a simulation of every item.
  // A candidate's score: the sum over the fixed costs of its end relative to head-major's.
  const std::vector<double> head_major = makespans(ordered(tiles, shape, seqs, 0), shape.ctas);
  int64_t best_tail = 0;
  double best = double(head_major.size());
  const double share = shape.prefer_long_tail ? kLongTailL2Share : kTailL2Share;
  const int64_t most = pairs_within(shape, seqs, share * double(shape.l2_bytes));
  const int64_t step = std::max<int64_t>(1, (most + kTailCandidates - 1) / kTailCandidates);
  for (int64_t tail = step; tail <= most; tail += step) {
    const std::vector<double> spans = makespans(ordered(tiles, shape, seqs, tail), shape.ctas);
    double score = 0.0;
    for (size_t o = 0; o < spans.size(); ++o) score += spans[o] / head_major[o];
    if (score < best || (shape.prefer_long_tail && score <= best)) best = score, best_tail = tail;
  }
  if (tail_pairs != nullptr) *tail_pairs = best_tail;
  std::vector<int32_t> out;
  out.reserve(tiles.size() * size_t(heads) * 3);
  for (const Item& item : ordered(tiles, shape, seqs, best_tail)) {
    out.push_back(item.seq);
    out.push_back(item.m_block);
    out.push_back(item.q_head);
  }
  return out;
}

}  // namespace attn
