// Host side of mla_decode.sm80_mma (device code: sm80_mma.cuh, rules: sm80_mma_traits.hpp, the
// split of the keys over CTAs and the launch: mla_split_plan.hpp, mla_launch.hpp, shared with the
// Hopper variants).
#include <algorithm>

#include "kernels/config_axes.hpp"
#include "kernels/dtype_code_of.hpp"
#include "kernels/launch_inputs.hpp"
#include "kernels/mla_decode/mla_decode_variants.hpp"
#include "kernels/mla_decode/mla_launch.hpp"
#include "kernels/mla_decode/sm80_mma_traits.hpp"
#include "kernels/params_launcher.hpp"
#include "kernels/problem.hpp"
#include "kernels/rule_message.hpp"

namespace attn {

namespace {

namespace traits = mla_decode::sm80_mma;

// A config of the space with the batch's latent widths and cache dtype: what the traits check.
struct MlaSm80Config {
  int block_tokens, warps, m_tiles, stages, num_splits;
  bool qk_by_dims;
  int rank, rope;
  bool kv_fp8;
  MlaSm80Config(const KernelConfig& c, const Batch& batch)
      : block_tokens(int(c.get("block_tokens"))),
        warps(int(c.get("warps"))),
        m_tiles(int(c.get("m_tiles"))),
        stages(int(c.get("stages"))),
        num_splits(int(c.get("num_splits"))),
        qk_by_dims(c.get("qk_by_dims") != 0),
        rank(batch.spec.model.kv_lora_rank),
        rope(batch.spec.model.qk_rope_head_dim),
        kv_fp8(batch.kv_fp8()) {}
  int check() const {
    return traits::check(rank, rope, m_tiles, block_tokens, warps, stages, qk_by_dims, kv_fp8);
  }
  int shared_bytes() const {
    return traits::shared_bytes(rank, rope, m_tiles, block_tokens, warps, stages, qk_by_dims,
                                kv_fp8);
  }
};

const ConfigAxes& axes() {
  static const ConfigAxes kAxes{
      {"block_tokens", {16, 32, 64, 128}, "latent rows per compute block (pipeline stage)", 32},
      {"warps", {4, 8}, "warps per CTA: each takes a share of a block's keys and of the output", 4},
      {"m_tiles", {1, 2, 4}, "16-row mma tiles of (query token, q head) rows per CTA", 1},
      {"stages", {2, 3, 4}, "cp.async pipeline depth: blocks in flight", 2},
      {"num_splits", {0, 1, 2, 4, 8, 16, 32, 64}, "splits of each sequence's keys; 0 = auto", 0},
      {"qk_by_dims",
       {0, 1},
       "Q K^T split over the warps by keys (0: Q re-read from shared memory each block) or by "
       "width (1: Q's slice in registers, partial scores summed in shared memory)",
       0},
  };
  return kAxes;
}

class MlaSm80MmaVariant : public Variant {
 public:
  std::string name() const override { return "mla_decode.sm80_mma"; }
  Family family() const override { return Family::mla_decode; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "mma.sync m16n8k16 over (query token, q head) rows; each latent block read once for "
           "all of them; keys split across warps for Q K^T and output columns for P V; split-KV "
           "merged in-kernel by LSE";
  }

  // The family's scope over a latent cache of Q's 16-bit dtype or fp8 e4m3 (one scale; its rows
  // are converted to Q's dtype in shared memory) and rope widths that keep latent rows whole
  // 128-byte lines.
  FeatureSet features() const override {
    return mla_decode_common_features()
        .with(feature::kKvDtype, {"fp8_e4m3.per_tensor"})
        .with(feature::kQkRopeHeadDim, {64, 128});
  }

  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    return axes().space();
  }

  // From `attn-tune tune --strategy exhaustive` on an H200 (BENCHMARKS.md, mla_decode): under 32
  // rows per sequence (16 q heads, one query token) Q K^T split by width over 32-key blocks (TP8
  // preset: 131.8 us, against 149.0 split by keys); from 32 rows, two m16 tiles over 64-key
  // blocks split by keys (128 heads: 447.9 us, against 459.1 by width with one tile). Then the
  // largest block, and the most tiles, that fit.
  KernelConfig default_config(const Batch& batch, const Target& target) const override {
    KernelConfig config = axes().defaults();
    int64_t rows = 0;
    for (int s = 0; s < batch.num_seqs; ++s) rows = std::max(rows, mla_rows_of(batch, s));
    if (rows >= 32) {
      config.set("m_tiles", 2);
      config.set("block_tokens", 64);
    } else {
      config.set("qk_by_dims", 1);
    }
    auto fits = [&](const KernelConfig& k) {
      const MlaSm80Config c(k, batch);
      return c.check() == traits::kOk &&
             (target.max_shared_per_block <= 0 || c.shared_bytes() <= target.max_shared_per_block);
    };
    while (!fits(config) && config.get("block_tokens") > 16) {
      config.set("block_tokens", config.get("block_tokens") / 2);
    }
    while (!fits(config) && config.get("m_tiles") > 1) {
      config.set("m_tiles", config.get("m_tiles") / 2);
    }
    if (!fits(config)) config.set("qk_by_dims", 0);
    return config;
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (Support s = supports_sm80_target(target, "mma.sync bf16, cp.async"); !s) return s;
    if (Support s = mla_decode_supports_batch(batch); !s) return s;
    if (Support s = axes().has_exactly(config, name()); !s) return s;
    const MlaSm80Config c(config, batch);
    const ModelShape& m = batch.spec.model;
    const int rule = c.check();
    if (rule != traits::kOk) {
      return Support::no(
          fill_rule(traits::rule_text(rule),
                    {{"rank", m.kv_lora_rank},
                     {"rank_step", 16 * c.warps},
                     {"rope", m.qk_rope_head_dim},
                     {"keys_per_warp_step", 8 * c.warps},
                     {"shared_bytes", c.shared_bytes()},
                     {"shared_limit", traits::kMaxSharedBytes},
                     {"register_estimate",
                      traits::register_estimate(m.kv_lora_rank, c.m_tiles, c.block_tokens, c.warps,
                                                c.qk_by_dims, m.qk_rope_head_dim)},
                     {"register_limit", traits::kMaxRegisterEstimate}}));
    }
    return supports_split_launch(c.shared_bytes(), c.num_splits, traits::kMaxSplits, target,
                                 "planned");
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    return {mla_decode_program(full_name(config), batch, target, "kernels/mla_decode/sm80_mma.cuh",
                               kernel_name(MlaSm80Config(config, batch), batch.spec.model.dtype))};
  }

  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    const Batch& batch = problem.batch();
    ATTN_ASSERT(problem.backend() == Backend::cuda, "mla_decode.sm80_mma needs a device problem");
    const Support support = check(batch, config, context.target);
    ATTN_ASSERT(support.ok, support.reason);
    const MlaSm80Config c(config, batch);
    const JitProgram program = programs(batch, config, context.target).front();
    MlaLaunchSpec spec;
    spec.kernel = context.loader->function(program, program.kernels.front());
    spec.tile_rows = traits::tile_rows(c.m_tiles);
    spec.block_tokens = c.block_tokens;
    spec.num_splits = c.num_splits;
    spec.max_splits = traits::kMaxSplits;
    spec.threads = traits::threads(c.warps);
    spec.shared_bytes = c.shared_bytes();
    // fp8: the latent pool holds code = value / scale, one scale for the cache
    // (mla_decode_variants.hpp).
    spec.kv_scale = c.kv_fp8 ? batch.k_scales.at(0) : 1.0f;
    MlaLaunch launch = prepare_mla_launch(problem, context, spec);
    auto launcher = std::make_unique<ParamsLauncher<MlaSm80Params>>(
        context, spec.kernel, launch.shape, launch.params, std::move(launch.owned));
    launcher->set_plan(launch.plan);
    return launcher;
  }

  Work work(const Batch& batch) const override { return mla_decode_work(batch); }

 private:
  static std::string kernel_name(const MlaSm80Config& c, DType dtype) {
    return "attn::mla_decode_sm80_mma<" + std::to_string(dtype_code_of(dtype)) + ", " +
           std::to_string(c.rank) + ", " + std::to_string(c.rope) + ", " +
           std::to_string(c.m_tiles) + ", " + std::to_string(c.block_tokens) + ", " +
           std::to_string(c.warps) + ", " + std::to_string(c.stages) + ", " +
           (c.qk_by_dims ? "true" : "false") + ", " + (c.kv_fp8 ? "true" : "false") + ">";
  }
};

}  // namespace

std::unique_ptr<Variant> make_mla_decode_sm80_mma() {
  return std::make_unique<MlaSm80MmaVariant>();
}

}  // namespace attn
