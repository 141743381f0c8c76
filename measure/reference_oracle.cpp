#include "measure/reference_oracle.hpp"

#include "kernels/reference/gpu_reference.hpp"
#include "results/table.hpp"
#include "workloads/visibility.hpp"

namespace attn {

std::string to_string(ReferenceOracle oracle) {
  switch (oracle) {
    case ReferenceOracle::cpu:
      return "cpu";
    case ReferenceOracle::gpu:
      return "gpu";
    case ReferenceOracle::automatic:
      return "auto";
  }
  return "?";
}

std::optional<ReferenceOracle> reference_oracle_from_string(const std::string& text) {
  for (ReferenceOracle oracle :
       {ReferenceOracle::cpu, ReferenceOracle::gpu, ReferenceOracle::automatic}) {
    if (text == to_string(oracle)) return oracle;
  }
  return std::nullopt;
}

double reference_work(const Batch& batch) {
  // q.k over head_dim, p.v over v_head_dim: their mean, head_dim when the two are one.
  const ModelShape& m = batch.spec.model;
  return double(visible_pairs(batch)) * double(m.head_dim + m.effective_v_head_dim()) / 2.0;
}

bool use_gpu_reference(const Batch& batch, ReferenceOracle oracle, double min_work) {
  if (!gpu_reference_supports(batch)) return false;  // the CPU reference verifies it
  switch (oracle) {
    case ReferenceOracle::cpu:
      return false;
    case ReferenceOracle::gpu:
      return true;
    case ReferenceOracle::automatic:
      return reference_work(batch) >= min_work;
  }
  return false;
}

std::string describe_reference_choice(const Batch& batch, ReferenceOracle oracle, double min_work) {
  if (Support s = gpu_reference_supports(batch); !s && oracle != ReferenceOracle::cpu) {
    return "--reference " + to_string(oracle) +
           ", the CPU reference: the GPU reference declines (" + s.reason + ")";
  }
  if (oracle != ReferenceOracle::automatic) return "--reference " + to_string(oracle);
  const double work = reference_work(batch);
  return format("auto: visible pairs x head_dim %.2g %s %.2g", work, work >= min_work ? ">=" : "<",
                min_work);
}

}  // namespace attn
