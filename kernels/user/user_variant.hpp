// The variant `user.<name>` built from a user's kernel spec (user_kernel_spec.hpp): features()
// and space() are the spec's, check() applies its constraints and evaluates its launch (a failing
// expression or a launch the device cannot take declines the config with the reason), programs()
// compiles the user's sources through NVRTC with include/attn_bench/user_kernel.h beside them, and
// prepare() fills the parameter block (AttnUserParams) and launches with the evaluated grid,
// block and dynamic shared memory.
#pragma once

#include <memory>

#include "kernels/user/user_kernel_spec.hpp"
#include "kernels/variant.hpp"

namespace attn {

std::unique_ptr<Variant> make_user_variant(UserKernelSpec spec);

// The launch and the template arguments of `spec` for a config and batch, or the reason they
// cannot be had (a constraint that does not hold, an expression that fails, a dimension out of
// range), shared by check() and prepare().
struct UserLaunch {
  LaunchShape shape;
  std::vector<int64_t> template_args;
};
Support evaluate_user_launch(const UserKernelSpec& spec, const Batch& batch,
                             const KernelConfig& config, const Target& target, UserLaunch* out);

}  // namespace attn
