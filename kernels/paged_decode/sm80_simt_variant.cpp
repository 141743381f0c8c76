// Host side of paged_decode.sm80_simt (device code: sm80_simt.cuh, rules: sm80_simt_traits.hpp).
#include <algorithm>
#include <iterator>

#include "kernels/dtype_code_of.hpp"
#include "kernels/launch_inputs.hpp"
#include "kernels/paged_decode/paged_decode_params.hpp"
#include "kernels/paged_decode/paged_decode_variants.hpp"
#include "kernels/paged_decode/sm80_simt_traits.hpp"

namespace attn {

namespace {

using paged_decode::sm80_simt::kMaxSplits;

struct Sm80SimtConfig {
  int tile_tokens, stages, warps, heads_per_cta, num_splits;
  explicit Sm80SimtConfig(const KernelConfig& c)
      : tile_tokens(int(c.get("tile_tokens"))),
        stages(int(c.get("stages"))),
        warps(int(c.get("warps"))),
        heads_per_cta(int(c.get("heads_per_cta"))),
        num_splits(int(c.get("num_splits"))) {}
};

constexpr const char* kAxes[] = {"tile_tokens", "stages", "warps", "heads_per_cta", "num_splits"};

int kv_bytes(const Batch& batch) {
  return batch.kv_fp8() ? 1 : 2;
}

int shared_bytes(const Batch& batch, const Sm80SimtConfig& c) {
  return paged_decode::sm80_simt::shared_bytes(batch.spec.model.head_dim, kv_bytes(batch),
                                               c.heads_per_cta, c.warps, c.tile_tokens, c.stages);
}

std::string describe_rule(int rule, const Sm80SimtConfig& c, const Batch& batch) {
  const int head_dim = batch.spec.model.head_dim;
  switch (rule) {
    case paged_decode::sm80_simt::kHeadDim:
      return "head_dim " + std::to_string(head_dim) + " is not 64, 80, 96, 128, 192 or 256";
    case paged_decode::sm80_simt::kKvBytes:
      return "KV elements must be 2 (bf16/fp16) or 1 (fp8) bytes";
    case paged_decode::sm80_simt::kWarps:
      return "warps must be 1, 2, 4 or 8";
    case paged_decode::sm80_simt::kHeadsPerCta:
      return "heads_per_cta must be 1, 2, 4, 8 or 16";
    case paged_decode::sm80_simt::kBlockTokens:
      return "tile_tokens must be a power of two, at least " +
             std::to_string(paged_decode::sm80_simt::token_rows(head_dim, c.warps)) +
             " (key rows per step at this head_dim and warp count) and at most 256";
    case paged_decode::sm80_simt::kStages:
      return "stages must be 2 to " + std::to_string(paged_decode::sm80_simt::kMaxStages);
    case paged_decode::sm80_simt::kSharedMemory:
      return "needs " + std::to_string(shared_bytes(batch, c)) + " bytes of shared memory (limit " +
             std::to_string(paged_decode::sm80_simt::kMaxSharedBytes) + ")";
    case paged_decode::sm80_simt::kRegisters:
      return "too many registers per thread (estimate " +
             std::to_string(paged_decode::sm80_simt::register_estimate(head_dim, c.heads_per_cta,
                                                                       c.warps, c.tile_tokens)) +
             ", limit " + std::to_string(paged_decode::sm80_simt::kMaxRegisterEstimate) +
             "): lower heads_per_cta or tile_tokens";
    default:
      return "invalid config";
  }
}

// Limits of the parameter struct on the features sm80_simt implements (paged_decode_features()):
// fp8 scales and sink logits travel in it, one per head up to a fixed count, and the window is a
// 32-bit integer.
Support sm80_simt_supports_limits(const Batch& batch) {
  const ModelShape& m = batch.spec.model;
  if (batch.kv_fp8() && m.num_kv_heads > paged_decode::sm80_simt::kMaxKvHeads) {
    return Support::no("fp8_e4m3 KV with more than " +
                       std::to_string(paged_decode::sm80_simt::kMaxKvHeads) +
                       " kv heads (scales travel in the parameter struct)");
  }
  if (!batch.sink_logits.empty() && m.num_q_heads > paged_decode::sm80_simt::kMaxQHeads) {
    return Support::no("attention sinks with more than " +
                       std::to_string(paged_decode::sm80_simt::kMaxQHeads) +
                       " q heads (sinks travel in the parameter struct)");
  }
  if (batch.sliding_window > 0x7fffffff) return Support::no("sliding window over 2^31 keys");
  return Support::yes();
}

int head_chunks(const Batch& batch, int heads_per_cta) {
  const int group = batch.spec.group_size();
  return (group + heads_per_cta - 1) / heads_per_cta;
}

// CTAs of this config that fit on one SM at once (shared memory, threads, registers).
int ctas_per_sm(const Batch& batch, const Sm80SimtConfig& c, const Target& target) {
  const int head_dim = batch.spec.model.head_dim;
  const int smem_per_sm = target.compute_capability() >= 90 ? 228 * 1024 : 164 * 1024;
  const int by_smem = smem_per_sm / (shared_bytes(batch, c) + 1024);
  const int by_threads = 2048 / paged_decode::sm80_simt::threads(c.warps);
  const int regs = std::max(64, paged_decode::sm80_simt::register_estimate(
                                    head_dim, c.heads_per_cta, c.warps, c.tile_tokens));
  const int by_regs = 65536 / (regs * paged_decode::sm80_simt::threads(c.warps));
  return std::max(1, std::min({by_smem, by_threads, by_regs, 32}));
}

int64_t visible_keys(const Batch& batch, int s) {
  const int64_t len = batch.kv_lens[size_t(s)];
  return batch.sliding_window > 0 ? std::min(len, batch.sliding_window) : len;
}

// Auto split length: the batch's keys (per KV head and head chunk) spread over one wave of CTAs,
// so a single long sequence is cut into about as many splits as the GPU holds CTAs and a batch of
// many sequences keeps one split each. Never shorter than 4 blocks (pipeline fill).
int auto_split_tokens(const Batch& batch, const Sm80SimtConfig& c, const Target& target) {
  int64_t keys = 0;
  for (int s = 0; s < batch.num_seqs; ++s) keys += visible_keys(batch, s);
  const int64_t per_seq_ctas =
      int64_t(batch.spec.model.num_kv_heads) * head_chunks(batch, c.heads_per_cta);
  const int64_t slots = int64_t(std::max(1, target.sm_count)) * ctas_per_sm(batch, c, target);
  const int64_t wanted = std::max<int64_t>(1, slots / per_seq_ctas);  // CTAs per KV head
  int64_t tokens = (keys + wanted - 1) / wanted;
  tokens = std::max<int64_t>(tokens, 4LL * c.tile_tokens);
  return int(std::min<int64_t>(tokens, 0x3fffffff));
}

class Sm80SimtLauncher : public Launcher {
 public:
  Sm80SimtLauncher(const ExecContext& context, CUfunction attention, CUfunction merge,
                   LaunchShape attention_shape, LaunchShape merge_shape, PagedDecodeParams params)
      : context_(context),
        attention_(attention),
        merge_(merge),
        attention_shape_(attention_shape),
        merge_shape_(merge_shape),
        params_(params) {}

  void launch() override {
    attn::launch(*context_.cuda, attention_, attention_shape_, *context_.stream, params_);
    if (params_.num_splits > 1) {
      attn::launch(*context_.cuda, merge_, merge_shape_, *context_.stream, params_);
    }
  }

 private:
  ExecContext context_;
  CUfunction attention_, merge_;
  LaunchShape attention_shape_, merge_shape_;
  PagedDecodeParams params_;
};

class Sm80SimtVariant : public Variant {
 public:
  std::string name() const override { return "paged_decode.sm80_simt"; }
  Family family() const override { return Family::paged_decode; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "flash-decoding on CUDA cores: a KV head's q heads per CTA, cp.async page pipeline, "
           "split-KV + LSE merge";
  }

  FeatureSet features() const override { return paged_decode_features(); }

  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    return {
        {"tile_tokens", {16, 32, 64, 128}, "keys per pipeline stage and compute block"},
        {"stages", {2, 3, 4, 6}, "shared-memory stages of the cp.async ring: bytes in flight"},
        {"warps", {1, 2, 4, 8}, "threads per CTA: key rows computed at once vs CTAs per SM"},
        {"heads_per_cta", {1, 2, 4, 8, 16}, "query heads sharing one K/V read (GQA)"},
        {"num_splits", {0, 1, 2, 4, 8, 16, 32}, "splits of each sequence's keys; 0 = auto"},
    };
  }

  KernelConfig default_config(const Batch& batch, const Target&) const override {
    const int head_dim = batch.spec.model.head_dim;
    const int group = batch.spec.group_size();
    const int kvb = kv_bytes(batch);
    int heads = 1;
    while (heads < group && heads < 16) heads *= 2;
    const int warps = 4;
    int tile = 16, stages = 6;
    while (heads > 1 && paged_decode::sm80_simt::check(head_dim, kvb, heads, warps, tile, stages) ==
                            paged_decode::sm80_simt::kRegisters) {
      heads /= 2;
    }
    while (tile < paged_decode::sm80_simt::token_rows(head_dim, warps)) tile *= 2;
    while (stages > 2 &&
           paged_decode::sm80_simt::check(head_dim, kvb, heads, warps, tile, stages) ==
               paged_decode::sm80_simt::kSharedMemory) {
      --stages;
    }
    // A 16-bit NHD cache whose rows are not whole 128-byte lines (head dims 80 and 96): two
    // stages of 64-key tiles, so that each CTA has more of its rows (and of the lines it shares
    // with the next KV head) in flight at once (H200, 32 heads of 96, 64 x 4096: 840.5 against
    // 868.9 us for 6 stages of 16 keys, the best of 60 configs).
    if (batch.spec.kv_cache.layout == KvLayout::nhd && kvb == 2 && (head_dim * kvb) % 128 != 0 &&
        paged_decode::sm80_simt::check(head_dim, kvb, heads, warps, 64, 2) ==
            paged_decode::sm80_simt::kOk) {
      tile = 64;
      stages = 2;
    }
    return KernelConfig{{"tile_tokens", tile},
                        {"stages", stages},
                        {"warps", warps},
                        {"heads_per_cta", heads},
                        {"num_splits", 0}};
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (Support s = supports_sm80_target(target, "bf16 conversions, cp.async"); !s) return s;
    if (Support s = sm80_simt_supports_limits(batch); !s) return s;
    if (Support s = config_has_exactly(config, {std::begin(kAxes), std::end(kAxes)}, name()); !s)
      return s;
    const Sm80SimtConfig c(config);
    const int head_dim = batch.spec.model.head_dim;
    const int rule = paged_decode::sm80_simt::check(head_dim, kv_bytes(batch), c.heads_per_cta,
                                                    c.warps, c.tile_tokens, c.stages);
    if (rule != paged_decode::sm80_simt::kOk) return Support::no(describe_rule(rule, c, batch));
    return supports_split_launch(shared_bytes(batch, c), c.num_splits, kMaxSplits, target, "auto");
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    const Sm80SimtConfig c(config);
    const int code = dtype_code_of(batch.spec.model.dtype);
    const int head_dim = batch.spec.model.head_dim;
    JitProgram program;
    program.name = full_name(config) + ".d" + std::to_string(head_dim) + "." +
                   to_string(batch.spec.model.dtype) + "." + to_string(batch.kv_dtype);
    program.source = "#include \"kernels/paged_decode/sm80_simt.cuh\"\n";
    program.kernels = {attention_kernel(code, batch.kv_fp8(), head_dim, c),
                       merge_kernel(code, head_dim, c)};
    program.arch = target.arch;
    return {program};
  }

  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    const Batch& batch = problem.batch();
    ATTN_ASSERT(problem.backend() == Backend::cuda, "sm80_simt needs a device problem");
    const Support support = check(batch, config, context.target);
    ATTN_ASSERT(support.ok, support.reason);
    const Sm80SimtConfig c(config);
    const ModelShape& m = batch.spec.model;
    const JitProgram program = programs(batch, config, context.target).front();
    const int code = dtype_code_of(m.dtype);
    CUfunction attention =
        context.loader->function(program, attention_kernel(code, batch.kv_fp8(), m.head_dim, c));
    CUfunction merge = context.loader->function(program, merge_kernel(code, m.head_dim, c));
    const int smem = shared_bytes(batch, c);
    allow_dynamic_shared_memory(context, attention, smem);

    PagedDecodeParams p{};
    p.q = problem.q();
    p.k_pool = problem.k_pool();
    p.v_pool = problem.v_pool();
    p.block_table = problem.block_table();
    p.kv_lens = problem.kv_lens();
    p.out = problem.out();
    const PagedPoolStrides strides = paged_pool_strides(batch);
    p.page_stride = strides.page;
    p.token_stride = strides.token;
    p.head_stride = strides.head;
    p.num_seqs = batch.num_seqs;
    p.num_q_heads = m.num_q_heads;
    p.num_kv_heads = m.num_kv_heads;
    p.page_size = batch.page_size;
    p.page_shift = -1;
    for (int shift = 0; shift < 31; ++shift) {
      if ((1 << shift) == batch.page_size) p.page_shift = shift;
    }
    p.max_pages_per_seq = batch.max_pages_per_seq;
    p.head_chunks = head_chunks(batch, c.heads_per_cta);
    p.sliding_window = int(batch.sliding_window);
    if (c.num_splits > 0) {
      p.num_splits = c.num_splits;
      p.split_tokens = 0;
    } else {
      p.split_tokens = auto_split_tokens(batch, c, context.target);
      int most = 1;
      for (int s = 0; s < batch.num_seqs; ++s) {
        most = std::max(most, paged_decode::sm80_simt::splits_of(int(visible_keys(batch, s)),
                                                                 p.split_tokens, kMaxSplits));
      }
      p.num_splits = most;
    }
    p.soft_cap = batch.logits_soft_cap > 0 ? batch.logits_soft_cap : 0.0f;
    p.soft_cap_log2 = float(double(p.soft_cap) * kLog2e);
    double q_scale = double(batch.softmax_scale) * (p.soft_cap > 0 ? 1.0 : kLog2e);
    p.kv_fp8 = batch.kv_fp8() ? 1 : 0;
    if (p.kv_fp8) {
      q_scale *= 1.329227995784916e36;  // 2^120: the kernel's fp8 unpacking scales by 2^-120
      const std::vector<float> k = scales_per_kv_head(batch.k_scales, m.num_kv_heads);
      const std::vector<float> v = scales_per_kv_head(batch.v_scales, m.num_kv_heads);
      std::copy(k.begin(), k.end(), p.k_scale);
      std::copy(v.begin(), v.end(), p.v_scale);
    }
    p.q_scale = float(q_scale);
    p.has_sinks = batch.sink_logits.empty() ? 0 : 1;
    const std::vector<float> sinks = sink_logits_log2(batch);
    std::copy(sinks.begin(), sinks.end(), p.sink_log2);
    if (p.num_splits > 1) {
      const size_t rows = size_t(p.num_splits) * size_t(batch.num_seqs) * size_t(m.num_q_heads);
      const size_t out_bytes = rows * size_t(m.head_dim) * sizeof(float);
      CUdeviceptr scratch = context.workspace->get(out_bytes + rows * sizeof(float));
      p.partial_out = reinterpret_cast<float*>(scratch);
      p.partial_lse = reinterpret_cast<float*>(scratch + out_bytes);
    }

    LaunchShape attention_shape;
    // A CTA per (sequence, KV head, head chunk), KV head fastest (sm80_simt.cuh).
    attention_shape.grid_x = unsigned(int64_t(batch.num_seqs) * m.num_kv_heads * p.head_chunks);
    attention_shape.grid_y = 1;
    attention_shape.grid_z = unsigned(p.num_splits);
    attention_shape.block_x = unsigned(paged_decode::sm80_simt::threads(c.warps));
    attention_shape.shared_bytes = unsigned(smem);
    LaunchShape merge_shape;
    merge_shape.grid_x = unsigned(batch.num_seqs);
    merge_shape.grid_y = unsigned(m.num_q_heads);
    merge_shape.block_x = unsigned(m.head_dim / 2);
    return std::make_unique<Sm80SimtLauncher>(context, attention, merge, attention_shape,
                                              merge_shape, p);
  }

  Work work(const Batch& batch) const override { return paged_decode_work(batch); }

 private:
  static std::string attention_kernel(int code, bool kv_fp8, int head_dim,
                                      const Sm80SimtConfig& c) {
    return "attn::paged_decode_sm80_simt<" + std::to_string(code) + ", " +
           (kv_fp8 ? "true" : "false") + ", " + std::to_string(head_dim) + ", " +
           std::to_string(c.heads_per_cta) + ", " + std::to_string(c.warps) + ", " +
           std::to_string(c.tile_tokens) + ", " + std::to_string(c.stages) + ">";
  }
  static std::string merge_kernel(int code, int head_dim, const Sm80SimtConfig& c) {
    return "attn::paged_decode_merge<" + std::to_string(code) + ", " + std::to_string(head_dim) +
           ", " + std::to_string(c.tile_tokens) + ">";
  }
};

}  // namespace

std::unique_ptr<Variant> make_paged_decode_sm80_simt() {
  return std::make_unique<Sm80SimtVariant>();
}

}  // namespace attn
