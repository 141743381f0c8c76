// How the tensor-core decode kernels (paged_decode.sm80_mma, paged_decode.sm90_tma) deal a
// batch's keys to CTAs: plain host code, chosen from the lengths, the KV heads and the GPU's CTA
// slots, and described in words for the measurement record.
//
// A segment is a range of one sequence's compute blocks (a chunk); a CTA walks its segments in
// order (for each KV head: the grid is ctas() x num_kv_heads). A sequence cut into several chunks
// keeps their partial results in rows seq_partial[s] .. + seq_splits[s] - 1, merged by the last of
// its CTAs to finish.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/batch.hpp"

namespace attn {

enum class DecodeSchedule {
  // fixed_splits > 0: every sequence in that many equal splits, one CTA each (empty ones too).
  fixed,
  // One chunk per CTA; the split counts are those of the candidate per-CTA share (the ones that
  // fill 1 to 8 waves, the longest sequence's halves to eighths, or none) whose CTAs, dealt longest
  // first to the least loaded SM, leave the busiest SM least to do, a per-CTA start-up cost
  // included (and, for the longest sequence's splits, its longest chunk at one CTA's pace).
  per_sequence,
  // Stream-K: one wave of CTAs (the slots the KV heads leave), each given the same number of
  // blocks from the sequences laid end to end, so a CTA may finish one sequence and start the
  // next; no CTA waits for a second wave and none idles at the end.
  balanced,
  // One wave of CTAs: the per-sequence candidates that fit it (one chunk per CTA) against
  // balanced shares, whichever the estimate favours (a tie keeps whole chunks). Balanced shares cut
  // sequences at arbitrary blocks, so most CTAs walk two segments and most sequences are merged;
  // where chunks fit one wave with enough CTAs per SM to stream, they won by 3-11% on an H200
  // (GQA 7 and 16 at d128, MQA, head dim 64); per-sequence plans of more than one wave, or with
  // too few CTAs per SM, lost by up to 25% (GQA 4 at d256: 353 us against 282).
  automatic,
};

struct DecodeWorkPlan {
  std::vector<int32_t> seq_splits;    // [num_seqs] chunks of each sequence, 1..max_splits
  std::vector<int32_t> seq_partial;   // [num_seqs] first partial-result row of each sequence
  std::vector<int32_t> work;          // [segments, 4] (sequence, chunk, first block, end block)
  std::vector<int32_t> cta_work;      // [ctas + 1] each CTA's segments: work rows [c, c + 1)
  int64_t partial_rows = 0;           // chunks of sequences with more than one
  int64_t estimated_block_times = 0;  // the busiest SM's work (per_sequence, balanced, automatic)
  std::string description;            // e.g. "balanced: 396 CTAs (3 per SM), 42 blocks each"
  int ctas() const { return int(cta_work.size()) - 1; }
  int segments() const { return int(work.size() / 4); }
};

struct DecodeWorkInputs {
  int block_tokens = 64;
  // Blocks aligned to block_tokens from key 0 (sm90_tma's TMA boxes) instead of from the first
  // visible key.
  bool aligned_blocks = false;
  int fixed_splits = 0;  // > 0: DecodeSchedule::fixed
  int sm_count = 1;
  int resident_per_sm = 1;  // CTAs of the kernel one SM holds at once
  int max_splits = 128;     // chunks one sequence may have (the merge's shared memory)
  // CTAs an SM must hold at once to stream at its full rate (ctas_to_fill_sm); with fewer, the
  // per-sequence schedule counts its time as that much longer. 1: one CTA keeps enough in flight.
  int saturating_per_sm = 1;
};

// The CTAs of a cp.async kernel one SM needs at once to keep its loads in flight: 128 KiB of K/V
// stages (about half of them in flight: Little's law at an H200 SM's share of the bandwidth and
// the loads' latency under load) and 8 warps, at most the resident count. On an H200
// (paged_decode.sm80_mma) one CTA of 64 KiB stages per SM ran MQA 128 x 8192 at 191 us against
// 142-148 with two or more; two CTAs of 2 warps ran GQA 4 d256 at 330 us against 292 with three.
int ctas_to_fill_sm(int shared_bytes, int warps, int resident_per_sm);

// Compute blocks of each sequence's visible keys (the window's, when it hides some).
std::vector<int64_t> decode_visible_blocks(const Batch& batch, int block_tokens,
                                           bool aligned_blocks);

DecodeWorkPlan plan_decode_work(const Batch& batch, DecodeSchedule schedule,
                                const DecodeWorkInputs& inputs);

}  // namespace attn
