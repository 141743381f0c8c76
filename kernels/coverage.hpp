// The coverage matrix: for each family and each cell of head dims x KV dtype x KV layout x
// page-size class, the variants that accept a representative workload of that cell. Derived by
// asking every variant (Variant::check, the feature contract and its own rules), never from a
// hand-written table: a variant that learns head dim 96 shows up in the 96 column by itself.
//
// A cell's representative workloads are small batches of the family's query shapes and masks
// (paged_decode: decode; prefix_prefill: prefill over a cached context, causal or with an
// explicit causal mask; flash_fwd: prefill without a context; blocksparse: prefill and decode with
// a block-sparse layout), and for an fp8 cache both scale granularities. A variant accepts the
// cell when it accepts one of them with some config of its space, on a described sm_90 GPU
// (which runs the sm_80 variants too) for CUDA variants and on the CPU for the CPU references.
// `attn-bench list --coverage` prints it; docs/coverage.md says what each family claims.
//
// The matrix covers the standard-attention families (heads of head_dim over num_kv_heads K/V
// heads). mla_decode is left out: a latent workload's shape is kv_lora_rank and qk_rope_head_dim
// over one latent cache, which the head-dim and layout axes do not describe (docs/mla-decode.md);
// it has a table of its own (latent_coverage.hpp).
#pragma once

#include <string>
#include <vector>

#include "base/family.hpp"
#include "kernels/registry.hpp"

namespace attn {

// The columns of one axis of the matrix: a label each, in print order.
struct CoverageAxes {
  // Head dims: "64", "80", "96", "128", "192", "256" and "192x128" (Q/K 192, V 128).
  std::vector<std::string> head_dims;
  std::vector<std::string> kv_dtypes;  // "bf16", "fp16", "fp8_e4m3"
  std::vector<std::string> layouts;    // "NHD", "HND"
  // "1" (one-token pages), "16" (16-token pages: a multiple of 8 keys that TMA boxes tile),
  // "other" (12-token pages: neither)
  std::vector<std::string> page_sizes;
};
const CoverageAxes& coverage_axes();

struct CoverageCell {
  Family family;
  std::string head_dim;  // a label of CoverageAxes::head_dims
  std::string kv_dtype;
  std::string layout;
  std::string page_size;
  std::vector<std::string> gpu_variants;  // CUDA variants that accept it, in registry order
  std::vector<std::string> cpu_variants;  // CPU variants that accept it
};

// Whether `variant` takes `batch` on `target` with its default config or some config of its
// space (the check every cell makes; the latent table, latent_coverage.hpp, makes it too).
bool accepts_with_some_config(const Variant& variant, const Batch& batch, const Target& target);

// Whether the matrix has cells for `family` (every family but mla_decode).
bool in_coverage_matrix(Family family);

// Every cell of every family in `registry` that is in the matrix (family, then head dim, KV dtype,
// layout and page-size class in the axes' order).
std::vector<CoverageCell> coverage_matrix(const Registry& registry);

}  // namespace attn
