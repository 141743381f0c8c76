// Host side of paged_decode.sm80_mma (device code: sm80_mma.cuh, rules: sm80_mma_traits.hpp).
#include <numeric>

#include "kernels/config_axes.hpp"
#include "kernels/launch_inputs.hpp"
#include "kernels/paged_decode/paged_decode_variants.hpp"
#include "kernels/paged_decode/sm80_mma_launch.hpp"
#include "kernels/paged_decode/sm80_mma_traits.hpp"
#include "kernels/rule_message.hpp"

namespace attn {

namespace {

// tile_tokens: keys per compute block (one pipeline stage); a block spans several pages or part
// of one, whatever the page size.
struct Sm80MmaConfig {
  int tile_tokens, warps, stages, num_splits;
  explicit Sm80MmaConfig(const KernelConfig& c)
      : tile_tokens(int(c.get("tile_tokens"))),
        warps(int(c.get("warps"))),
        stages(int(c.get("stages"))),
        num_splits(int(c.get("num_splits"))) {}
  int shared_bytes(int head_dim, int kv_bytes) const {
    return paged_decode::sm80_mma::shared_bytes(head_dim, warps, tile_tokens, stages, kv_bytes);
  }
};

// Bytes of one K/V element: 1 for fp8 codes, 2 for bf16/fp16.
int kv_bytes(const Batch& batch) {
  return batch.kv_fp8() ? 1 : 2;
}

// The rule a config breaks, in words (the text lives beside the rule in sm80_mma_traits.hpp).
std::string describe_rule(int rule, const Sm80MmaConfig& c, int head_dim, int kv_bytes) {
  namespace traits = paged_decode::sm80_mma;
  return fill_rule(
      traits::rule_text(rule),
      {{"head_dim", head_dim},
       {"keys_per_slice", 16 * c.warps},
       {"shared_bytes", c.shared_bytes(head_dim, kv_bytes)},
       {"shared_limit", traits::kMaxSharedBytes},
       {"register_estimate", traits::register_estimate(head_dim, c.warps, c.tile_tokens, kv_bytes)},
       {"register_limit", traits::kMaxRegisterEstimate},
       {"copy_passes", traits::copy_passes(head_dim, kv_bytes, c.warps, c.tile_tokens)},
       {"copy_pass_limit", traits::kMaxPaddedCopyPasses}});
}

// The tunable axes; the defaults are the fastest of a sweep on an H200 (BENCHMARKS.md,
// paged_decode): two stages halve the shared memory of three, and the extra CTAs per SM hide more
// latency than the deeper pipeline did. Re-checked after the barrier per block went (8afcf39): at
// 4 splits st2.t64.w4 294.75 us vs st3 308.35, and t128.w8 lost on lognormal-96 and page 1. fp8
// K/V (26e61ec+): t64.st2 195.3 us on fp8 64 x 4096 vs t64.st3 196.9, t256.w8 207.0, t128 220.6.
const ConfigAxes& axes() {
  static const ConfigAxes kAxes{
      {"tile_tokens", {16, 32, 64, 128, 256}, "keys per compute block (pipeline stage)", 64},
      {"warps", {1, 2, 4, 8}, "warps per CTA, each with its own slice of every block's keys", 4},
      {"stages", {2, 3, 4}, "cp.async pipeline depth: blocks in flight", 2},
      {"num_splits", {0, 1, 2, 4, 8, 16, 32}, "splits of each sequence's keys; 0 = auto", 0},
  };
  return kAxes;
}

class Sm80MmaVariant : public Variant {
 public:
  std::string name() const override { return "paged_decode.sm80_mma"; }
  Family family() const override { return Family::paged_decode; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "GQA heads packed into mma.sync m16n8k16 rows, cp.async K/V pipeline, one wave of CTAs "
           "each given a chunk of one sequence or an equal share of the keys laid end to end, "
           "whichever the planner estimates faster (split-KV merged in-kernel by LSE)";
  }

  FeatureSet features() const override { return paged_decode_features(); }

  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    return axes().space();
  }

  // The planner's tile for the batch, with tile_tokens halved until the config fits; the split of
  // the keys over CTAs is planned at launch (num_splits 0: decode_work_plan.hpp, automatic).
  // From 64-key blocks over 4 warps (the default), measured on an H200 (the decode-shapes suite,
  // attn-tune tune --strategy halving -a num_splits=0 over both tensor-core variants, and the
  // planner's choice against the one before it in one call; µs):
  // - At most one (sequence, KV head) unit per SM, head dims up to 128, and enough keys for a
  //   128-key block per SM: 128-key blocks over 8 warps, one CTA per SM (GQA 8 1 x 65536 79.6
  //   against 82.6, MQA 128 x 8192 141.9 / 145.4 (sm90_tma's t128.w4), 64 x 16384 145.0 /
  //   151.3); fp8 K/V in the head-rows form up to two units per SM (GQA 16 128 x 8192 160.9 /
  //   167.3, MQA 256 x 4096 90.3 / 95.2; 16-bit GQA 16 at 256 units kept t64.w4: 145.2 against
  //   157.0). Not fp8 in the key-rows form, whose warps want 32 keys each (GQA 4 1 x 131072
  //   90.6 against 81.5 with t128.w4).
  // - fp8 K/V in the key-rows form (GQA groups up to 8, head dims up to 128,
  //   sm80_mma_block_key_rows.cuh): 64-key blocks over 2 warps where the automatic schedule then
  //   keeps every sequence whole in one wave (GQA 4 and 8, 64 x 4096: 139.5-140.9 against
  //   145.7-150.0 for t128.w4, whose plan splits and merges), else 128 keys over 4 warps (32 a
  //   warp: GQA 8 32 x 8192 142.1 against 147.3 with t64.w4; GQA 1 lognormal-64 782.0 against
  //   766.6, the one shape t64.w4 won by more than 2%).
  // - Head dim 256 with 16-bit K/V unless the GQA group fills the mma rows: 32-key blocks over 2
  //   warps (their 241 registers at t64.w4 leave too few warps per SM): GQA 4 286.9 against
  //   352.8, GQA 2 280.8 / 338.2, but MQA 109.7 / 104.6. fp8 K/V at head dims 192 and 256 keep
  //   t64.w4 (the worst case of either tile is smaller with it; 8 shapes, µs t64.w4 / t32.w2): 512
  //   units (64 x 4096, GQA 4 and 8): d192 279.1 / 334.1 and 282.2 / 336.2, d256 323.7 / 314.2 and
  //   331.0 / 321.8; 256 units (32 x 4096): d192 152.5 / 144.4 and 155.8 / 148.5, d256 166.7 /
  //   171.5; GQA 7 d256 64 x 2048 92.5 / 97.7.
  // Head dim 192 keeps t64.w4 like 128: its Q fragments are re-read from shared memory, so ptxas
  // gives it 166 registers at t64.w4 on sm_90a, as many as 128 (256: 241); 80 and 96 take 120
  // and 126.
  KernelConfig default_config(const Batch& batch, const Target& target) const override {
    const int head_dim = batch.spec.model.head_dim;
    KernelConfig config = axes().defaults();
    auto set_tile = [&](int tile_tokens, int warps) {
      config.set("tile_tokens", tile_tokens);
      config.set("warps", warps);
    };
    const int group = batch.spec.group_size();
    const int64_t units = int64_t(batch.num_seqs) * batch.spec.model.num_kv_heads;
    const int64_t most_units =
        int64_t(target.sm_count) * (batch.kv_fp8() && !key_rows(batch) ? 2 : 1);
    if (key_rows(batch) && batch.kv_fp8()) {
      set_tile(64, 2);
      if (!keeps_sequences_whole(batch, target, Sm80MmaConfig(config))) set_tile(128, 4);
    } else if (head_dim <= 128 && units <= most_units && fills_sms(batch, target, 128)) {
      set_tile(128, 8);
    } else if (head_dim >= 256 && group < 16 && !batch.kv_fp8()) {
      set_tile(32, 2);
    }
    auto fits = [&](const KernelConfig& k) {
      const Sm80MmaConfig c(k);
      return paged_decode::sm80_mma::check(head_dim, c.warps, c.tile_tokens, c.stages,
                                           kv_bytes(batch)) == paged_decode::sm80_mma::kOk &&
             (target.max_shared_per_block <= 0 ||
              c.shared_bytes(head_dim, kv_bytes(batch)) <= target.max_shared_per_block);
    };
    while (!fits(config) && config.get("tile_tokens") > 16 * config.get("warps")) {
      config.set("tile_tokens", config.get("tile_tokens") / 2);
    }
    return config;
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (Support s = supports_sm80_target(target, "mma.sync bf16, cp.async"); !s) return s;
    if (Support s = sm80_mma_supports_limits(batch); !s) return s;
    if (Support s = axes().has_exactly(config, name()); !s) return s;
    const Sm80MmaConfig c(config);
    const int head_dim = batch.spec.model.head_dim;
    const int rule =
        paged_decode::sm80_mma::check(head_dim, c.warps, c.tile_tokens, c.stages, kv_bytes(batch));
    if (rule != paged_decode::sm80_mma::kOk)
      return Support::no(describe_rule(rule, c, head_dim, kv_bytes(batch)));
    return supports_split_launch(c.shared_bytes(head_dim, kv_bytes(batch)), c.num_splits,
                                 paged_decode::sm80_mma::kMaxSplits, target, "auto");
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    const Sm80MmaConfig c(config);
    const int code = dtype_code_of(batch.spec.model.dtype);
    const int head_dim = batch.spec.model.head_dim;
    JitProgram program;
    program.name = full_name(config) + ".d" + std::to_string(head_dim) + "." +
                   to_string(batch.spec.model.dtype) + (batch.kv_fp8() ? ".kv_fp8" : "") +
                   (key_rows(batch) ? ".key_rows" : "");
    program.source = "#include \"kernels/paged_decode/sm80_mma.cuh\"\n";
    program.kernels = {attention_kernel(code, batch.kv_fp8(), head_dim, key_rows(batch), c)};
    program.arch = target.arch;
    return {program};
  }

  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    const Batch& batch = problem.batch();
    ATTN_ASSERT(problem.backend() == Backend::cuda, "sm80_mma needs a device problem");
    const Support support = check(batch, config, context.target);
    ATTN_ASSERT(support.ok, support.reason);
    const Sm80MmaConfig c(config);
    const ModelShape& m = batch.spec.model;
    const JitProgram program = programs(batch, config, context.target).front();
    const int code = dtype_code_of(m.dtype);
    CUfunction attention = context.loader->function(
        program, attention_kernel(code, batch.kv_fp8(), m.head_dim, key_rows(batch), c));
    const int smem = c.shared_bytes(m.head_dim, kv_bytes(batch));
    allow_dynamic_shared_memory(context, attention, smem);

    // Blocks count from the first visible key; with num_splits 0 the planner gives each
    // (sequence, KV head) its own CTAs where they all fit one wave, else deals the blocks to one
    // wave of CTAs in equal shares (decode_work_plan.hpp, automatic).
    Sm80MmaLaunch launch = prepare_tensorcore_launch(
        problem, context, attention, c.tile_tokens, /*aligned_blocks=*/false, c.num_splits,
        DecodeSchedule::automatic, smem, paged_decode::sm80_mma::threads(c.warps));
    LaunchShape shape;
    shape.grid_x = launch.grid_x;
    shape.block_x = unsigned(paged_decode::sm80_mma::threads(c.warps));
    shape.shared_bytes = unsigned(smem);
    auto launcher = std::make_unique<ParamsLauncher<Sm80MmaParams>>(
        context, attention, shape, launch.params, std::move(launch.owned));
    launcher->set_plan(launch.plan);
    return launcher;
  }

  Work work(const Batch& batch) const override { return paged_decode_work(batch); }

 private:
  // Whether the batch's blocks of `block_tokens` keys, over every KV head, number at least the SMs.
  static bool fills_sms(const Batch& batch, const Target& target, int block_tokens) {
    const std::vector<int64_t> blocks = decode_visible_blocks(batch, block_tokens, false);
    const int64_t total = std::accumulate(blocks.begin(), blocks.end(), int64_t(0));
    return target.sm_count > 0 && total * batch.spec.model.num_kv_heads >= target.sm_count;
  }
  // Whether the automatic schedule deals every sequence whole (no split, no merge) to `c`'s CTAs,
  // their residency per SM estimated from the traits' shared memory and registers.
  static bool keeps_sequences_whole(const Batch& batch, const Target& target,
                                    const Sm80MmaConfig& c) {
    const int head_dim = batch.spec.model.head_dim, bytes = kv_bytes(batch);
    const int shared = c.shared_bytes(head_dim, bytes);
    const int resident = resident_ctas(
        target, shared, 32 * c.warps,
        paged_decode::sm80_mma::register_estimate(head_dim, c.warps, c.tile_tokens, bytes));
    const DecodeWorkInputs inputs =
        tensorcore_work_inputs(target, c.tile_tokens, /*aligned_blocks=*/false, /*num_splits=*/0,
                               DecodeSchedule::automatic, shared, c.warps, resident);
    return plan_decode_work(batch, DecodeSchedule::automatic, inputs).partial_rows == 0;
  }
  // The key-rows form where the GQA group fits the mma's 8 N columns (sm80_mma_traits.hpp).
  static bool key_rows(const Batch& batch) {
    return paged_decode::sm80_mma::key_rows(batch.spec.group_size(), batch.spec.model.head_dim);
  }
  static std::string attention_kernel(int code, bool fp8, int head_dim, bool key_rows,
                                      const Sm80MmaConfig& c) {
    return "attn::paged_decode_sm80_mma<" + std::to_string(code) + ", " + (fp8 ? "true" : "false") +
           ", " + std::to_string(head_dim) + ", " + std::to_string(c.warps) + ", " +
           std::to_string(c.tile_tokens) + ", " + std::to_string(c.stages) + ", " +
           (key_rows ? "true" : "false") + ">";
  }
};

}  // namespace

std::unique_ptr<Variant> make_paged_decode_sm80_mma() {
  return std::make_unique<Sm80MmaVariant>();
}

}  // namespace attn
