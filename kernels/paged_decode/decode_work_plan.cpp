#include "kernels/paged_decode/decode_work_plan.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>

#include <string>

namespace attn {

namespace {

// A CTA's fixed cost in compute blocks' worth of time: the prologue's first loads, Q, and the
// epilogue's merge and writes, which no other work of that CTA hides.
constexpr int64_t kCtaStartupBlocks = 2;

// Numbers in the plan's description.
std::string str(int64_t n) {
  return std::to_string(n);
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// CTAs the GPU holds at once.
int64_t cta_slots(const DecodeWorkInputs& in) {
  return int64_t(std::max(1, in.sm_count)) * std::max(1, in.resident_per_sm);
}

// One chunk per CTA, CTAs longest first (ties keep sequence order).
struct Chunk {
  int32_t seq, chunk;
  int64_t begin, end;
};

void add_chunks(const std::vector<int64_t>& blocks, const std::vector<int32_t>& splits,
                std::vector<Chunk>& out) {
  for (size_t s = 0; s < blocks.size(); ++s) {
    const int64_t n = blocks[s], per = ceil_div(n, splits[s]);
    for (int32_t k = 0; k < splits[s]; ++k) {
      const int64_t begin = std::min(n, k * per);
      out.push_back({int32_t(s), k, begin, std::min(n, begin + per)});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Chunk& a, const Chunk& b) {
    return a.end - a.begin > b.end - b.begin;
  });
}

// When the busiest SM finishes, in blocks' worth of time, with CTAs of these costs (each once per
// KV head; a CTA's blocks plus kCtaStartupBlocks per segment) dealt in list order to the SM with
// the least work so far. Decode is bound by memory: an SM streams its CTAs' blocks at about the
// same rate however many of them it holds, as long as it holds `saturating` of them (below that,
// proportionally slower), so the time is the SM's total.
int64_t greedy_makespan(const std::vector<int64_t>& cta_costs, int64_t kv_heads, int64_t sms,
                        int64_t saturating) {
  using Sm = std::pair<int64_t, int64_t>;  // (blocks' worth of work, CTAs)
  std::priority_queue<Sm, std::vector<Sm>, std::greater<Sm>> load;
  for (int64_t i = 0; i < sms; ++i) load.push({0, 0});
  for (const int64_t cost : cta_costs) {
    for (int64_t h = 0; h < kv_heads; ++h) {
      Sm sm = load.top();
      load.pop();
      sm.first += cost;
      ++sm.second;
      load.push(sm);
    }
  }
  int64_t makespan = 0;
  for (; !load.empty(); load.pop()) {
    const auto [work, ctas] = load.top();
    makespan = std::max(makespan, ctas > 0 && ctas < saturating ? work * saturating / ctas : work);
  }
  return makespan;
}

std::vector<int64_t> chunk_costs(const std::vector<Chunk>& chunks) {
  std::vector<int64_t> costs;
  costs.reserve(chunks.size());
  for (const Chunk& c : chunks) costs.push_back(c.end - c.begin + kCtaStartupBlocks);
  return costs;
}

// When the longest chunk's CTA finishes if it streams only its share of its SM's rate (1 /
// resident of it: an SM holds that many CTAs to keep enough loads in flight). Equal splits of
// the longest sequence are judged by this too: they leave an SM fewer, longer CTAs than a
// wave-filling share does, and on an H200 8 sequences of 513 blocks over 4 KV heads cut in four
// (128 CTAs on 528 slots) took 117.6 us against 88.1 in 17ths (544 CTAs), a lognormal batch's
// longest in three 979.7 against 746.2, which the SMs' totals alone rank the other way.
int64_t lone_chunk_makespan(const std::vector<Chunk>& chunks, int64_t resident) {
  int64_t longest = 0;
  for (const Chunk& c : chunks) longest = std::max(longest, c.end - c.begin);
  return longest * resident + kCtaStartupBlocks;
}

void set_partial_rows(DecodeWorkPlan& plan) {
  plan.seq_partial.assign(plan.seq_splits.size(), 0);
  plan.partial_rows = 0;
  for (size_t s = 0; s < plan.seq_splits.size(); ++s) {
    plan.seq_partial[s] = int32_t(plan.partial_rows);
    if (plan.seq_splits[s] > 1) plan.partial_rows += plan.seq_splits[s];
  }
}

void one_chunk_per_cta(const std::vector<Chunk>& chunks, DecodeWorkPlan& plan) {
  plan.cta_work.push_back(0);
  for (const Chunk& c : chunks) {
    plan.work.insert(plan.work.end(), {c.seq, c.chunk, int32_t(c.begin), int32_t(c.end)});
    plan.cta_work.push_back(int32_t(plan.work.size() / 4));
  }
}

DecodeWorkPlan fixed_plan(const std::vector<int64_t>& blocks, int splits) {
  DecodeWorkPlan plan;
  plan.seq_splits.assign(blocks.size(), int32_t(splits));
  std::vector<Chunk> chunks;
  add_chunks(blocks, plan.seq_splits, chunks);
  one_chunk_per_cta(chunks, plan);
  plan.description =
      "fixed: " + str(splits) + " splits per sequence, " + str(plan.ctas()) + " CTAs per KV head";
  return plan;
}

// The best candidate of at most max_ctas CTAs per KV head; none (no CTAs) if every one has more.
DecodeWorkPlan per_sequence_plan(const std::vector<int64_t>& blocks, int64_t kv_heads,
                                 const DecodeWorkInputs& in, int64_t max_ctas = INT64_MAX) {
  const int64_t slots = cta_slots(in);
  const int64_t total = std::accumulate(blocks.begin(), blocks.end(), int64_t(0));
  const int64_t longest = blocks.empty() ? 0 : *std::max_element(blocks.begin(), blocks.end());
  const int64_t least_share = std::max<int64_t>(2, ceil_div(longest, in.max_splits));
  DecodeWorkPlan best;
  int64_t best_makespan = INT64_MAX, best_waves = 0;
  // Candidate shares: the one that fills each of 1..8 waves, the longest sequence's halves,
  // thirds, ... eighths (a wave-filling share one block short of half of it would cut every
  // sequence of the same length in three), and no split at all.
  // (share, waves; -k: the longest sequence in k splits, -1 whole sequences)
  std::vector<std::pair<int64_t, int64_t>> shares;
  for (int64_t waves : {1, 2, 3, 4, 6, 8}) {
    shares.push_back({ceil_div(total * kv_heads, waves * slots), waves});
  }
  for (int64_t k = 8; k >= 1; --k)
    shares.push_back({std::max<int64_t>(1, ceil_div(longest, k)), -k});
  for (auto [share, waves] : shares) {
    share = std::max(share, least_share);
    DecodeWorkPlan plan;
    plan.seq_splits.reserve(blocks.size());
    for (int64_t n : blocks) {
      plan.seq_splits.push_back(int32_t(std::clamp<int64_t>(ceil_div(n, share), 1, in.max_splits)));
    }
    std::vector<Chunk> chunks;
    add_chunks(blocks, plan.seq_splits, chunks);
    if (int64_t(chunks.size()) > max_ctas) continue;
    int64_t makespan = greedy_makespan(chunk_costs(chunks), kv_heads, std::max(1, in.sm_count),
                                       std::max(1, in.saturating_per_sm));
    if (waves < -1)
      makespan = std::max(makespan, lone_chunk_makespan(chunks, std::max(1, in.resident_per_sm)));
    if (makespan < best_makespan) {
      best_makespan = makespan;
      best_waves = waves;
      one_chunk_per_cta(chunks, plan);
      best = std::move(plan);
    }
  }
  if (best.cta_work.empty()) return best;
  best.estimated_block_times = best_makespan;
  const int64_t split = std::count_if(best.seq_splits.begin(), best.seq_splits.end(),
                                      [](int32_t s) { return s > 1; });
  best.description =
      "per sequence: " + str(best.ctas()) + " CTAs per KV head on " + str(slots) + " slots (" +
      str(in.resident_per_sm) + " per SM" +
      (in.saturating_per_sm > 1 ? ", " + str(in.saturating_per_sm) + " needed to stream"
                                : std::string()) +
      "), " + str(split) + " of " + str(int64_t(blocks.size())) + " sequences split (" +
      (best_waves > 0     ? "share for " + str(best_waves) + " waves"
       : best_waves == -1 ? std::string("whole sequences")
                          : "share of the longest / " + str(-best_waves)) +
      "), estimated " + str(best_makespan) + " block-times";
  return best;
}

DecodeWorkPlan balanced_plan(const std::vector<int64_t>& blocks, int64_t kv_heads,
                             const DecodeWorkInputs& in) {
  const int64_t slots = cta_slots(in);
  const int64_t ctas = std::max<int64_t>(1, slots / kv_heads);
  const int64_t total = std::accumulate(blocks.begin(), blocks.end(), int64_t(0));
  const int64_t longest = blocks.empty() ? 0 : *std::max_element(blocks.begin(), blocks.end());
  // A sequence laid across CTAs spans at most ceil(n / share) + 1 of them.
  const int64_t share = std::max(
      {ceil_div(total, ctas), int64_t(2), ceil_div(longest, std::max(1, in.max_splits - 1))});
  DecodeWorkPlan plan;
  plan.seq_splits.assign(blocks.size(), 0);
  plan.cta_work.push_back(0);
  int64_t room = share;
  for (size_t s = 0; s < blocks.size(); ++s) {
    const int64_t n = blocks[s];
    int64_t pos = 0;
    do {
      if (room == 0) {
        plan.cta_work.push_back(int32_t(plan.work.size() / 4));
        room = share;
      }
      const int64_t take = std::min(n - pos, room);
      plan.work.insert(plan.work.end(),
                       {int32_t(s), plan.seq_splits[s]++, int32_t(pos), int32_t(pos + take)});
      pos += take;
      room -= take;
    } while (pos < n);
  }
  plan.cta_work.push_back(int32_t(plan.work.size() / 4));
  const int64_t split = std::count_if(plan.seq_splits.begin(), plan.seq_splits.end(),
                                      [](int32_t c) { return c > 1; });
  plan.description = "balanced: " + str(plan.ctas()) + " CTAs per KV head x " + str(kv_heads) +
                     " KV heads on " + str(slots) + " slots (" + str(in.resident_per_sm) +
                     " per SM), " + str(share) + " blocks of " + str(in.block_tokens) +
                     " keys each, " + str(plan.segments()) + " segments, " + str(split) + " of " +
                     str(int64_t(blocks.size())) + " sequences split";
  std::vector<int64_t> costs;
  for (int c = 0; c < plan.ctas(); ++c) {
    int64_t cost = 0;
    for (int32_t w = plan.cta_work[size_t(c)]; w < plan.cta_work[size_t(c) + 1]; ++w)
      cost += plan.work[size_t(4 * w + 3)] - plan.work[size_t(4 * w + 2)] + kCtaStartupBlocks;
    costs.push_back(cost);
  }
  plan.estimated_block_times =
      greedy_makespan(costs, kv_heads, std::max(1, in.sm_count), std::max(1, in.saturating_per_sm));
  return plan;
}

// One wave either way: the per-sequence candidates that fit it, against balanced shares, by their
// estimates (a tie keeps whole chunks: no CTA walks two segments).
DecodeWorkPlan automatic_plan(const std::vector<int64_t>& blocks, int64_t kv_heads,
                              const DecodeWorkInputs& in) {
  DecodeWorkPlan balanced = balanced_plan(blocks, kv_heads, in);
  DecodeWorkPlan chunks = per_sequence_plan(blocks, kv_heads, in, cta_slots(in) / kv_heads);
  const bool whole =
      !chunks.cta_work.empty() && chunks.estimated_block_times <= balanced.estimated_block_times;
  DecodeWorkPlan& chosen = whole ? chunks : balanced;
  const std::string other =
      whole ? "balanced shares: estimated " + str(balanced.estimated_block_times)
            : (chunks.cta_work.empty()
                   ? std::string("no per-sequence plan fits one wave")
                   : "per sequence in one wave: estimated " + str(chunks.estimated_block_times)) +
                  "; these " + str(balanced.estimated_block_times);
  chosen.description = "automatic, " + chosen.description + " (" + other + ")";
  return std::move(chosen);
}

}  // namespace

int ctas_to_fill_sm(int shared_bytes, int warps, int resident_per_sm) {
  constexpr int kStageBytes = 128 * 1024, kWarps = 8;
  const int by_bytes = int(ceil_div(kStageBytes, std::max(1, shared_bytes)));
  const int by_warps = int(ceil_div(kWarps, std::max(1, warps)));
  return std::clamp(std::max(by_bytes, by_warps), 1, std::max(1, resident_per_sm));
}

std::vector<int64_t> decode_visible_blocks(const Batch& batch, int block_tokens,
                                           bool aligned_blocks) {
  std::vector<int64_t> blocks(size_t(batch.num_seqs));
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int64_t kv_len = batch.kv_lens[size_t(s)];
    int64_t first = 0;
    if (batch.sliding_window > 0 && kv_len > batch.sliding_window) {
      first = kv_len - batch.sliding_window;
    }
    blocks[size_t(s)] = aligned_blocks ? ceil_div(kv_len, block_tokens) - first / block_tokens
                                       : ceil_div(kv_len - first, block_tokens);
  }
  return blocks;
}

DecodeWorkPlan plan_decode_work(const Batch& batch, DecodeSchedule schedule,
                                const DecodeWorkInputs& inputs) {
  const std::vector<int64_t> blocks =
      decode_visible_blocks(batch, inputs.block_tokens, inputs.aligned_blocks);
  const int64_t kv_heads = std::max(1, batch.spec.model.num_kv_heads);
  DecodeWorkPlan plan;
  if (inputs.fixed_splits > 0 || schedule == DecodeSchedule::fixed) {
    plan = fixed_plan(blocks, std::max(1, inputs.fixed_splits));
  } else if (schedule == DecodeSchedule::per_sequence) {
    plan = per_sequence_plan(blocks, kv_heads, inputs);
  } else if (schedule == DecodeSchedule::automatic) {
    plan = automatic_plan(blocks, kv_heads, inputs);
  } else {
    plan = balanced_plan(blocks, kv_heads, inputs);
  }
  set_partial_rows(plan);
  return plan;
}

}  // namespace attn
