// The measurement-policy flags `attn-bench run` and `attn-bench peers` share (--policy, --samples,
// --noise, ...; docs/measurement.md), and the policy they give.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "measure/timing_policy.hpp"

namespace attn {

struct PolicyFlags {
  std::string policy = "confirm";
  std::optional<size_t> samples, min_samples, max_samples, warmup;
  std::optional<double> noise, max_time;
  std::string timer;
  bool no_flush_l2 = false;
};

void add_policy_flags(CLI::App* command, PolicyFlags& flags);

// The named policy with the flags' overrides applied; UsageError for an unknown name, --samples 0,
// an unknown --timer or an inconsistent result.
MeasurePolicy policy_from(const PolicyFlags& flags);

}  // namespace attn
