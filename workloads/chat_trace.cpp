#include "workloads/chat_trace.hpp"

#include "workloads/counter_rng.hpp"
#include "workloads/length_sampling.hpp"

namespace attn {

std::vector<std::pair<int64_t, int64_t>> generate_chat_trace(const ChatTraceParameters& p) {
  const uint64_t prompt_key = stream_key(p.seed, 1);
  const uint64_t output_key = stream_key(p.seed, 2);
  std::vector<std::pair<int64_t, int64_t>> rows;
  for (int64_t r = 0; r < p.requests; ++r) {
    rows.emplace_back(draw_length(p.prompt_len, prompt_key, uint64_t(r)),
                      draw_length(p.output_len, output_key, uint64_t(r)));
  }
  return rows;
}

}  // namespace attn
