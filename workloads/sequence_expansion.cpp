// expand_sequences: the concrete lengths of every sequence of a spec (workload_spec.hpp).

#include <functional>

#include <algorithm>

#include "workloads/counter_rng.hpp"
#include "workloads/length_sampling.hpp"
#include "workloads/workload_spec.hpp"

namespace attn {

namespace {

// A trace row caught in one phase of serving; `key` and `draw` give the seeded progress.
SequenceLengths trace_lengths(const TraceSpec& trace, int64_t prompt, int64_t output, uint64_t key,
                              uint64_t draw) {
  switch (trace.phase) {
    case TracePhase::prefill:
      return {0, prompt};
    case TracePhase::decode:
      // Some of the output is generated already: 0 .. output - 1 tokens, then this step's one.
      return {prompt + int64_t(counter_below(key, draw * kCountersPerDraw, uint64_t(output))), 1};
    case TracePhase::chunked_prefill: {
      const int64_t chunk = std::max<int64_t>(1, trace.chunk);
      const int64_t chunks = (prompt + chunk - 1) / chunk;
      const int64_t done =
          chunk * int64_t(counter_below(key, draw * kCountersPerDraw, uint64_t(chunks)));
      return {done, std::min(chunk, prompt - done)};
    }
  }
  return {0, prompt};
}

}  // namespace

void for_each_sequence(const WorkloadSpec& spec,
                       const std::function<void(const SequenceLengths&)>& visit) {
  for (size_t e = 0; e < spec.sequences.size(); ++e) {
    const SequenceSpec& seq = spec.sequences[e];
    const uint64_t context_key = stream_key(spec.seed, kLengthStreamBase + 2 * unsigned(e));
    const uint64_t query_key = stream_key(spec.seed, kLengthStreamBase + 2 * unsigned(e) + 1);
    if (seq.trace) {
      const TraceSpec& trace = *seq.trace;
      const int64_t rows = int64_t(trace.rows.size());
      const int64_t first = std::min(trace.first, rows);
      const int64_t last = trace.count ? std::min(rows, first + *trace.count) : rows;
      for (int64_t r = first; r < last; ++r) {
        const auto& [prompt, output] = trace.rows[size_t(r)];
        visit(trace_lengths(trace, prompt, output, context_key, uint64_t(r - first)));
      }
      continue;
    }
    for (int c = 0; c < seq.count; ++c) {
      visit({draw_length(seq.context_len, context_key, uint64_t(c)),
             draw_length(seq.query_len, query_key, uint64_t(c))});
    }
  }
}

std::vector<SequenceLengths> expand_sequences(const WorkloadSpec& spec) {
  std::vector<SequenceLengths> out;
  for_each_sequence(spec, [&](const SequenceLengths& lengths) { out.push_back(lengths); });
  return out;
}

}  // namespace attn
