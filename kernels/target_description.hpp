// A CUDA target described rather than found: an arch, a multiprocessor count and the shared memory
// per block (by default an H100-like one), for work that needs a GPU's limits without a GPU
// (`attn-tune space --arch`, the coverage report).
#pragma once

#include <string>

#include "kernels/target.hpp"

namespace attn {

// The target to describe a GPU that is not present ("--arch sm_90a --sm-count 132 --smem 232448").
// An H100 SXM when nothing is given.
struct TargetDescription {
  std::string arch = "sm_90a";
  int sm_count = 132;
  int max_shared_per_block = 232448;  // 227 KiB: the opt-in limit of Hopper
  std::string name = "described target";
};
// Throws UsageError for an arch that is not "sm_<major><minor>[a]" or non-positive counts.
Target described_cuda_target(const TargetDescription& description);

}  // namespace attn
