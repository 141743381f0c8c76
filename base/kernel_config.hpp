// KernelConfig: how to run a variant (tile sizes, warps, split count, ...): named integer axes.
// Never mixed with problem fields. Its canonical key ("heads_per_cta=4,tile_tokens=64,warps=4")
// is the database key; its label ("h4.t64.w4") goes into the variant's full name, which is also
// the JIT program name and the --variant filter target.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attn {

class KernelConfig {
 public:
  KernelConfig() = default;
  KernelConfig(std::initializer_list<std::pair<const std::string, int64_t>> values)
      : values_(values) {}

  KernelConfig& set(const std::string& axis, int64_t value);
  // Throws an internal error when the axis is missing: variants read only axes they declared.
  int64_t get(const std::string& axis) const;
  std::optional<int64_t> find(const std::string& axis) const;
  const std::map<std::string, int64_t>& values() const { return values_; }
  bool operator==(const KernelConfig& other) const { return values_ == other.values_; }

  std::string key() const;    // "a=1,b=2", axes sorted
  std::string label() const;  // "a1.b2" with each axis's abbreviation (axis_abbreviation)
  nlohmann::json to_json() const;
  // Parses a key ("a=1,b=2"); throws UsageError naming the bad part.
  static KernelConfig from_key(const std::string& key);

 private:
  std::map<std::string, int64_t> values_;
};

// One tunable axis of a variant: its name, the values worth trying, and why it exists.
struct ConfigAxis {
  std::string name;
  std::vector<int64_t> values;
  std::string help;
};

// Short form of an axis name used in labels: tile_tokens -> t, warps -> w, ... (unknown: itself).
std::string axis_abbreviation(const std::string& axis);

}  // namespace attn
