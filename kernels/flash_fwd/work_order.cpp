#include "kernels/flash_fwd/work_order.hpp"

#include <algorithm>
#include <functional>
#include <queue>

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

struct Item {
  int32_t seq, m_block, q_head;
  int64_t key_tiles;
};

// Head-major for the first num_q_heads - tail heads; the last `tail` heads' items after them,
// heaviest first over all of them (a stable sort: equal weights keep head-major order, so the
// items in flight still read few heads).
std::vector<Item> ordered(const std::vector<QueryTile>& tiles, int num_q_heads, int tail) {
  std::vector<Item> items;
  items.reserve(tiles.size() * size_t(num_q_heads));
  for (int h = 0; h < num_q_heads; ++h) {
    for (const QueryTile& t : tiles) items.push_back({t.seq, t.m_block, h, t.key_tiles});
  }
  const auto tail_begin = items.end() - std::ptrdiff_t(tiles.size()) * tail;
  std::stable_sort(tail_begin, items.end(),
                   [](const Item& a, const Item& b) { return a.key_tiles > b.key_tiles; });
  return items;
}

double makespan(const std::vector<Item>& items, int ctas) {
  std::vector<double> costs;
  costs.reserve(items.size());
  for (const Item& item : items) costs.push_back(double(item.key_tiles) + kItemOverheadTiles);
  return greedy_makespan(costs, ctas);
}

}  // namespace

std::vector<int32_t> flash_fwd_work_order(const std::vector<QueryTile>& tiles,
                                          const WorkOrderShape& shape, int* tail_heads) {
  const int heads = std::max(shape.num_q_heads, 1), group = std::max(shape.group, 1);
  // Candidates: head-major (no tail), and tails of 1, 2, 4, ... whole GQA groups (and all heads)
  // whose K and V fit the budget. Each costs a simulation of every item; doubling keeps them few.
  int best_tail = 0;
  double best = makespan(ordered(tiles, heads, 0), shape.ctas);
  const double budget = kTailL2Share * double(shape.l2_bytes);
  for (int groups = 1; groups * group <= heads; groups = std::min(2 * groups, heads / group)) {
    if (double(groups) * double(shape.kv_head_bytes) > budget) break;
    const double span = makespan(ordered(tiles, heads, groups * group), shape.ctas);
    if (span < best) best = span, best_tail = groups * group;
    if (groups == heads / group) break;
  }
  if (tail_heads != nullptr) *tail_heads = best_tail;
  std::vector<int32_t> out;
  out.reserve(tiles.size() * size_t(heads) * 3);
  for (const Item& item : ordered(tiles, heads, best_tail)) {
    out.push_back(item.seq);
    out.push_back(item.m_block);
    out.push_back(item.q_head);
  }
  return out;
}

}  // namespace attn
