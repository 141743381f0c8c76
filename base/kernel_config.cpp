#include "base/kernel_config.hpp"

#include <sstream>

#include "base/errors.hpp"

namespace attn {

KernelConfig& KernelConfig::set(const std::string& axis, int64_t value) {
  values_[axis] = value;
  return *this;
}

int64_t KernelConfig::get(const std::string& axis) const {
  auto it = values_.find(axis);
  ATTN_ASSERT(it != values_.end(), "config has no axis '" + axis + "': " + key());
  return it->second;
}

std::optional<int64_t> KernelConfig::find(const std::string& axis) const {
  auto it = values_.find(axis);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string KernelConfig::key() const {
  std::string out;
  for (const auto& [axis, value] : values_) {
    if (!out.empty()) out += ",";
    out += axis + "=" + std::to_string(value);
  }
  return out;
}

std::string KernelConfig::label() const {
  std::string out;
  for (const auto& [axis, value] : values_) {
    if (!out.empty()) out += ".";
    out += axis_abbreviation(axis) + std::to_string(value);
  }
  return out;
}

nlohmann::json KernelConfig::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [axis, value] : values_) out[axis] = value;
  return out;
}

KernelConfig KernelConfig::from_key(const std::string& key) {
  KernelConfig config;
  std::istringstream in(key);
  std::string part;
  while (std::getline(in, part, ',')) {
    size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == part.size()) {
      throw UsageError("config '" + key + "': expected axis=value, got '" + part + "'");
    }
    const std::string value = part.substr(eq + 1);
    size_t used = 0;
    long long number = 0;
    try {
      number = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size()) {
      throw UsageError("config '" + key + "': value of " + part.substr(0, eq) +
                       " is not an integer: '" + value + "'");
    }
    config.set(part.substr(0, eq), number);
  }
  return config;
}

std::string axis_abbreviation(const std::string& axis) {
  static const std::map<std::string, std::string> kAbbreviations = {
      {"tile_tokens", "t"}, {"warps", "w"},        {"heads_per_cta", "h"},
      {"num_splits", "s"},  {"stages", "st"},      {"pages_per_block", "p"},
      {"block_m", "m"},     {"block_n", "n"},      {"tile_m", "tm"},
      {"tile_n", "tn"},     {"consumers", "c"},    {"unroll_cache", "uc"},
      {"unroll_new", "un"}, {"fp8_dequant", "dq"},
  };
  auto it = kAbbreviations.find(axis);
  return it == kAbbreviations.end() ? axis : it->second;
}

}  // namespace attn
