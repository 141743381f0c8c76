// Host side of paged_decode.splitkv (device code: splitkv.cuh, rules: splitkv_traits.hpp).
#include <algorithm>

#include "kernels/common/dtype_code.hpp"
#include "kernels/paged_decode/paged_decode_params.hpp"
#include "kernels/paged_decode/paged_decode_variants.hpp"
#include "kernels/paged_decode/splitkv_traits.hpp"

namespace attn {

namespace {

constexpr int kMaxSplits = 128;

struct SplitKvConfig {
  int tile_tokens, warps, heads_per_cta, num_splits;
  explicit SplitKvConfig(const KernelConfig& c)
      : tile_tokens(int(c.get("tile_tokens"))),
        warps(int(c.get("warps"))),
        heads_per_cta(int(c.get("heads_per_cta"))),
        num_splits(int(c.get("num_splits"))) {}
};

std::string describe_rule(int rule, const SplitKvConfig& c, int head_dim) {
  switch (rule) {
    case splitkv::kHeadDim:
      return "head_dim " + std::to_string(head_dim) + " is not 64, 128 or 256";
    case splitkv::kWarps:
      return "warps must be 1, 2, 4 or 8";
    case splitkv::kHeadsPerCta:
      return "heads_per_cta must be 1, 2, 4 or 8";
    case splitkv::kTileTokens:
      return "tile_tokens must be a multiple of " +
             std::to_string(splitkv::token_rows(head_dim, c.warps)) +
             " (key rows per step at this head_dim and warp count) and at most 256";
    case splitkv::kSharedMemory:
      return "needs " +
             std::to_string(
                 splitkv::shared_bytes(head_dim, c.heads_per_cta, c.warps, c.tile_tokens)) +
             " bytes of shared memory (limit " + std::to_string(splitkv::kMaxSharedBytes) + ")";
    case splitkv::kRegisters:
      return "too many registers per thread (estimate " +
             std::to_string(
                 splitkv::register_estimate(head_dim, c.heads_per_cta, c.warps, c.tile_tokens)) +
             ", limit " + std::to_string(splitkv::kMaxRegisterEstimate) +
             "): lower heads_per_cta or tile_tokens";
    default:
      return "invalid config";
  }
}

// The batch features splitkv's kernel does not implement yet. Each must be refused, never run:
// the kernel would ignore it and compute plain causal attention, a wrong answer that only the
// reference check would catch. Non-causal needs no refusal: the single query token of a decode
// sequence is its last position, so it sees every key either way.
Support splitkv_supports_features(const Batch& batch) {
  if (batch.kv_dtype != batch.dtype) {
    return Support::no("KV dtype " + to_string(batch.kv_dtype) +
                       " (quantised KV cache) is not implemented; needs K/V of the Q dtype " +
                       to_string(batch.dtype));
  }
  if (batch.spec.kv_cache.layout == KvLayout::vllm) {
    return Support::no("the vllm K/V layout is not implemented (nhd and hnd are)");
  }
  if (batch.logits_soft_cap > 0) return Support::no("logits soft-cap is not implemented");
  if (batch.sliding_window > 0) return Support::no("sliding window is not implemented");
  if (!batch.sink_logits.empty()) return Support::no("attention sinks are not implemented");
  if (batch.block_sparse) return Support::no("block-sparse masks are not implemented");
  if (batch.explicit_mask) return Support::no("explicit masks are not implemented");
  return Support::yes();
}

int dtype_code(DType dtype) {
  return dtype == DType::bf16 ? kDTypeBf16 : kDTypeFp16;
}

int head_chunks(const Batch& batch, int heads_per_cta) {
  const int group = batch.spec.group_size();
  return (group + heads_per_cta - 1) / heads_per_cta;
}

// Enough CTAs for several waves on every SM, without splits shorter than two tiles.
int auto_splits(const Batch& batch, const SplitKvConfig& c, const Target& target) {
  const long long ctas = (long long)batch.num_seqs * batch.spec.model.num_kv_heads *
                         head_chunks(batch, c.heads_per_cta);
  const long long wanted = 8LL * std::max(1, target.sm_count);
  long long splits = (wanted + ctas - 1) / std::max(1LL, ctas);
  const long long max_tiles = (batch.max_kv_len() + c.tile_tokens - 1) / c.tile_tokens;
  splits = std::min(splits, std::max(1LL, max_tiles / 2));
  return int(std::clamp(splits, 1LL, (long long)kMaxSplits));
}

class SplitKvLauncher : public Launcher {
 public:
  SplitKvLauncher(const ExecContext& context, CUfunction attention, CUfunction merge,
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

class SplitKvVariant : public Variant {
 public:
  std::string name() const override { return "paged_decode.splitkv"; }
  Family family() const override { return Family::paged_decode; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "flash-decoding on CUDA cores: heads of one KV head per CTA, split-KV + LSE merge";
  }

  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    return {
        {"tile_tokens", {16, 32, 64, 128, 256}, "keys per step: loads in flight vs registers"},
        {"warps", {1, 2, 4, 8}, "threads per CTA: key rows in flight vs CTAs per SM"},
        {"heads_per_cta", {1, 2, 4, 8}, "query heads sharing one K/V read (GQA)"},
        {"num_splits", {0, 1, 2, 4, 8, 16, 32}, "splits of each sequence's keys; 0 = auto"},
    };
  }

  KernelConfig default_config(const Batch& batch, const Target&) const override {
    const int head_dim = batch.spec.model.head_dim;
    const int group = batch.spec.group_size();
    int heads = 1;
    while (heads < group && heads < 8) heads *= 2;
    const int warps = 4;
    int tile = std::max(1, splitkv::token_rows(head_dim, warps)) * 8;  // 8 keys per row
    while (tile > splitkv::token_rows(head_dim, warps) &&
           splitkv::check(head_dim, heads, warps, tile) != splitkv::kOk) {
      tile /= 2;
    }
    return KernelConfig{
        {"tile_tokens", tile}, {"warps", warps}, {"heads_per_cta", heads}, {"num_splits", 0}};
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (target.backend != Backend::cuda) return Support::no("needs a CUDA GPU");
    if (target.compute_capability() < 80) {
      return Support::no("needs compute capability 8.0 or newer (bf16 conversions)");
    }
    if (Support s = paged_decode_supports_batch(batch); !s) return s;
    if (Support s = splitkv_supports_features(batch); !s) return s;
    const DType dtype = batch.spec.model.dtype;
    if (dtype != DType::bf16 && dtype != DType::fp16) {
      return Support::no("dtype " + to_string(dtype) + " is not bf16 or fp16");
    }
    for (const char* axis : {"tile_tokens", "warps", "heads_per_cta", "num_splits"}) {
      if (!config.find(axis)) return Support::no(std::string("config lacks the axis ") + axis);
    }
    if (config.values().size() != 4) return Support::no("config has axes splitkv does not use");
    const SplitKvConfig c(config);
    const int head_dim = batch.spec.model.head_dim;
    const int rule = splitkv::check(head_dim, c.heads_per_cta, c.warps, c.tile_tokens);
    if (rule != splitkv::kOk) return Support::no(describe_rule(rule, c, head_dim));
    if (c.num_splits < 0 || c.num_splits > kMaxSplits) {
      return Support::no("num_splits must be 0 (auto) to " + std::to_string(kMaxSplits));
    }
    return Support::yes();
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    const SplitKvConfig c(config);
    const int code = dtype_code(batch.spec.model.dtype);
    const int head_dim = batch.spec.model.head_dim;
    JitProgram program;
    program.name = full_name(config) + ".d" + std::to_string(head_dim) + "." +
                   to_string(batch.spec.model.dtype);
    program.source = "#include \"kernels/paged_decode/splitkv.cuh\"\n";
    program.kernels = {attention_kernel(code, head_dim, c), merge_kernel(code, head_dim)};
    program.arch = target.arch;
    return {program};
  }

  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    const Batch& batch = problem.batch();
    ATTN_ASSERT(problem.backend() == Backend::cuda, "splitkv needs a device problem");
    const Support support = supports(batch, config, context.target);
    ATTN_ASSERT(support.ok, support.reason);
    const SplitKvConfig c(config);
    const ModelShape& m = batch.spec.model;
    const JitProgram program = programs(batch, config, context.target).front();
    const int code = dtype_code(m.dtype);
    CUfunction attention = context.loader->function(program, attention_kernel(code, m.head_dim, c));
    CUfunction merge = context.loader->function(program, merge_kernel(code, m.head_dim));

    PagedDecodeParams p{};
    p.q = problem.q();
    p.k_pool = problem.k_pool();
    p.v_pool = problem.v_pool();
    p.block_table = problem.block_table();
    p.kv_lens = problem.kv_lens();
    p.out = problem.out();
    const long long P = batch.page_size, H = m.num_kv_heads, D = m.head_dim;
    if (batch.spec.kv_cache.layout == KvLayout::nhd) {
      p.page_stride = P * H * D;
      p.token_stride = H * D;
      p.head_stride = D;
    } else {
      p.page_stride = H * P * D;
      p.token_stride = D;
      p.head_stride = P * D;
    }
    p.num_seqs = batch.num_seqs;
    p.num_q_heads = m.num_q_heads;
    p.num_kv_heads = m.num_kv_heads;
    p.page_size = batch.page_size;
    p.max_pages_per_seq = batch.max_pages_per_seq;
    p.num_splits = c.num_splits > 0 ? c.num_splits : auto_splits(batch, c, context.target);
    p.head_chunks = head_chunks(batch, c.heads_per_cta);
    p.scale_log2 = float(double(batch.softmax_scale) * 1.4426950408889634);  // * log2(e)
    if (p.num_splits > 1) {
      const size_t rows = size_t(p.num_splits) * size_t(batch.num_seqs) * size_t(m.num_q_heads);
      const size_t out_bytes = rows * size_t(D) * sizeof(float);
      CUdeviceptr scratch = context.workspace->get(out_bytes + rows * sizeof(float));
      p.partial_out = reinterpret_cast<float*>(scratch);
      p.partial_lse = reinterpret_cast<float*>(scratch + out_bytes);
    }

    LaunchShape attention_shape;
    attention_shape.grid_x = unsigned(batch.num_seqs);
    attention_shape.grid_y = unsigned(m.num_kv_heads * p.head_chunks);
    attention_shape.grid_z = unsigned(p.num_splits);
    attention_shape.block_x = unsigned(splitkv::threads(c.warps));
    LaunchShape merge_shape;
    merge_shape.grid_x = unsigned(batch.num_seqs);
    merge_shape.grid_y = unsigned(m.num_q_heads);
    merge_shape.block_x = unsigned(D);
    return std::make_unique<SplitKvLauncher>(context, attention, merge, attention_shape,
                                             merge_shape, p);
  }

  Work work(const Batch& batch) const override { return paged_decode_work(batch); }

 private:
  static std::string attention_kernel(int code, int head_dim, const SplitKvConfig& c) {
    return "attn::paged_decode_splitkv<" + std::to_string(code) + ", " + std::to_string(head_dim) +
           ", " + std::to_string(c.heads_per_cta) + ", " + std::to_string(c.warps) + ", " +
           std::to_string(c.tile_tokens) + ">";
  }
  static std::string merge_kernel(int code, int head_dim) {
    return "attn::paged_decode_merge<" + std::to_string(code) + ", " + std::to_string(head_dim) +
           ">";
  }
};

}  // namespace

std::unique_ptr<Variant> make_paged_decode_splitkv() {
  return std::make_unique<SplitKvVariant>();
}

}  // namespace attn
