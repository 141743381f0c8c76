// The tunable axes of a variant, declared once. Each axis is a name, the values a sweep tries, a
// help line and a default; the label abbreviation of a name comes from axis_abbreviation
// (base/kernel_config.hpp, one line there for a new name). From the one declaration a variant
// gets its space(), the config a default starts from, and the check that a config names exactly
// these axes:
//
//   const ConfigAxes& axes() {
//     static const ConfigAxes kAxes{{"tile_tokens", {16, 32, 64}, "keys per block", 64},
//                                   {"warps", {1, 2, 4}, "warps per CTA", 4}};
//     return kAxes;
//   }
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "base/kernel_config.hpp"
#include "kernels/support.hpp"

namespace attn {

struct AxisSpec {
  std::string name;
  std::vector<int64_t> values;  // what a sweep tries
  std::string help;
  int64_t default_value;  // one of values
};

class ConfigAxes {
 public:
  // Asserts that names are distinct and each default is one of its axis's values.
  ConfigAxes(std::initializer_list<AxisSpec> axes);

  const std::vector<AxisSpec>& axes() const { return axes_; }
  std::vector<std::string> names() const;
  // The axes as the search sees them (Variant::space()).
  std::vector<ConfigAxis> space() const;
  // Every axis at its default.
  KernelConfig defaults() const;
  // Whether `config` sets exactly these axes (config_has_exactly, kernels/variant.hpp).
  Support has_exactly(const KernelConfig& config, const std::string& variant) const;

 private:
  std::vector<AxisSpec> axes_;
};

}  // namespace attn
