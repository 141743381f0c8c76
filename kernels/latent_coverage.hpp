// The coverage table of multi-head latent attention (the mla_decode family), which the standard
// matrix (coverage.hpp) leaves out: for each latent shape (kv_lora_rank + qk_rope_head_dim), latent
// cache dtype and page-size class, the variants that accept a representative latent workload.
// Derived by asking every variant (Variant::check), never from a hand-written table, on the same
// described sm_90 GPU (CUDA variants) and the CPU (CPU references) as the standard matrix.
//
// A cell's representative workloads are small latent batches of 8 q heads: two decode sequences,
// and two speculative-decode sequences of 2 query tokens, over about 200 cached tokens; an fp8
// cache has its one per-tensor scale. `attn-bench list --coverage` prints it after the standard
// matrix; docs/coverage.md says what it shows.
#pragma once

#include <string>
#include <vector>

#include "base/family.hpp"
#include "kernels/registry.hpp"

namespace attn {

struct LatentCoverageAxes {
  // "RANK+ROPE": "512+64" (DeepSeek-V2/V3, Kimi K2), "512+128", "256+64", "1024+128", "512+32".
  std::vector<std::string> shapes;
  std::vector<std::string> kv_dtypes;   // "bf16", "fp16", "fp8_e4m3" (with bf16 Q)
  std::vector<std::string> page_sizes;  // "1", "16", "other" (12), as the standard matrix
};
const LatentCoverageAxes& latent_coverage_axes();

struct LatentCoverageCell {
  Family family;
  std::string shape;  // a label of LatentCoverageAxes::shapes
  std::string kv_dtype;
  std::string page_size;
  std::vector<std::string> gpu_variants;  // CUDA variants that accept it, in registry order
  std::vector<std::string> cpu_variants;  // CPU variants that accept it
};

// Every cell for every family of `registry` that the standard matrix leaves out (shape, then KV
// dtype and page-size class, in the axes' order).
std::vector<LatentCoverageCell> latent_coverage_matrix(const Registry& registry);

}  // namespace attn
