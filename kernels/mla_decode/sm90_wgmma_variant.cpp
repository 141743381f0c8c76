// Host side of mla_decode.sm90_wgmma (device code: sm90_wgmma.cuh, rules: sm90_wgmma_traits.hpp,
// the split of the keys over CTAs and the launch: mla_split_plan.hpp, mla_launch.hpp, shared with
// the other GPU variants).
#include "kernels/config_axes.hpp"
#include "kernels/dtype_code_of.hpp"
#include "kernels/launch_inputs.hpp"
#include "kernels/mla_decode/mla_decode_variants.hpp"
#include "kernels/mla_decode/mla_launch.hpp"
#include "kernels/mla_decode/sm90_wgmma_traits.hpp"
#include "kernels/problem.hpp"

namespace attn {

namespace {

namespace traits = mla_decode::sm90_wgmma;

// A config of the space with the batch's latent widths and page size: what the traits check.
struct MlaSm90Config {
  int block_tokens, stages, num_splits;
  bool qk_split;
  int rank, rope, page_size;
  MlaSm90Config(const KernelConfig& c, const Batch& batch)
      : block_tokens(int(c.get("block_tokens"))),
        stages(int(c.get("stages"))),
        num_splits(int(c.get("num_splits"))),
        qk_split(c.get("qk_split") != 0),
        rank(batch.spec.model.kv_lora_rank),
        rope(batch.spec.model.qk_rope_head_dim),
        page_size(batch.page_size) {}
  int check() const { return traits::check(rank, rope, block_tokens, stages, page_size, qk_split); }
  int shared_bytes() const {
    return traits::shared_bytes(rank, rope, block_tokens, stages, qk_split);
  }
  int box_tokens() const { return traits::box_tokens(page_size, block_tokens); }
};

const ConfigAxes& axes() {
  static const ConfigAxes kAxes{
      {"block_tokens",
       {32, 64},
       "latent rows per block (pipeline stage, one wgmma N of Q K^T)",
       64},
      {"stages", {2, 3, 4}, "TMA pipeline depth: blocks in flight", 2},
      {"num_splits", {0, 1, 2, 4, 8, 16, 32, 64}, "splits of each sequence's keys; 0 = auto", 0},
      {"qk_split",
       {0, 1},
       "Q K^T computed whole by each consumer warpgroup (0) or split by keys between them (1: "
       "half the work; row maxima and P exchanged through shared memory)",
       1},
  };
  return kAxes;
}

class MlaSm90WgmmaVariant : public Variant {
 public:
  std::string name() const override { return "mla_decode.sm90_wgmma"; }
  Family family() const override { return Family::mla_decode; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "wgmma over 64 (query token, q head) rows per CTA; latent blocks loaded by TMA from a "
           "producer warp; two consumer warpgroups each take half of the output columns; "
           "split-KV merged in-kernel by LSE (Hopper)";
  }

  // The family's scope over a 16-bit latent cache of Q's dtype (the TMA boxes are 16-bit: an fp8
  // cache runs on mla_decode.sm80_mma) and rope widths that keep latent rows whole 64-column
  // boxes.
  FeatureSet features() const override {
    return mla_decode_common_features().with(feature::kQkRopeHeadDim, {64, 128});
  }

  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    return axes().space();
  }

  // Q K^T split by keys over 64-key blocks in two stages (the largest block; at DeepSeek-V3's
  // widths three stages of it do not fit), else 32-key blocks with as many stages as fit.
  KernelConfig default_config(const Batch& batch, const Target& target) const override {
    KernelConfig config = axes().defaults();
    auto fits = [&](const KernelConfig& k) {
      const MlaSm90Config c(k, batch);
      return c.check() == traits::kOk &&
             (target.max_shared_per_block <= 0 || c.shared_bytes() <= target.max_shared_per_block);
    };
    if (fits(config)) return config;
    config.set("block_tokens", 32);
    for (int stages : {4, 3, 2}) {
      config.set("stages", stages);
      if (fits(config)) return config;
    }
    return axes().defaults();
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    return mla_sm90_supports(batch, config, target, axes(), name(), [&] {
      const MlaSm90Config c(config, batch);
      const int rule = c.check();
      return MlaSm90Rules{
          rule,
          traits::rule_text(rule),
          {c.rank, c.rope, c.page_size, c.shared_bytes(), traits::kMaxSharedBytes,
           traits::register_estimate(c.rank, c.block_tokens, c.qk_split), traits::kMaxRegisters},
          c.num_splits,
          traits::kMaxSplits};
    });
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    const MlaSm90Config c(config, batch);
    JitProgram program =
        mla_decode_program(full_name(config), batch, target, "kernels/mla_decode/sm90_wgmma.cuh",
                           kernel_name(c, batch.spec.model.dtype));
    program.name += ".box" + std::to_string(c.box_tokens());
    return {program};
  }

  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    const Batch& batch = problem.batch();
    ATTN_ASSERT(problem.backend() == Backend::cuda, "mla_decode.sm90_wgmma needs a device problem");
    const Support support = check(batch, config, context.target);
    ATTN_ASSERT(support.ok, support.reason);
    const MlaSm90Config c(config, batch);
    const JitProgram program = programs(batch, config, context.target).front();
    MlaLaunchSpec launch;
    launch.kernel = context.loader->function(program, program.kernels.front());
    launch.tile_rows = traits::kRows;
    launch.block_tokens = c.block_tokens;
    launch.num_splits = c.num_splits;
    launch.max_splits = traits::kMaxSplits;
    launch.threads = traits::kThreads;
    launch.shared_bytes = c.shared_bytes();
    return launch_mla_sm90(problem, context, launch, c.box_tokens());
  }

  Work work(const Batch& batch) const override { return mla_decode_work(batch); }

 private:
  static std::string kernel_name(const MlaSm90Config& c, DType dtype) {
    return "attn::mla_decode_sm90_wgmma<" + std::to_string(dtype_code_of(dtype)) + ", " +
           std::to_string(c.rank) + ", " + std::to_string(c.rope) + ", " +
           std::to_string(c.block_tokens) + ", " + std::to_string(c.stages) + ", " +
           std::to_string(c.box_tokens()) + ", " + (c.qk_split ? "true" : "false") + ">";
  }
};

}  // namespace

std::unique_ptr<Variant> make_mla_decode_sm90_wgmma() {
  return std::make_unique<MlaSm90WgmmaVariant>();
}

}  // namespace attn
