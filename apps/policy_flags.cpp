#include "apps/policy_flags.hpp"

#include "base/errors.hpp"

namespace attn {

void add_policy_flags(CLI::App* cmd, PolicyFlags& flags) {
  cmd->add_option("--policy", flags.policy,
                  "measurement policy: confirm (default; 0.5% noise target) or screen (cheap)");
  cmd->add_option("--min-samples", flags.min_samples,
                  "kept samples before the noise rule may stop");
  cmd->add_option("--max-samples", flags.max_samples, "samples after which sampling stops anyway");
  cmd->add_option("--samples", flags.samples,
                  "exactly N samples (sets --min-samples and --max-samples)");
  cmd->add_option("--noise", flags.noise,
                  "target relative noise of the median, e.g. 0.005 for 0.5%");
  cmd->add_option("--max-time", flags.max_time,
                  "seconds of sampling per case before it stops anyway");
  cmd->add_option("--warmup", flags.warmup, "least warm-up launches before the settle test");
  cmd->add_option("--timer", flags.timer,
                  "events (one launch between CUDA events), graph (a CUDA graph of many launches) "
                  "or auto (graph for short launches; default)");
  cmd->add_flag("--no-flush-l2", flags.no_flush_l2, "do not flush the L2 cache between samples");
}

MeasurePolicy policy_from(const PolicyFlags& flags) {
  std::optional<MeasurePolicy> named = named_policy(flags.policy);
  if (!named) throw UsageError("--policy '" + flags.policy + "': use screen or confirm");
  PolicyOverrides o;
  if (flags.samples) {
    if (*flags.samples < 1) throw UsageError("--samples must be at least 1");
    o.min_samples = o.max_samples = flags.samples;
  }
  if (flags.min_samples) o.min_samples = flags.min_samples;
  if (flags.max_samples) o.max_samples = flags.max_samples;
  if (flags.noise) o.noise = flags.noise;
  if (flags.max_time) o.max_seconds = flags.max_time;
  if (flags.warmup) o.warmup_min = flags.warmup;
  if (!flags.timer.empty()) {
    o.timer = timer_mode_from_string(flags.timer);
    if (!o.timer) throw UsageError("--timer '" + flags.timer + "': use events, graph or auto");
  }
  if (flags.no_flush_l2) o.flush_l2 = false;
  return apply_overrides(*named, o);
}

}  // namespace attn
