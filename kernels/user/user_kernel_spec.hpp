// UserKernelSpec: a user's CUDA kernel described by a spec file (docs/user-kernels.md): its
// sources, the kernel template and the expressions bound to its template parameters, the tunable
// axes, the constraints a config must meet, the features it implements, and the launch (grid,
// block, dynamic shared memory) as expressions over axes and batch quantities. Nothing the user
// wrote runs on the host: expressions are evaluated by base/expression.hpp.
//
// Loading checks everything that does not need a batch: the JSON (strict_json.hpp, problems as
// JSON pointers, unknown keys with a "did you mean"), the names every expression uses, the source
// files (read now, so a missing one is reported before any GPU work), the features against the
// schema, and every expression that names only axes, over every combination of axis values
// (division by zero, overflow, an axis value that no combination lets through the constraints).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/expression.hpp"
#include "base/family.hpp"
#include "base/kernel_config.hpp"
#include "kernels/feature_set.hpp"
#include "kernels/target.hpp"
#include "workloads/batch.hpp"

namespace attn {

inline constexpr int kUserKernelSpecVersion = 1;

struct UserKernelSource {
  std::string name;  // as the spec writes it, relative to the spec's folder; the include name
  std::string text;
};

// An expression of the spec with the JSON pointer it came from, for messages.
struct SpecExpression {
  std::string pointer;
  Expression expression;
};

struct UserKernelSpec {
  std::string path;  // the spec file
  std::string name;  // the variant is user.<name>
  Family family = Family::paged_decode;
  std::string summary;
  std::vector<UserKernelSource> sources;  // the first is the program's translation unit
  std::string kernel;                     // the __global__ template, e.g. "my_lab::paged_decode"
  std::vector<SpecExpression> template_args;
  std::vector<ConfigAxis> axes;  // sorted by name, as KernelConfig keys are
  std::vector<SpecExpression> constraints;
  FeatureSet features;
  std::vector<SpecExpression> grid;          // 3
  std::vector<SpecExpression> block;         // 3
  std::vector<SpecExpression> shared_bytes;  // 1
  int min_compute_capability = 80;

  std::string variant_name() const { return "user." + name; }
  // The axes' names, in order.
  std::vector<std::string> axis_names() const;
};

// The batch features a spec may declare: every feature of the batch schema but those the
// parameter block (version 1) cannot describe: a V narrower than K (v_head_dim; V shares K's
// strides and width there) and latent attention (no latent cache there).
std::vector<std::string> declarable_features();

// The names an expression may use besides the axes: what the batch and the target give.
const std::vector<std::string>& batch_quantity_names();
// Their values for `batch` on `target`.
std::map<std::string, int64_t> batch_quantities(const Batch& batch, const Target& target);

// Parses and checks a spec; throws InputError (exit code 3) listing every problem found.
// `directory` is where source paths are relative to.
UserKernelSpec parse_user_kernel_spec(const std::string& text, const std::string& path,
                                      const std::string& directory);
// Reads the file (bounded: 1 MiB) and parses it.
UserKernelSpec load_user_kernel_spec(const std::string& path);

}  // namespace attn
