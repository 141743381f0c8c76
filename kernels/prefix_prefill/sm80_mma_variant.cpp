// Host side of prefix_prefill.sm80_mma and prefix_prefill.sm80_mma_masked: one kernel template
// (mma.cuh, rules in mma_traits.hpp); the masked variant instantiates it with EXPLICIT_MASK and
// feeds it the batch's explicit mask, the mma variant applies the causal and window rules itself.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/dtype_code_of.hpp"
#include "kernels/launch_inputs.hpp"
#include "kernels/params_launcher.hpp"
#include "kernels/prefix_prefill/prefix_prefill_variants.hpp"
#include "kernels/prefix_prefill/sm80_mma_params.hpp"
#include "kernels/prefix_prefill/sm80_mma_traits.hpp"

namespace attn {

namespace {

const char* const kAxes[] = {"block_m", "block_n", "warps", "stages", "unroll_cache", "unroll_new"};

struct MmaConfig {
  int block_m, block_n, warps, stages, unroll_cache, unroll_new;
  explicit MmaConfig(const KernelConfig& c)
      : block_m(int(c.get("block_m"))),
        block_n(int(c.get("block_n"))),
        warps(int(c.get("warps"))),
        stages(int(c.get("stages"))),
        unroll_cache(int(c.get("unroll_cache"))),
        unroll_new(int(c.get("unroll_new"))) {}
  KernelConfig to_config() const {
    return KernelConfig{
        {"block_m", block_m}, {"block_n", block_n},           {"warps", warps},
        {"stages", stages},   {"unroll_cache", unroll_cache}, {"unroll_new", unroll_new}};
  }
};

// Soft-capped logits are a compile-time flavour: the tanh stays out of the common kernel.
bool soft_cap(const Batch& batch) {
  return log2_logit_transform(batch).cap_log2 > 0.0f;
}

// V's rows and the output's: v_head_dim when the model sets one, else head_dim.
int v_head_dim(const Batch& batch) {
  return batch.spec.model.effective_v_head_dim();
}

int shared_bytes(const Batch& batch, const MmaConfig& c) {
  return prefix_prefill::sm80_mma::shared_bytes(batch.spec.model.head_dim, v_head_dim(batch),
                                                c.block_m, c.block_n, c.stages, batch.kv_fp8(),
                                                prefix_prefill_v_dim_major(batch));
}

int check_rule(const Batch& batch, const MmaConfig& c, bool explicit_mask) {
  return prefix_prefill::sm80_mma::check(batch.spec.model.head_dim, v_head_dim(batch), c.block_m,
                                         c.block_n, c.warps, c.stages, c.unroll_cache, c.unroll_new,
                                         batch.kv_fp8(), prefix_prefill_v_dim_major(batch),
                                         explicit_mask, soft_cap(batch));
}

std::string describe_rule(int rule, const Batch& batch, const MmaConfig& c, bool explicit_mask) {
  using namespace prefix_prefill::sm80_mma;
  const int head_dim = batch.spec.model.head_dim;
  switch (rule) {
    case kHeadDim:
      return "head_dim " + std::to_string(head_dim) + " with V head dim " +
             std::to_string(v_head_dim(batch)) +
             ": both must be 64, 80, 96, 128, 192 or 256, V's at most Q/K's";
    case kWarps:
      return "warps must be 1, 2, 4 or 8";
    case kStages:
      return "stages must be 2, 3 or 4";
    case kBlockM:
      return "block_m must be 16 or 32 rows per warp (block_m " + std::to_string(c.block_m) +
             " over " + std::to_string(c.warps) + " warps): one or two mma row tiles each";
    case kBlockN:
      return "block_n must be 16, 32, 64 or 128 (keys per KV tile, a multiple of the mma k16 "
             "slice)";
    case kUnroll:
      return "unroll_cache and unroll_new must be 1 or 2";
    case kSharedMemory:
      return "needs " + std::to_string(shared_bytes(batch, c)) + " bytes of shared memory (limit " +
             std::to_string(kMaxSharedBytes) + "): lower stages, block_n or block_m";
    case kRegisters: {
      const int unroll = std::max(c.unroll_cache, c.unroll_new);
      if (warp_rows(c.block_m, c.warps) != kMmaRows) {
        return "too many registers per thread: 32 rows per warp (block_m " +
               std::to_string(c.block_m) + " over " + std::to_string(c.warps) +
               " warps) spill at head_dim " + std::to_string(head_dim) +
               " except at head_dim 64 (block_n up to 64, unrolled up to 32) and head_dim 80, 96 "
               "or 128 with block_n 16, or block_n 32/64 (96: 32) with block_m 128 over 4 warps, "
               "2 stages, no unroll, 16-bit key-major K/V, no explicit mask or soft-cap; raise "
               "warps for 16 rows per warp";
      }
      return "too many registers per thread (estimate " +
             std::to_string(register_estimate(head_dim, v_head_dim(batch), c.block_m, c.block_n,
                                              c.warps, unroll, batch.kv_fp8(),
                                              prefix_prefill_v_dim_major(batch), explicit_mask)) +
             ", limit " + std::to_string(kMaxRegisterEstimate) +
             "): lower block_n or unroll, or raise warps";
    }
    default:
      return "invalid config";
  }
}

class MmaVariant : public Variant {
 public:
  explicit MmaVariant(bool explicit_mask) : explicit_mask_(explicit_mask) {}

  std::string name() const override {
    return explicit_mask_ ? "prefix_prefill.sm80_mma_masked" : "prefix_prefill.sm80_mma";
  }
  Family family() const override { return Family::prefix_prefill; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return explicit_mask_
               ? "mma.sync prefix-prefill reading an explicit (q, ctx + q) mask (trees, branches)"
               : "mma.sync + ldmatrix + cp.async prefix-prefill, GQA rows packed, paged context "
                 "+ causal new tokens";
  }

  // prefix_prefill.sm80_mma_masked reads the batch's explicit mask and nothing else decides which
  // keys a query sees (no causal, window or layout rule: a workload cannot combine an explicit mask
  // with a window); prefix_prefill.sm80_mma applies the causal and window rules. Both take every
  // head dim of the schema and a V narrower than Q/K (the family's declaration has the
  // power-of-two dims only, which prefix_prefill.sm90_wgmma runs).
  FeatureSet features() const override {
    const FeatureSet every_head_dim = prefix_prefill_features()
                                          .with(feature::kHeadDim, {64, 80, 96, 128, 192, 256})
                                          .with(feature::kVHeadDim, {64, 80, 96, 128, 192});
    if (!explicit_mask_) return every_head_dim;
    return FeatureSet(every_head_dim)
        .with(feature::kMask, {"explicit"})
        .note(feature::kMask, "causal",
              "prefix_prefill.sm80_mma runs batches without an explicit mask")
        .note(feature::kMask, "non_causal",
              "prefix_prefill.sm80_mma runs batches without an explicit mask")
        .without(feature::kSlidingWindow);
  }

  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    return {
        {"block_m", {16, 32, 64, 128}, "rows (new tokens x GQA group) per CTA"},
        {"block_n", {16, 32, 64, 128}, "keys per KV tile (pipeline stage), independent of pages"},
        {"warps", {1, 2, 4, 8}, "warps per CTA; each owns 16 or 32 of the block_m rows"},
        {"stages", {2, 3, 4}, "cp.async pipeline depth: KV tiles in flight"},
        {"unroll_cache", {1, 2}, "unroll of the loop over cached-context tiles"},
        {"unroll_new", {1, 2}, "unroll of the loop over new-token tiles"},
    };
  }

  KernelConfig default_config(const Batch& batch, const Target& target) const override {
    // Seed 002's own launch is BLOCK_M 128, BLOCK_N 64. 4 warps of 32 rows each (each K/V
    // fragment read from shared memory serves two row tiles) where that fits in registers (head
    // dims 64 and 128, 16-bit key-major K/V; traits: wide_warp_fits): on the issue-6 case (H200,
    // 2026-11-22) m128.n64.w4 took 526 us against 715 us for m128.n64.w8 and 598 us for
    // m128.n32.w4. Elsewhere 8 warps of 16 rows. A batch whose longest sequence fills fewer rows
    // (decode: query_len x group) starts from a tile of its size instead of leaving most warps
    // idle. Smaller tiles where shared memory or registers are short (head_dim 256, fp8, vLLM's
    // V, sm_86).
    auto make = [](int block_m, int block_n, int warps) {
      return MmaConfig(KernelConfig{{"block_m", block_m},
                                    {"block_n", block_n},
                                    {"warps", warps},
                                    {"stages", 2},
                                    {"unroll_cache", 1},
                                    {"unroll_new", 1}});
    };
    const int64_t rows = batch.max_query_len() * batch.spec.group_size();
    std::vector<MmaConfig> candidates;
    if (rows <= 16) candidates.push_back(make(16, 64, 1));
    if (rows <= 32) candidates.push_back(make(32, 64, 2));
    if (rows <= 64) candidates.push_back(make(64, 64, 4));
    for (const MmaConfig& c : {make(128, 64, 4), make(128, 64, 8), make(64, 64, 4), make(64, 32, 4),
                               make(32, 32, 2), make(32, 16, 2), make(16, 16, 1)}) {
      candidates.push_back(c);
    }
    for (const MmaConfig& c : candidates) {
      if (check_rule(batch, c, explicit_mask_) == prefix_prefill::sm80_mma::kOk &&
          (target.max_shared_per_block <= 0 ||
           shared_bytes(batch, c) <= target.max_shared_per_block) &&
          batch.spec.group_size() <= c.block_m)
        return c.to_config();
    }
    return candidates.back().to_config();
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (Support s = supports_sm80_target(target, "mma.sync bf16, cp.async"); !s) return s;
    if (Support s = prefix_prefill_supports_limits(batch); !s) return s;
    if (Support s = config_has_exactly(config, {std::begin(kAxes), std::end(kAxes)}, name()); !s)
      return s;
    const MmaConfig c(config);
    const int rule = check_rule(batch, c, explicit_mask_);
    if (rule != prefix_prefill::sm80_mma::kOk) {
      return Support::no(describe_rule(rule, batch, c, explicit_mask_));
    }
    const int group = batch.spec.group_size();
    if (group > c.block_m) {
      return Support::no("block_m " + std::to_string(c.block_m) +
                         " is smaller than the GQA group " + std::to_string(group) +
                         " (a CTA holds whole groups)");
    }
    return supports_shared_bytes(shared_bytes(batch, c), target);
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    const MmaConfig c(config);
    JitProgram program;
    const int head_dim = batch.spec.model.head_dim;
    program.name = full_name(config) + ".d" + std::to_string(head_dim) +
                   (v_head_dim(batch) != head_dim ? ".v" + std::to_string(v_head_dim(batch)) : "") +
                   "." + to_string(batch.spec.model.dtype) + (batch.kv_fp8() ? ".kv_fp8" : "") +
                   (prefix_prefill_v_dim_major(batch) ? ".vllm" : "") +
                   (soft_cap(batch) ? ".cap" : "");
    program.source = "#include \"kernels/prefix_prefill/sm80_mma.cuh\"\n";
    program.kernels = {attention_kernel(batch, c), "attn::prefix_prefill_gather"};
    program.arch = target.arch;
    return {program};
  }

  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    const Batch& batch = problem.batch();
    ATTN_ASSERT(problem.backend() == Backend::cuda, name() + " needs a device problem");
    const Support support = check(batch, config, context.target);
    ATTN_ASSERT(support.ok, support.reason);
    const MmaConfig c(config);
    const ModelShape& m = batch.spec.model;
    const JitProgram program = programs(batch, config, context.target).front();
    CUfunction attention = context.loader->function(program, attention_kernel(batch, c));
    CUfunction gather = context.loader->function(program, "attn::prefix_prefill_gather");
    const int smem = shared_bytes(batch, c);
    allow_dynamic_shared_memory(context, attention, smem);

    const int group = batch.spec.group_size();
    const int tile_tokens = c.block_m / group;
    std::vector<DeviceBuffer> buffers;
    auto upload = [&](const void* data, size_t bytes) {
      buffers.emplace_back(*context.cuda, std::max<size_t>(bytes, 16));
      if (bytes > 0) buffers.back().upload(data, bytes);
      return buffers.back().address();
    };
    // The new tokens' K/V from their cache slots, once, here (not timed).
    const PrefixPrefillNewTokens fresh = gather_new_tokens(problem, context, gather, buffers);
    const std::vector<int> tile_table =
        prefix_prefill_tile_schedule(batch, tile_tokens, c.block_n, explicit_mask_);

    PrefixPrefillParams p{};
    p.q = problem.q();
    p.k_pool = problem.k_pool();
    p.v_pool = problem.v_pool();
    p.block_table = problem.block_table();
    p.out = problem.out();
    p.seqs = fresh.seqs;
    p.tiles = reinterpret_cast<const int*>(upload(tile_table.data(), tile_table.size() * 4));
    p.k_new = fresh.k_new;
    p.v_new = fresh.v_new;
    p.k_strides = prefix_prefill_pool_strides(batch, false);
    p.v_strides = prefix_prefill_pool_strides(batch, true);
    // A key-major V of K's width reuses K's row offsets (page and token terms): the two pools must
    // agree. A narrower V has its own (prefix_prefill::sm80_mma::separate_v_sources).
    ATTN_ASSERT(
        prefix_prefill_v_dim_major(batch) || v_head_dim(batch) != m.head_dim ||
            (p.k_strides.page == p.v_strides.page && p.k_strides.token == p.v_strides.token),
        "prefix_prefill.sm80_mma: K and key-major V pools with different page or token strides");
    p.new_rows = fresh.new_rows;
    p.num_q_heads = m.num_q_heads;
    p.num_kv_heads = m.num_kv_heads;
    p.group = group;
    p.tile_tokens = tile_tokens;
    p.page_size = batch.page_size;
    p.page_shift = (batch.page_size & (batch.page_size - 1)) == 0
                       ? int(std::log2(double(batch.page_size)) + 0.5)
                       : -1;
    p.max_pages_per_seq = batch.max_pages_per_seq;
    p.causal = batch.causal ? 1 : 0;
    p.sliding_window = effective_sliding_window(batch);
    const LogitTransform logits = log2_logit_transform(batch);
    p.score_scale = logits.score_scale;
    p.cap_log2 = logits.cap_log2;
    if (!batch.sink_logits.empty()) {
      const std::vector<float> sink_log2 = sink_logits_log2(batch);
      p.sink_log2 = reinterpret_cast<const float*>(upload(sink_log2.data(), sink_log2.size() * 4));
    }
    if (batch.kv_fp8()) {
      p.k_scale = upload_kv_scales(*context.cuda, batch.k_scales, m.num_kv_heads, buffers);
      p.v_scale = upload_kv_scales(*context.cuda, batch.v_scales, m.num_kv_heads, buffers);
    }
    if (explicit_mask_) {
      const ExplicitMask& mask = *batch.explicit_mask;
      p.mask = reinterpret_cast<const unsigned char*>(upload(mask.bits.data(), mask.bits.size()));
      p.mask_offsets = reinterpret_cast<const long long*>(
          upload(mask.offsets.data(), mask.offsets.size() * sizeof(int64_t)));
    }

    LaunchShape shape;
    shape.grid_x = unsigned(tile_table.size() / 2 * size_t(m.num_kv_heads));
    shape.block_x = unsigned(prefix_prefill::sm80_mma::threads(c.warps));
    shape.shared_bytes = unsigned(smem);
    return std::make_unique<ParamsLauncher<PrefixPrefillParams>>(context, attention, shape, p,
                                                                 std::move(buffers));
  }

  Work work(const Batch& batch) const override { return prefix_prefill_work(batch); }

 private:
  std::string attention_kernel(const Batch& batch, const MmaConfig& c) const {
    auto flag = [](bool b) { return b ? std::string("true") : std::string("false"); };
    return "attn::prefix_prefill_sm80_mma<" +
           std::to_string(dtype_code_of(batch.spec.model.dtype)) + ", " + flag(batch.kv_fp8()) +
           ", " + flag(prefix_prefill_v_dim_major(batch)) + ", " + flag(explicit_mask_) + ", " +
           flag(soft_cap(batch)) + ", " + std::to_string(batch.spec.model.head_dim) + ", " +
           std::to_string(v_head_dim(batch)) + ", " + std::to_string(c.block_m) + ", " +
           std::to_string(c.block_n) + ", " + std::to_string(c.warps) + ", " +
           std::to_string(c.stages) + ", " + std::to_string(c.unroll_cache) + ", " +
           std::to_string(c.unroll_new) + ">";
  }

  bool explicit_mask_;
};

}  // namespace

std::unique_ptr<Variant> make_prefix_prefill_mma() {
  return std::make_unique<MmaVariant>(false);
}

std::unique_ptr<Variant> make_prefix_prefill_masked() {
  return std::make_unique<MmaVariant>(true);
}

}  // namespace attn
