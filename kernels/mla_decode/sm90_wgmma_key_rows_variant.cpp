// Host side of mla_decode.sm90_wgmma_key_rows (device code: sm90_wgmma_key_rows.cuh, rules:
// sm90_wgmma_key_rows_traits.hpp; the split of the keys and the launch: mla_split_plan.hpp,
// mla_launch.hpp, shared with the other GPU variants).
#include <algorithm>

#include "kernels/config_axes.hpp"
#include "kernels/dtype_code_of.hpp"
#include "kernels/launch_inputs.hpp"
#include "kernels/mla_decode/mla_decode_variants.hpp"
#include "kernels/mla_decode/mla_launch.hpp"
#include "kernels/mla_decode/sm90_wgmma_key_rows_traits.hpp"
#include "kernels/problem.hpp"

namespace attn {

namespace {

namespace traits = mla_decode::sm90_wgmma_key_rows;

// A config of the space with the batch's latent widths and page size: what the traits check.
struct KeyRowsConfig {
  int tile_rows, num_splits;
  int rank, rope, page_size;
  bool kv_fp8;
  KeyRowsConfig(const KernelConfig& c, const Batch& batch)
      : tile_rows(int(c.get("tile_rows"))),
        num_splits(int(c.get("num_splits"))),
        rank(batch.spec.model.kv_lora_rank),
        rope(batch.spec.model.qk_rope_head_dim),
        page_size(batch.page_size),
        kv_fp8(batch.kv_fp8()) {}
  int check() const { return traits::check(rank, rope, tile_rows, page_size, kv_fp8); }
  int shared_bytes() const { return traits::shared_bytes(rank, rope, tile_rows, kv_fp8); }
  int box_tokens() const { return traits::box_tokens(page_size); }
};

const ConfigAxes& axes() {
  static const ConfigAxes kAxes{
      {"tile_rows",
       {16, 32},
       "(query token, q head) rows per CTA: the N of every wgmma (more rows take more CTAs, each "
       "reading the sequence's latent rows again)",
       16},
      {"num_splits", {0, 1, 2, 4, 8, 16, 32, 64}, "splits of each sequence's keys; 0 = auto", 0},
  };
  return kAxes;
}

class MlaSm90WgmmaKeyRowsVariant : public Variant {
 public:
  std::string name() const override { return "mla_decode.sm90_wgmma_key_rows"; }
  Family family() const override { return Family::mla_decode; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "wgmma with the 64 keys of a block as M rows and 16 or 32 (query token, q head) rows "
           "as N: no padding at 16 heads; latent blocks loaded by TMA, two consumer warpgroups "
           "taking alternate blocks; an fp8 cache's codes converted in registers; split-KV "
           "merged in-kernel by LSE (Hopper)";
  }

  // Latent caches of Q's 16-bit dtype or fp8 e4m3 (one scale: the codes become fp16 operands in
  // registers) and rope widths that keep latent rows whole 64-column boxes.
  FeatureSet features() const override {
    return mla_decode_common_features()
        .with(feature::kKvDtype, {"fp8_e4m3.per_tensor"})
        .with(feature::kQkRopeHeadDim, {64, 128});
  }

  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    return axes().space();
  }

  // 32 rows where a sequence has more than 16 and they fit the registers (ranks up to 256), else
  // 16.
  KernelConfig default_config(const Batch& batch, const Target&) const override {
    KernelConfig config = axes().defaults();
    int64_t max_rows = 0;
    for (int s = 0; s < batch.num_seqs; ++s) max_rows = std::max(max_rows, mla_rows_of(batch, s));
    const ModelShape& m = batch.spec.model;
    if (max_rows > 16 && traits::check(m.kv_lora_rank, m.qk_rope_head_dim, 32) == traits::kOk) {
      config.set("tile_rows", 32);
    }
    return config;
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    return mla_sm90_supports(batch, config, target, axes(), name(), [&] {
      const KeyRowsConfig c(config, batch);
      const int rule = c.check();
      return MlaSm90Rules{
          rule,
          traits::rule_text(rule),
          {c.rank, c.rope, c.page_size, c.shared_bytes(), traits::kMaxSharedBytes,
           traits::register_estimate(c.rank, c.tile_rows, c.kv_fp8), traits::kMaxRegisters},
          c.num_splits,
          traits::kMaxSplits};
    });
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    const KeyRowsConfig c(config, batch);
    JitProgram program = mla_decode_program(
        full_name(config), batch, target, "kernels/mla_decode/sm90_wgmma_key_rows.cuh",
        "attn::mla_decode_sm90_wgmma_key_rows<" +
            std::to_string(dtype_code_of(batch.spec.model.dtype)) + ", " + std::to_string(c.rank) +
            ", " + std::to_string(c.rope) + ", " + std::to_string(c.tile_rows) + ", " +
            std::to_string(c.box_tokens()) + ", " + (c.kv_fp8 ? "true" : "false") + ">");
    program.name += ".box" + std::to_string(c.box_tokens());
    return {program};
  }

  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    const Batch& batch = problem.batch();
    ATTN_ASSERT(problem.backend() == Backend::cuda, name() + " needs a device problem");
    const Support support = check(batch, config, context.target);
    ATTN_ASSERT(support.ok, support.reason);
    const KeyRowsConfig c(config, batch);
    const JitProgram program = programs(batch, config, context.target).front();
    MlaLaunchSpec launch;
    launch.kernel = context.loader->function(program, program.kernels.front());
    launch.tile_rows = c.tile_rows;
    launch.block_tokens = traits::kBlock;
    launch.num_splits = c.num_splits;
    launch.max_splits = traits::kMaxSplits;
    launch.threads = traits::kThreads;
    launch.shared_bytes = c.shared_bytes();
    // fp8: the latent pool holds code = value / scale, one scale for the cache.
    launch.kv_scale = c.kv_fp8 ? batch.k_scales.at(0) : 1.0f;
    return launch_mla_sm90(problem, context, launch, c.box_tokens());
  }

  Work work(const Batch& batch) const override { return mla_decode_work(batch); }
};

}  // namespace

std::unique_ptr<Variant> make_mla_decode_sm90_wgmma_key_rows() {
  return std::make_unique<MlaSm90WgmmaKeyRowsVariant>();
}

}  // namespace attn
