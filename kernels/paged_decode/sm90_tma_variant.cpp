// Host side of paged_decode.sm90_tma (device code: sm90_tma.cuh, rules: sm90_tma_traits.hpp): the
// sm80_mma variant's launch (sm80_mma_launch.hpp) plus TMA descriptors of the K and V pools.
#include <algorithm>
#include <utility>

#include "kernels/launch_inputs.hpp"
#include "kernels/paged_decode/paged_decode_variants.hpp"
#include "kernels/paged_decode/sm80_mma_launch.hpp"
#include "kernels/paged_decode/sm90_tma_params.hpp"
#include "kernels/paged_decode/sm90_tma_traits.hpp"

namespace attn {

std::unique_ptr<Variant> make_paged_decode_sm80_mma();

namespace {

// The cp.async path's launcher under sm90_tma's name: the same launch, the plan saying why TMA
// was not used.
class FallbackLauncher : public Launcher {
 public:
  FallbackLauncher(std::unique_ptr<Launcher> inner, std::string why)
      : inner_(std::move(inner)), why_(std::move(why)) {}
  void launch() override { inner_->launch(); }
  std::string plan() const override { return "cp.async path (" + why_ + "); " + inner_->plan(); }

 private:
  std::unique_ptr<Launcher> inner_;
  std::string why_;
};

// tile_tokens: keys per compute block (one pipeline stage), aligned to multiples of itself from
// the sequence's start; warps: compute warps (one producer warp more).
struct Sm90TmaConfig {
  int tile_tokens, warps, stages, num_splits;
  explicit Sm90TmaConfig(const KernelConfig& c)
      : tile_tokens(int(c.get("tile_tokens"))),
        warps(int(c.get("warps"))),
        stages(int(c.get("stages"))),
        num_splits(int(c.get("num_splits"))) {}
  int shared_bytes(int head_dim) const {
    return paged_decode::sm90_tma::shared_bytes(head_dim, warps, tile_tokens, stages);
  }
};

std::string describe_rule(int rule, const Sm90TmaConfig& c, int head_dim, int page_size) {
  switch (rule) {
    case paged_decode::sm90_tma::kHeadDim:
      return "head_dim " + std::to_string(head_dim) + " is not 64, 80, 96, 128, 192 or 256";
    case paged_decode::sm90_tma::kWarps:
      return "warps must be 1, 2, 4 or 8";
    case paged_decode::sm90_tma::kStages:
      return "stages must be 2, 3 or 4";
    case paged_decode::sm90_tma::kBlockTokens:
      return "tile_tokens must be a multiple of " + std::to_string(16 * c.warps) +
             " (16 keys per warp, one mma k-slice) and at most 256";
    case paged_decode::sm90_tma::kSharedMemory:
      return "needs " + std::to_string(c.shared_bytes(head_dim)) +
             " bytes of shared memory (limit " +
             std::to_string(paged_decode::sm80_mma::kMaxSharedBytes) +
             "): lower stages or tile_tokens";
    case paged_decode::sm90_tma::kRegisters:
      return "too many registers per thread (estimate " +
             std::to_string(
                 paged_decode::sm80_mma::register_estimate(head_dim, c.warps, c.tile_tokens)) +
             ", limit " + std::to_string(paged_decode::sm80_mma::kMaxRegisterEstimate) +
             "): lower tile_tokens or raise warps";
    case paged_decode::sm90_tma::kPageSize:
      return "page size " + std::to_string(page_size) + " with tile_tokens " +
             std::to_string(c.tile_tokens) +
             ": a TMA box (a page, or the block's part of one) must hold a multiple of 8 keys and "
             "tile both the block and the page";
    default:
      return "invalid config";
  }
}

class Sm90TmaVariant : public Variant {
 public:
  std::string name() const override { return "paged_decode.sm90_tma"; }
  Family family() const override { return Family::paged_decode; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "paged_decode.sm80_mma with K/V pages loaded by TMA onto mbarriers from a producer "
           "warp (Hopper)";
  }

  // All of paged_decode's features: where TMA cannot load the pages (fp8 pools: the boxes here
  // are 16-bit; pages whose boxes cannot tile the config's block, such as 1 or 48 keys), the
  // variant runs the cp.async kernel of paged_decode.sm80_mma with the same config instead of
  // declining, and its plan says so.
  FeatureSet features() const override { return paged_decode_features(); }

  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    return {
        {"tile_tokens", {16, 32, 64, 128, 256}, "keys per compute block (pipeline stage)"},
        {"warps", {1, 2, 4, 8}, "compute warps per CTA (plus one TMA producer warp)"},
        {"stages", {2, 3, 4}, "TMA pipeline depth: blocks in flight"},
        {"num_splits", {0, 1, 2, 4, 8, 16, 32}, "splits of each sequence's keys; 0 = auto"},
    };
  }

  KernelConfig default_config(const Batch& batch, const Target& target) const override {
    // sm80_mma's default shape (BENCHMARKS.md, paged_decode), shrunk until it fits. One exception:
    // 16 or more q heads per KV head at head dims 80 to 128 with between 90% and 100% of an SM
    // per (sequence, KV head) take 128-key blocks, one CTA per SM with no split. On an H200 at d128
    // (sm90_tma, t128 against t64 µs): 128 units of 8192 keys, MQA 146.24 / 155.84 and GQA 16
    // 143.42 / 154.85; every other count lost with t128: 32, 64, 256 and 512 units (2048 to 32768
    // keys), by 1.4% to 12.4%.
    const int head_dim = batch.spec.model.head_dim, warps = 4;
    const int64_t units = int64_t(batch.num_seqs) * batch.spec.model.num_kv_heads;
    const bool one_unit_per_sm = target.sm_count > 0 && units <= target.sm_count &&
                                 units * 10 >= int64_t(target.sm_count) * 9;
    const bool full_rows_d128 =
        batch.spec.group_size() >= 16 && head_dim > 64 && head_dim <= 128 && one_unit_per_sm;
    int tile = full_rows_d128 ? 128 : 64, stages = 2;
    auto fits = [&](int t) {
      const Sm90TmaConfig c(KernelConfig{
          {"tile_tokens", t}, {"warps", warps}, {"stages", stages}, {"num_splits", 0}});
      return paged_decode::sm90_tma::check(head_dim, warps, t, stages, batch.page_size) ==
                 paged_decode::sm90_tma::kOk &&
             (target.max_shared_per_block <= 0 ||
              c.shared_bytes(head_dim) <= target.max_shared_per_block);
    };
    while (!fits(tile) && tile > 16 * warps) tile /= 2;
    const KernelConfig config{
        {"tile_tokens", tile}, {"warps", warps}, {"stages", stages}, {"num_splits", 0}};
    return fallback_reason(batch, config).empty() ? config
                                                  : cp_async_->default_config(batch, target);
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (Support s = supports_sm90_target(target, "TMA, mbarrier transactions"); !s) return s;
    if (Support s = sm80_mma_supports_limits(batch); !s) return s;
    if (Support s =
            config_has_exactly(config, {"tile_tokens", "warps", "stages", "num_splits"}, name());
        !s)
      return s;
    if (!fallback_reason(batch, config).empty()) return cp_async_->check(batch, config, target);
    const Sm90TmaConfig c(config);
    const int head_dim = batch.spec.model.head_dim;
    const int rule =
        paged_decode::sm90_tma::check(head_dim, c.warps, c.tile_tokens, c.stages, batch.page_size);
    if (rule != paged_decode::sm90_tma::kOk)
      return Support::no(describe_rule(rule, c, head_dim, batch.page_size));
    return supports_split_launch(c.shared_bytes(head_dim), c.num_splits,
                                 paged_decode::sm80_mma::kMaxSplits, target, "auto");
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    if (!fallback_reason(batch, config).empty()) return cp_async_->programs(batch, config, target);
    const Sm90TmaConfig c(config);
    JitProgram program;
    program.name = full_name(config) + ".d" + std::to_string(batch.spec.model.head_dim) + "." +
                   to_string(batch.spec.model.dtype) + ".page" + std::to_string(batch.page_size);
    program.source = "#include \"kernels/paged_decode/sm90_tma.cuh\"\n";
    program.kernels = {attention_kernel(batch, c)};
    program.arch = target.arch;
    return {program};
  }

  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    const Batch& batch = problem.batch();
    ATTN_ASSERT(problem.backend() == Backend::cuda, "sm90_tma needs a device problem");
    if (const std::string why = fallback_reason(batch, config); !why.empty()) {
      return std::make_unique<FallbackLauncher>(cp_async_->prepare(problem, config, context), why);
    }
    const Support support = check(batch, config, context.target);
    ATTN_ASSERT(support.ok, support.reason);
    const Sm90TmaConfig c(config);
    const JitProgram program = programs(batch, config, context.target).front();
    CUfunction attention = context.loader->function(program, attention_kernel(batch, c));
    const int smem = c.shared_bytes(batch.spec.model.head_dim);
    allow_dynamic_shared_memory(context, attention, smem);

    // Blocks aligned to the tile from key 0 (the TMA boxes); one chunk per CTA, the split counts
    // the planner's (decode_work_plan.hpp, per-sequence schedule).
    Sm80MmaLaunch launch = prepare_tensorcore_launch(
        problem, context, attention, c.tile_tokens, /*aligned_blocks=*/true, c.num_splits,
        DecodeSchedule::per_sequence, smem, paged_decode::sm90_tma::threads(c.warps));
    Sm90TmaParams params{};
    params.base = launch.params;
    const int box = paged_decode::sm90_tma::box_tokens(batch.page_size, c.tile_tokens);
    const PagedPoolShape pool = paged_pool_shape(batch);
    const PagedPoolTensorMap k_map = paged_pool_tensor_map(context, pool, problem.k_pool(), box);
    params.k_map = k_map.map;
    params.v_map = paged_pool_tensor_map(context, pool, problem.v_pool(), box).map;
    params.token_coordinate = k_map.token_coordinate;
    LaunchShape shape;
    shape.grid_x = launch.grid_x;
    shape.block_x = unsigned(paged_decode::sm90_tma::threads(c.warps));
    shape.shared_bytes = unsigned(smem);
    auto launcher = std::make_unique<ParamsLauncher<Sm90TmaParams>>(
        context, attention, shape, params, std::move(launch.owned));
    launcher->set_plan(launch.plan);
    return launcher;
  }

  Work work(const Batch& batch) const override { return paged_decode_work(batch); }

 private:
  // Why TMA cannot load this batch's pages for this config (empty: it can): the cp.async kernel
  // runs then. A config that breaks another rule is judged by TMA's rules (and declined).
  static std::string fallback_reason(const Batch& batch, const KernelConfig& config) {
    if (batch.kv_fp8()) return "fp8 K/V: the TMA boxes here are 16-bit";
    const auto tile = config.find("tile_tokens"), warps = config.find("warps"),
               stages = config.find("stages");
    if (!tile || !warps || !stages) return {};
    if (paged_decode::sm90_tma::check(batch.spec.model.head_dim, int(*warps), int(*tile),
                                      int(*stages),
                                      batch.page_size) == paged_decode::sm90_tma::kPageSize) {
      return "pages of " + std::to_string(batch.page_size) +
             " keys: TMA boxes cannot tile them with tile_tokens " + std::to_string(*tile);
    }
    return {};
  }

  // paged_decode.sm80_mma: the same config axes, loads by cp.async.
  std::unique_ptr<Variant> cp_async_ = make_paged_decode_sm80_mma();

  static std::string attention_kernel(const Batch& batch, const Sm90TmaConfig& c) {
    return "attn::paged_decode_sm90_tma<" + std::to_string(dtype_code_of(batch.spec.model.dtype)) +
           ", " + std::to_string(batch.spec.model.head_dim) + ", " + std::to_string(c.warps) +
           ", " + std::to_string(c.tile_tokens) + ", " + std::to_string(c.stages) + ", " +
           std::to_string(paged_decode::sm90_tma::box_tokens(batch.page_size, c.tile_tokens)) + ">";
  }
};

}  // namespace

std::unique_ptr<Variant> make_paged_decode_sm90_tma() {
  return std::make_unique<Sm90TmaVariant>();
}

}  // namespace attn
