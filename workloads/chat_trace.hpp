// The generator of workloads/traces/chat-sample.csv ("builtin:chat-sample"): synthetic chat
// traffic drawn from documented distributions, not copied from any dataset. Prompt and output
// lengths of chat requests are heavy-tailed and roughly lognormal; the parameters below give a
// median prompt of 600 tokens with a long tail to 16k, and a median answer of 220 tokens.
// tests/workloads/chat_trace_test.cpp checks that the shipped file is exactly this output.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "workloads/workload_spec.hpp"

namespace attn {

struct ChatTraceParameters {
  int64_t requests = 1000;
  uint64_t seed = 20261121;
  LengthSpec prompt_len = lognormal(600.0, 1.1, 8, 16384);
  LengthSpec output_len = lognormal(220.0, 0.9, 1, 4096);

  static LengthSpec lognormal(double median, double sigma, int64_t min, int64_t max) {
    LengthSpec length;
    length.distribution = LengthDistribution::lognormal;
    length.median = median;
    length.sigma = sigma;
    length.min = min;
    length.max = max;
    return length;
  }
};

// (prompt_len, output_len) per request; deterministic in the parameters (counter RNG streams 1
// and 2 of the seed).
std::vector<std::pair<int64_t, int64_t>> generate_chat_trace(const ChatTraceParameters& p = {});

}  // namespace attn
