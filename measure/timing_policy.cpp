#include "measure/timing_policy.hpp"

#include <cstdio>

#include "base/errors.hpp"

namespace attn {

std::string to_string(TimerMode mode) {
  switch (mode) {
    case TimerMode::events:
      return "events";
    case TimerMode::graph:
      return "graph";
    case TimerMode::automatic:
      return "auto";
  }
  return "?";
}

std::optional<TimerMode> timer_mode_from_string(const std::string& text) {
  for (TimerMode mode : {TimerMode::events, TimerMode::graph, TimerMode::automatic}) {
    if (text == to_string(mode)) return mode;
  }
  return std::nullopt;
}

MeasurePolicy screen_policy() {
  MeasurePolicy p;
  p.name = "screen";
  p.min_samples = 3;
  p.max_samples = 100;
  p.noise = 0.03;
  p.max_seconds = 1;
  p.warmup_min = 1;
  p.warmup_window = 1;
  p.warmup_tolerance = 0.05;
  p.warmup_max_seconds = 0.1;
  p.graph_sample_us = 500;
  p.unstable_discard_fraction = 0.25;
  return p;
}

MeasurePolicy confirm_policy() {
  MeasurePolicy p;
  p.name = "confirm";
  return p;  // the defaults of MeasurePolicy are the strict ones
}

std::optional<MeasurePolicy> named_policy(const std::string& name) {
  if (name == "screen") return screen_policy();
  if (name == "confirm") return confirm_policy();
  return std::nullopt;
}

namespace {
std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}
}  // namespace

MeasurePolicy apply_overrides(MeasurePolicy p, const PolicyOverrides& o) {
  std::string changes;
  auto note = [&](const std::string& what) { changes += (changes.empty() ? "" : ",") + what; };
  if (o.min_samples) {
    p.min_samples = *o.min_samples;
    note("min_samples=" + std::to_string(p.min_samples));
  }
  if (o.max_samples) {
    p.max_samples = *o.max_samples;
    note("max_samples=" + std::to_string(p.max_samples));
  }
  if (o.noise) {
    p.noise = *o.noise;
    note("noise=" + number(p.noise));
  }
  if (o.max_seconds) {
    p.max_seconds = *o.max_seconds;
    note("max_time=" + number(p.max_seconds));
  }
  if (o.timer) {
    p.timer = *o.timer;
    note("timer=" + to_string(p.timer));
  }
  if (o.warmup_min) {
    p.warmup_min = *o.warmup_min;
    note("warmup=" + std::to_string(p.warmup_min));
  }
  if (o.flush_l2) {
    p.flush_l2 = *o.flush_l2;
    note(std::string("flush_l2=") + (p.flush_l2 ? "1" : "0"));
  }
  if (!changes.empty()) p.name += "(" + changes + ")";
  validate(p);
  return p;
}

void validate(const MeasurePolicy& p) {
  if (p.min_samples < 1) throw UsageError("--min-samples must be at least 1");
  if (p.max_samples < p.min_samples) {
    throw UsageError("--max-samples (" + std::to_string(p.max_samples) +
                     ") is below --min-samples (" + std::to_string(p.min_samples) + ")");
  }
  if (!(p.noise > 0) || p.noise >= 1) throw UsageError("--noise must be in (0, 1), e.g. 0.005");
  if (!(p.max_seconds > 0)) throw UsageError("--max-time must be positive (seconds)");
  if (!(p.clock_threshold > 0) || p.clock_threshold > 1) {
    throw UsageError("the clock threshold must be in (0, 1]");
  }
}

}  // namespace attn
