#include "measure/stopping_rule.hpp"

#include <cstdio>

#include "base/sample_statistics.hpp"

namespace attn {

std::string to_string(StopReason reason) {
  switch (reason) {
    case StopReason::none:
      return "none";
    case StopReason::noise:
      return "noise";
    case StopReason::samples:
      return "max_samples";
    case StopReason::interrupted:
      return "interrupted";
    case StopReason::time:
      return "max_time";
  }
  return "?";
}

namespace {

class NoiseRule : public StoppingRule {
 public:
  NoiseRule(double target, size_t min_samples) : target_(target), min_samples_(min_samples) {}
  StopReason check(const SamplingState& state) override {
    const size_t n = state.kept.size();
    if (n < std::max<size_t>(min_samples_, 2)) return StopReason::none;
    // The bootstrap costs O(n) per resample: past 64 samples, look again only after the set grew
    // by 1/16th, which keeps the total cost near O(n log n) while stopping at most 6% late.
    if (n > 64 && n < checked_at_ + checked_at_ / 16) return StopReason::none;
    checked_at_ = n;
    return median_relative_noise(state.kept) <= target_ ? StopReason::noise : StopReason::none;
  }
  std::string describe() const override {
    char text[96];
    std::snprintf(text, sizeof text, "noise of the median <= %g after >= %zu samples", target_,
                  min_samples_);
    return text;
  }

 private:
  double target_;
  size_t min_samples_;
  size_t checked_at_ = 0;
};

class SampleCapRule : public StoppingRule {
 public:
  explicit SampleCapRule(size_t max_samples) : max_samples_(max_samples) {}
  StopReason check(const SamplingState& state) override {
    return state.taken >= max_samples_ ? StopReason::samples : StopReason::none;
  }
  std::string describe() const override {
    return "at most " + std::to_string(max_samples_) + " samples";
  }

 private:
  size_t max_samples_;
};

class TimeCapRule : public StoppingRule {
 public:
  explicit TimeCapRule(double max_seconds) : max_seconds_(max_seconds) {}
  StopReason check(const SamplingState& state) override {
    // With no kept sample yet (every one taken at a low clock) wait up to twice as long.
    const bool over = state.kept.empty() ? state.elapsed_seconds >= 2 * max_seconds_
                                         : state.elapsed_seconds >= max_seconds_;
    return over ? StopReason::time : StopReason::none;
  }
  std::string describe() const override {
    char text[64];
    std::snprintf(text, sizeof text, "at most %g s", max_seconds_);
    return text;
  }

 private:
  double max_seconds_;
};

}  // namespace

std::unique_ptr<StoppingRule> noise_rule(double target, size_t min_samples) {
  return std::make_unique<NoiseRule>(target, min_samples);
}
std::unique_ptr<StoppingRule> sample_cap_rule(size_t max_samples) {
  return std::make_unique<SampleCapRule>(max_samples);
}
std::unique_ptr<StoppingRule> time_cap_rule(double max_seconds) {
  return std::make_unique<TimeCapRule>(max_seconds);
}

StopReason StoppingRules::check(const SamplingState& state) {
  for (auto& rule : rules_) {
    const StopReason reason = rule->check(state);
    if (reason != StopReason::none) return reason;
  }
  return StopReason::none;
}

std::string StoppingRules::describe() const {
  std::string text;
  for (const auto& rule : rules_) text += (text.empty() ? "" : "; ") + rule->describe();
  return text;
}

StoppingRules stopping_rules_for(const MeasurePolicy& policy) {
  StoppingRules rules;
  rules.add(noise_rule(policy.noise, policy.min_samples));
  rules.add(sample_cap_rule(policy.max_samples));
  rules.add(time_cap_rule(policy.max_seconds));
  return rules;
}

}  // namespace attn
