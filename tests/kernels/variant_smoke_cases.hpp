// One small batch per CUDA variant, which the variant accepts with its default config: the cases
// of the `gpu-quick` CTest label (tests/kernels/every_variant_gpu_test.cpp), which runs every GPU
// variant once in about a minute. A CPU test (variant_smoke_cases_test.cpp) checks that every
// CUDA variant of the registry has its case here and accepts it on an H100/H200-like target.
#pragma once

#include <string>
#include <vector>

#include "tests/kernels/mla_decode/latent_batch.hpp"
#include "tests/test_support.hpp"
#include "workloads/batch.hpp"

namespace attn::testing {

// The CUDA variants, in the registry's order (kernels/registry.cpp).
inline std::vector<std::string> smoke_variant_names() {
  return {"paged_decode.sm80_simt",  "paged_decode.sm80_mma",          "paged_decode.sm90_tma",
          "prefix_prefill.sm80_mma", "prefix_prefill.sm80_mma_masked", "prefix_prefill.sm90_wgmma",
          "flash_fwd.sm80_mma",      "flash_fwd.sm90_wgmma",           "blocksparse.sm80_mma",
          "blocksparse.sm90_wgmma",  "blocksparse.sm80_mma_decode",    "mla_decode.sm80_mma",
          "mla_decode.sm90_wgmma",   "mla_decode.sm90_wgmma_key_rows"};
}

// A small batch of the variant's family (8 q heads over 2 kv heads, head dim 128, bf16, pages of
// 16 keys) with lengths that fill no tile exactly: decode rows with contexts of 0 to 1100 keys,
// chunks after contexts, dense prompts of 300 and 17 tokens, a random explicit mask, a Phi-3
// block-sparse layout of 64-token blocks; for mla_decode, DeepSeek-V3's latent widths (512 + 64)
// with 16 q heads, pages of 64 tokens and 1 to 3 query tokens per sequence.
inline Batch smoke_batch(const std::string& variant) {
  SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  shape.page_size = 16;
  shape.seed = 11;
  const std::string family = variant.substr(0, variant.find('.'));
  if (family == "mla_decode") {
    LatentShape latent;
    latent.q_heads = 16;
    latent.kv_lora_rank = 512;
    latent.qk_rope_head_dim = 64;
    latent.page_size = 64;
    latent.sequences = {{0, 1}, {17, 1}, {300, 3}, {1100, 2}};
    return latent_batch(latent);
  }
  BlockSparseSpec sparse;
  sparse.block_size = 64;
  sparse.local_blocks = 2;
  sparse.vertical_stride = 3;
  if (variant == "blocksparse.sm80_mma_decode") {
    WorkloadSpec spec = make_decode_spec(shape, {0, 63, 700, 1100});
    spec.mask.block_sparse = sparse;
    return generate_batch(spec);
  }
  if (family == "paged_decode") return generate_batch(make_decode_spec(shape, {0, 17, 300, 1100}));
  if (family == "prefix_prefill") {
    WorkloadSpec spec = make_spec(shape, {{100, 17}, {0, 64}, {1000, 1}, {37, 90}}, "smoke");
    if (variant == "prefix_prefill.sm80_mma_masked") {
      ExplicitMaskSpec mask;
      mask.kind = ExplicitMaskKind::random;
      mask.density = 0.5;
      spec.mask.explicit_mask = mask;
    }
    return generate_batch(spec);
  }
  WorkloadSpec spec = make_spec(shape, {{0, 300}, {0, 17}, {0, 129}}, "smoke");
  if (family == "blocksparse") spec.mask.block_sparse = sparse;
  return generate_batch(spec);
}

}  // namespace attn::testing
