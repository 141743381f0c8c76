#include "kernels/target_description.hpp"

#include <cctype>

#include "base/errors.hpp"

namespace attn {

Target described_cuda_target(const TargetDescription& d) {
  // sm_<major><minor>[a]: the last digit is the minor version, the rest the major.
  std::string digits;
  const std::string arch = d.arch;
  bool ok = arch.rfind("sm_", 0) == 0;
  size_t i = 3;
  while (ok && i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i]))) {
    digits += arch[i++];
  }
  ok = ok && digits.size() >= 2 && (i == arch.size() || (arch[i] == 'a' && i + 1 == arch.size()));
  if (!ok)
    throw UsageError("--arch '" + arch + "': expected sm_<major><minor>, e.g. sm_90a, sm_80");
  if (d.sm_count <= 0) throw UsageError("--sm-count must be positive");
  if (d.max_shared_per_block <= 0) throw UsageError("--smem must be positive (bytes per block)");
  Target t;
  t.backend = Backend::cuda;
  t.arch = arch;
  t.cc_major = std::stoi(digits.substr(0, digits.size() - 1));
  t.cc_minor = digits.back() - '0';
  t.sm_count = d.sm_count;
  t.max_shared_per_block = d.max_shared_per_block;
  t.device_name = d.name;
  return t;
}

}  // namespace attn
