#include "kernels/variant.hpp"

#include <algorithm>

#include "workloads/visibility.hpp"

namespace attn {

const FeatureSet& Variant::declared_features() const {
  std::call_once(features_once_, [this] { features_ = features(); });
  return features_;
}

Support Variant::check(const Batch& batch, const KernelConfig& config, const Target& target) const {
  return check(batch, batch_features(batch), config, target);
}

Support Variant::check(const Batch& batch, const BatchFeatures& used, const KernelConfig& config,
                       const Target& target) const {
  if (Support s = check_features(declared_features(), used); !s) return s;
  return supports(batch, config, target);
}

Work minimum_work(const Batch& batch, KvStorage storage) {
  const MinimumTraffic traffic = minimum_traffic(batch, storage);
  Work work;
  work.bytes = traffic.bytes();
  work.unique_bytes = traffic.unique_bytes();
  work.flops = useful_flops(batch);
  return work;
}

Support supports_sm80_target(const Target& target, const std::string& needs) {
  if (target.backend != Backend::cuda) return Support::no("needs a CUDA GPU");
  if (target.compute_capability() < 80) {
    return Support::no("needs compute capability 8.0 or newer (" + needs + ")");
  }
  return Support::yes();
}

Support supports_sm90_target(const Target& target, const std::string& needs) {
  if (target.backend != Backend::cuda) return Support::no("needs a CUDA GPU");
  if (target.compute_capability() < 90) {
    return Support::no("needs compute capability 9.0 or newer (" + needs + ")");
  }
  return Support::yes();
}

Support supports_shared_bytes(long long shared_bytes, const Target& target) {
  if (target.max_shared_per_block > 0 && shared_bytes > target.max_shared_per_block) {
    return Support::no("needs " + std::to_string(shared_bytes) +
                       " bytes of shared memory; this device allows " +
                       std::to_string(target.max_shared_per_block) + " per block");
  }
  return Support::yes();
}

Support supports_split_launch(long long shared_bytes, int num_splits, int max_splits,
                              const Target& target, const std::string& zero_means) {
  if (Support s = supports_shared_bytes(shared_bytes, target); !s) return s;
  if (num_splits < 0 || num_splits > max_splits) {
    return Support::no("num_splits must be 0 (" + zero_means + ") to " +
                       std::to_string(max_splits));
  }
  return Support::yes();
}

Support config_has_exactly(const KernelConfig& config, const std::vector<std::string>& axes,
                           const std::string& variant) {
  for (const std::string& axis : axes) {
    if (!config.find(axis)) return Support::no("config lacks the axis " + axis);
  }
  if (config.values().size() != axes.size()) {
    std::string extra;
    for (const auto& [axis, value] : config.values()) {
      if (std::find(axes.begin(), axes.end(), axis) == axes.end())
        extra += (extra.empty() ? "" : ", ") + axis;
    }
    return Support::no("config has axes " + variant + " does not use: " + extra);
  }
  return Support::yes();
}

}  // namespace attn
