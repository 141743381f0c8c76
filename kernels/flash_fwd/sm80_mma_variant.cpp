// Host side of flash_fwd.sm80_mma (device code: sm80_mma.cuh, rules: sm80_mma_traits.hpp).
#include <algorithm>
#include <climits>
#include <numeric>

#include "kernels/dtype_code_of.hpp"
#include "kernels/flash_fwd/flash_fwd_variants.hpp"
#include "kernels/flash_fwd/gathered_kv.hpp"
#include "kernels/flash_fwd/sm80_mma_params.hpp"
#include "kernels/flash_fwd/sm80_mma_traits.hpp"
#include "kernels/launch_inputs.hpp"
#include "kernels/params_launcher.hpp"

namespace attn {

namespace {

// A config, and whether the batch's cache is fp8 (its codes dequantised in the kernel).
struct Sm80Config {
  int tile_m, tile_n, warps, stages;
  bool fp8;
  Sm80Config(const KernelConfig& c, const Batch& batch)
      : tile_m(int(c.get("tile_m"))),
        tile_n(int(c.get("tile_n"))),
        warps(int(c.get("warps"))),
        stages(int(c.get("stages"))),
        fp8(batch.kv_fp8()) {}
  int shared_bytes(int head_dim, int v_head_dim) const {
    return fp8 ? sm80_attention::shared_bytes_kv_fp8(head_dim, v_head_dim, tile_m, tile_n, stages)
               : sm80_attention::shared_bytes(head_dim, v_head_dim, tile_m, tile_n, stages);
  }
  int check(int head_dim, int v_head_dim) const {
    return flash_fwd::sm80_mma::check(head_dim, v_head_dim, tile_m, tile_n, warps, stages, fp8);
  }
};

// The kernel's last template argument, V_HEAD_DIM, where V is narrower than Q and K (else left to
// its default, HEAD_DIM, so the name expression of an equal-width batch is what it always was).
std::string v_head_dim_argument(const ModelShape& m) {
  return m.effective_v_head_dim() != m.head_dim ? ", " + std::to_string(m.effective_v_head_dim())
                                                : "";
}

KernelConfig make_config(int tile_m, int tile_n, int warps, int stages) {
  return KernelConfig{{"tile_m", tile_m}, {"tile_n", tile_n}, {"warps", warps}, {"stages", stages}};
}

std::string describe_rule(int rule, const Sm80Config& c, int head_dim, int v_head_dim) {
  switch (rule) {
    case flash_fwd::sm80_mma::kHeadDim:
      return "head_dim " + std::to_string(head_dim) + " is not 64, 80, 96, 128, 192 or 256";
    case flash_fwd::sm80_mma::kVHeadDim:
      return "v_head_dim " + std::to_string(v_head_dim) +
             " must be 64, 80, 96, 128, 192 or 256 and at most head_dim " +
             std::to_string(head_dim);
    case flash_fwd::sm80_mma::kWarps:
      return "warps must be 1, 2, 4 or 8";
    case flash_fwd::sm80_mma::kStages:
      return c.fp8 ? "stages must be 2, 3 or 4 with an fp8 cache (the split K / V pipeline has no "
                     "fp8 form)"
                   : "stages must be 1 (split K / V pipeline), 2, 3 or 4";
    case flash_fwd::sm80_mma::kTileM:
      return "tile_m must be " + std::to_string(16 * c.warps) + " or " +
             std::to_string(32 * c.warps) + " with " + std::to_string(c.warps) +
             " warps (16 or 32 query rows per warp)";
    case flash_fwd::sm80_mma::kTileN:
      return "tile_n must be 16, 32, 64 or 128";
    case flash_fwd::sm80_mma::kSharedMemory:
      return "needs " + std::to_string(c.shared_bytes(head_dim, v_head_dim)) +
             " bytes of shared memory (limit " +
             std::to_string(flash_fwd::sm80_mma::kMaxSharedBytes) +
             "): lower stages, tile_n or tile_m";
    case flash_fwd::sm80_mma::kRegisters:
      return "too many registers per thread (estimate " +
             std::to_string(sm80_attention::register_estimate(head_dim, v_head_dim, c.tile_m,
                                                              c.tile_n, c.warps)) +
             ", limit " + std::to_string(flash_fwd::sm80_mma::max_register_estimate(c.fp8)) +
             "): lower tile_n, or use 16 query rows per warp (tile_m = 16 x warps)";
    default:
      return "invalid config";
  }
}

class Sm80MmaVariant : public FlashFwdVariant {
 public:
  std::string name() const override { return "flash_fwd.sm80_mma"; }
  Family family() const override { return Family::flash_fwd; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "FlashAttention-2 style: mma.sync m16n8k16, ldmatrix, cp.async K/V pipeline, online "
           "softmax in registers";
  }

  // The family's features at every head dim of the schema, and V narrower than Q and K.
  FeatureSet features() const override {
    return flash_fwd_features()
        .with(feature::kHeadDim, {64, 80, 96, 128, 192, 256})
        .with(feature::kVHeadDim, {64, 80, 96, 128, 192});
  }

  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    return {
        {"tile_m", {32, 64, 128, 256}, "query rows per CTA (16 or 32 per warp)"},
        {"tile_n", {32, 64, 128}, "keys per pipeline stage"},
        {"warps", {2, 4, 8}, "warps per CTA, each owning tile_m / warps query rows"},
        {"stages",
         {1, 2, 3, 4},
         "cp.async pipeline depth: key tiles in flight (1: one K and one V buffer, V_n loading "
         "under Q K_n^T and K_n+1 under the softmax and P V_n, as FlashAttention-2)"},
    };
  }

  // Measured on an H200 (BENCHMARKS.md, issue 8: attn-tune sweeps and A/B runs, 2026-11-26),
  // with smaller fallbacks where the device has less shared memory. head_dim 64: 32 rows per
  // warp over 64 keys, Q in registers. head_dim 128 and 256 use the split K / V pipeline
  // (stages 1). head_dim 128: without a mask FlashAttention-2's 128 x 64 over 4 warps (ptxas
  // spills about 100 bytes there, and it is still the fastest); causal, 64 x 64 over 4 warps,
  // whose smaller CTAs balance the triangle, up to kLongCausalKeys keys, and 128 x 64 over 8 warps
  // on longer sequences, where most tiles are whole. head_dim 256: 16 rows per warp over 8 warps,
  // or FlashAttention-2's 64 x 64 over 4 warps, two CTAs per SM (each CTA's load of Q and store of
  // O, a quarter of a 1024-key CTA's time, overlap the other CTA's products), on sequences of up to
  // kShortKeys keys, and without a mask up to kMidKeys. Measured on H200s with Q K^T unrolled
  // eight steps (BENCHMARKS.md, flash_fwd, "stacked heads", call 7, and "rounds", call 10), µs,
  // 128 x 64 over 8 warps against 64 x 64 over 4: d256 16x1024 462.86 / 462.94 against 452.93 /
  // 456.13, causal 265.57 / 267.58 against 260.40 / 261.94; 4x4096 1697.42 / 1710.45 against
  // 1691.76 / 1700.69 (call 10: 1697.33 / 1698.35 / 1701.92 against 1685.92 / 1687.63 /
  // 1684.03), but causal 861.79 / 858.53 against 868.13 / 872.42 (call 10: 858.26 / 865.14 /
  // 861.50 against 861.10 / 861.18 / 871.82), and 1x16384 6684.37 / 6703.34 against 6960.59 /
  // 6928.69.
  static constexpr int64_t kLongCausalKeys = 8192;
  static constexpr int64_t kShortKeys = 2048;
  static constexpr int64_t kMidKeys = 4096;
  KernelConfig default_config(const Batch& batch, const Target& target) const override {
    const int head_dim = batch.spec.model.head_dim;
    const int v_head_dim = batch.spec.model.effective_v_head_dim();
    std::vector<KernelConfig> candidates;
    if (head_dim == 80 || head_dim == 96) {
      // Unmeasured: head_dim 64's, with 16 rows per warp first (Q stays in registers there).
      candidates = {make_config(64, 64, 4, 2), make_config(128, 64, 4, 2)};
    } else if (head_dim == 192) {
      // Unmeasured: head_dim 256's shapes (the split pipeline over 4 or 8 warps).
      candidates = {
          batch.max_kv_len() <= kMidKeys ? make_config(64, 64, 4, 1) : make_config(128, 64, 8, 1),
          make_config(64, 64, 4, 1), make_config(64, 32, 4, 2)};
    } else if (head_dim == 64) {
      candidates = {make_config(128, 64, 4, 2), make_config(64, 64, 4, 2)};
    } else if (head_dim == 128 && !batch.causal) {
      candidates = {make_config(128, 64, 4, 1), make_config(128, 32, 4, 2),
                    make_config(64, 64, 4, 2)};
    } else if (head_dim == 128) {
      candidates = {batch.max_kv_len() >= kLongCausalKeys ? make_config(128, 64, 8, 1)
                                                          : make_config(64, 64, 4, 1),
                    make_config(64, 32, 4, 2)};
    } else {
      const bool short_keys = batch.max_kv_len() <= (batch.causal ? kShortKeys : kMidKeys);
      candidates = {short_keys ? make_config(64, 64, 4, 1) : make_config(128, 64, 8, 1),
                    make_config(64, 64, 4, 1), make_config(64, 32, 4, 2)};
    }
    if (batch.kv_fp8()) {
      // Unmeasured: the same shapes through the stage pipeline (the split one has no fp8 form).
      for (KernelConfig& config : candidates) {
        if (config.get("stages") == 1) {
          config = make_config(int(config.get("tile_m")), int(config.get("tile_n")),
                               int(config.get("warps")), 2);
        }
      }
    }
    for (const KernelConfig& config : candidates) {
      const Sm80Config c(config, batch);
      if (c.check(head_dim, v_head_dim) == flash_fwd::sm80_mma::kOk &&
          (target.max_shared_per_block <= 0 ||
           c.shared_bytes(head_dim, v_head_dim) <= target.max_shared_per_block)) {
        return config;
      }
    }
    return candidates.back();
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (Support s = supports_sm80_target(target, "mma.sync bf16, cp.async"); !s) return s;
    if (Support s = gathered_kv_supports(batch); !s) return s;
    const ModelShape& m = batch.spec.model;
    if (Support s = config_has_exactly(config, {"tile_m", "tile_n", "warps", "stages"}, name()); !s)
      return s;
    const Sm80Config c(config, batch);
    const int v_head_dim = m.effective_v_head_dim();
    const int rule = c.check(m.head_dim, v_head_dim);
    if (rule != flash_fwd::sm80_mma::kOk)
      return Support::no(describe_rule(rule, c, m.head_dim, v_head_dim));
    return supports_shared_bytes(c.shared_bytes(m.head_dim, v_head_dim), target);
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    return {gathered_kv_program(*this, batch, config, target, "kernels/flash_fwd/sm80_mma.cuh",
                                attention_kernel(batch, Sm80Config(config, batch)))};
  }

  std::unique_ptr<Launcher> prepare_with_lse(Problem& problem, const KernelConfig& config,
                                             ExecContext& context, float* lse) const override {
    const Batch& batch = problem.batch();
    ATTN_ASSERT(problem.backend() == Backend::cuda, "sm80_mma needs a device problem");
    const Support support = check(batch, config, context.target);
    ATTN_ASSERT(support.ok, support.reason);
    const Sm80Config c(config, batch);
    const ModelShape& m = batch.spec.model;
    const JitProgram program = programs(batch, config, context.target).front();
    CUfunction attention = context.loader->function(program, attention_kernel(batch, c));
    CUfunction gather = context.loader->function(program, kGatherKvKernel);
    const int smem = c.shared_bytes(m.head_dim, m.effective_v_head_dim());
    allow_dynamic_shared_memory(context, attention, smem);

    // Contiguous K [total_kv, kv_heads, head_dim] and V [total_kv, kv_heads, v_head_dim],
    // gathered once from the paged pool.
    std::vector<DeviceBuffer> buffers = gather_kv_contiguous(problem, context, gather);
    const std::vector<int32_t> tiles = flash_fwd_tile_schedule(batch, c.tile_m, c.tile_n);
    buffers.push_back(upload_array(*context.cuda, tiles));

    FlashFwdParams p{};
    p.q = problem.q();
    p.k = buffers[0].pointer();
    p.v = buffers[1].pointer();
    p.out = problem.out();
    p.lse = lse;
    p.cu_seqlens_q = problem.cu_seqlens_q();
    p.cu_seqlens_kv = static_cast<const int*>(buffers[2].pointer());
    p.tiles = static_cast<const int*>(buffers[3].pointer());
    p.num_q_heads = m.num_q_heads;
    p.num_kv_heads = m.num_kv_heads;
    p.group = batch.spec.group_size();
    p.scale_log2 = float(double(batch.softmax_scale) * kLog2e);
    if (c.fp8) {
      p.k_scale = upload_kv_scales(*context.cuda, batch.k_scales, m.num_kv_heads, buffers);
      p.v_scale = upload_kv_scales(*context.cuda, batch.v_scales, m.num_kv_heads, buffers);
    }

    LaunchShape shape;
    shape.grid_x = unsigned(tiles.size() / 2);
    shape.grid_y = unsigned(m.num_q_heads);
    shape.block_x = unsigned(sm80_attention::threads(c.warps));
    shape.shared_bytes = unsigned(smem);
    return std::make_unique<ParamsLauncher<FlashFwdParams>>(context, attention, shape, p,
                                                            std::move(buffers));
  }

  Work work(const Batch& batch) const override { return flash_fwd_work(batch); }

 private:
  static std::string attention_kernel(const Batch& batch, const Sm80Config& c) {
    return "attn::flash_fwd_sm80_mma<" + std::to_string(dtype_code_of(batch.spec.model.dtype)) +
           ", " + std::to_string(batch.spec.model.head_dim) + ", " + std::to_string(c.tile_m) +
           ", " + std::to_string(c.tile_n) + ", " + std::to_string(c.warps) + ", " +
           std::to_string(c.stages) + ", " + (batch.causal ? "true" : "false") +
           (c.fp8 ? ", " + std::to_string(batch.spec.model.effective_v_head_dim()) + ", true"
                  : v_head_dim_argument(batch.spec.model)) +
           ">";
  }
};

}  // namespace

std::unique_ptr<Variant> make_flash_fwd_sm80_mma() {
  return std::make_unique<Sm80MmaVariant>();
}

}  // namespace attn
