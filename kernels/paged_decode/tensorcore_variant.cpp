// Host side of paged_decode.tensorcore (device code: tensorcore.cuh, rules: tensorcore_traits.hpp).
#include <algorithm>
#include <climits>
#include <cmath>

#include "kernels/common/dtype_code.hpp"
#include "kernels/paged_decode/paged_decode_variants.hpp"
#include "kernels/paged_decode/tensorcore_params.hpp"
#include "kernels/paged_decode/tensorcore_traits.hpp"

namespace attn {

namespace {

constexpr int kMaxSplits = 128;
constexpr double kLog2e = 1.4426950408889634;

// tile_tokens: keys per compute block (one pipeline stage); a block spans several pages or part
// of one, whatever the page size.
struct TensorCoreConfig {
  int tile_tokens, warps, stages, num_splits;
  explicit TensorCoreConfig(const KernelConfig& c)
      : tile_tokens(int(c.get("tile_tokens"))),
        warps(int(c.get("warps"))),
        stages(int(c.get("stages"))),
        num_splits(int(c.get("num_splits"))) {}
  int shared_bytes(int head_dim) const {
    return tensorcore::shared_bytes(head_dim, warps, tile_tokens, stages);
  }
};

std::string describe_rule(int rule, const TensorCoreConfig& c, int head_dim) {
  switch (rule) {
    case tensorcore::kHeadDim:
      return "head_dim " + std::to_string(head_dim) + " is not 64, 128 or 256";
    case tensorcore::kWarps:
      return "warps must be 1, 2, 4 or 8";
    case tensorcore::kStages:
      return "stages must be 2, 3 or 4";
    case tensorcore::kBlockTokens:
      return "tile_tokens must be a multiple of " + std::to_string(16 * c.warps) +
             " (16 keys per warp, one mma k-slice) and at most 256";
    case tensorcore::kSharedMemory:
      return "needs " + std::to_string(c.shared_bytes(head_dim)) +
             " bytes of shared memory (limit " + std::to_string(tensorcore::kMaxSharedBytes) +
             "): lower stages or tile_tokens";
    case tensorcore::kRegisters:
      return "too many registers per thread (estimate " +
             std::to_string(tensorcore::register_estimate(head_dim, c.warps, c.tile_tokens)) +
             ", limit " + std::to_string(tensorcore::kMaxRegisterEstimate) +
             "): lower tile_tokens or raise warps";
    default:
      return "invalid config";
  }
}

// Batch features the kernel does not implement: refused, never run (the kernel would ignore them
// and compute something else). Non-causal needs no refusal: the single query token of a decode
// sequence is its last position, so it sees every key either way.
Support tensorcore_supports_features(const Batch& batch) {
  const DType dtype = batch.spec.model.dtype;
  if (dtype != DType::bf16 && dtype != DType::fp16) {
    return Support::no("dtype " + to_string(dtype) + " is not bf16 or fp16");
  }
  if (batch.kv_dtype != batch.dtype) {
    return Support::no("KV dtype " + to_string(batch.kv_dtype) +
                       " (quantised KV cache) is not implemented; needs K/V of the Q dtype " +
                       to_string(batch.dtype));
  }
  if (Support s = paged_decode_supports_layout_and_masks(batch); !s) return s;
  const int group = batch.spec.group_size();
  if (group < 1 || group > tensorcore::kMaxGroup) {
    return Support::no("GQA group size " + std::to_string(group) + " exceeds " +
                       std::to_string(tensorcore::kMaxGroup) +
                       " (the q heads of a KV head fill the 16 rows of one mma tile)");
  }
  if (!batch.sink_logits.empty() &&
      batch.sink_logits.size() != size_t(batch.spec.model.num_q_heads)) {
    return Support::no("sink logits must have one value per q head");
  }
  return Support::yes();
}

int dtype_code(DType dtype) {
  return dtype == DType::bf16 ? kDTypeBf16 : kDTypeFp16;
}

// Keys a query can see at most: the longest sequence, or the window.
int64_t max_visible_keys(const Batch& batch) {
  const int64_t longest = batch.max_kv_len();
  return batch.sliding_window > 0 ? std::min(longest, batch.sliding_window) : longest;
}

// Split count: enough CTAs for four waves of resident CTAs on every SM (with two, the partial last
// wave cost 5% on 64 x 4096 on an H200: 309.5 us at 2 splits vs 294.8 at 4), and enough splits
// that the longest sequence's pieces are no longer than the batch's mean keys per CTA slot of two
// waves (otherwise one long sequence among short ones runs alone after the rest have finished;
// counting four waves there split lognormal-96 into 14 and cost 14%); never splits shorter than
// two blocks.
int auto_splits(const Batch& batch, const TensorCoreConfig& c, const Target& target) {
  const long long kv_heads = batch.spec.model.num_kv_heads;
  const long long ctas = (long long)batch.num_seqs * kv_heads;
  const int smem = c.shared_bytes(batch.spec.model.head_dim);
  // The per-block opt-in limit stands in for the per-SM capacity (within a few KiB on sm_80+).
  int resident = target.max_shared_per_block > 0 ? target.max_shared_per_block / smem : 1;
  resident = std::clamp(resident, 1, 2048 / tensorcore::threads(c.warps));
  const long long wanted = 2LL * std::max(1, target.sm_count) * resident;  // two waves
  long long splits = (2 * wanted + ctas - 1) / std::max(1LL, ctas);

  long long total_keys = 0;
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int64_t len = batch.kv_lens[size_t(s)];
    total_keys += batch.sliding_window > 0 ? std::min(len, batch.sliding_window) : len;
  }
  const long long keys_per_slot = std::max(1LL, (total_keys * kv_heads + wanted - 1) / wanted);
  splits = std::max(splits, (max_visible_keys(batch) + keys_per_slot - 1) / keys_per_slot);

  const long long max_blocks = (max_visible_keys(batch) + c.tile_tokens - 1) / c.tile_tokens;
  splits = std::min(splits, std::max(1LL, max_blocks / 2));
  return int(std::clamp(splits, 1LL, (long long)kMaxSplits));
}

class TensorCoreLauncher : public Launcher {
 public:
  TensorCoreLauncher(const ExecContext& context, CUfunction attention, CUfunction merge,
                     LaunchShape attention_shape, LaunchShape merge_shape, TensorCoreParams params,
                     DeviceBuffer sinks)
      : context_(context),
        attention_(attention),
        merge_(merge),
        attention_shape_(attention_shape),
        merge_shape_(merge_shape),
        params_(params),
        sinks_(std::move(sinks)) {}

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
  TensorCoreParams params_;
  DeviceBuffer sinks_;  // [num_q_heads] sink logits * log2(e), owned while params_ points at it
};

class TensorCoreVariant : public Variant {
 public:
  std::string name() const override { return "paged_decode.tensorcore"; }
  Family family() const override { return Family::paged_decode; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "GQA heads packed into mma.sync m16n8k16 rows, cp.async K/V pipeline, split-KV + LSE "
           "merge";
  }

  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    return {
        {"tile_tokens", {16, 32, 64, 128, 256}, "keys per compute block (pipeline stage)"},
        {"warps", {1, 2, 4, 8}, "warps per CTA, each with its own slice of every block's keys"},
        {"stages", {2, 3, 4}, "cp.async pipeline depth: blocks in flight"},
        {"num_splits", {0, 1, 2, 4, 8, 16, 32}, "splits of each sequence's keys; 0 = auto"},
    };
  }

  KernelConfig default_config(const Batch& batch, const Target& target) const override {
    const int head_dim = batch.spec.model.head_dim;
    // 64 keys x 2 stages: the fastest of a sweep on an H200 (BENCHMARKS.md, paged_decode): two
    // stages halve the shared memory of three, and the extra CTAs per SM hide more latency than
    // the deeper pipeline did. Re-checked after the barrier per block went (8afcf39): at 4 splits
    // st2.t64.w4 294.75 us vs st3 308.35, and t128.w8 lost on lognormal-96 and page 1.
    int tile = 64, stages = 2;
    const int warps = 4;
    auto fits = [&](int t, int s) {
      const TensorCoreConfig c(
          KernelConfig{{"tile_tokens", t}, {"warps", warps}, {"stages", s}, {"num_splits", 0}});
      return tensorcore::check(head_dim, warps, t, s) == tensorcore::kOk &&
             (target.max_shared_per_block <= 0 ||
              c.shared_bytes(head_dim) <= target.max_shared_per_block);
    };
    while (!fits(tile, stages) && tile > 16 * warps) tile /= 2;
    return KernelConfig{
        {"tile_tokens", tile}, {"warps", warps}, {"stages", stages}, {"num_splits", 0}};
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (target.backend != Backend::cuda) return Support::no("needs a CUDA GPU");
    if (target.compute_capability() < 80) {
      return Support::no("needs compute capability 8.0 or newer (mma.sync bf16, cp.async)");
    }
    if (Support s = paged_decode_supports_batch(batch); !s) return s;
    if (Support s = tensorcore_supports_features(batch); !s) return s;
    for (const char* axis : {"tile_tokens", "warps", "stages", "num_splits"}) {
      if (!config.find(axis)) return Support::no(std::string("config lacks the axis ") + axis);
    }
    if (config.values().size() != 4) return Support::no("config has axes tensorcore does not use");
    const TensorCoreConfig c(config);
    const int head_dim = batch.spec.model.head_dim;
    const int rule = tensorcore::check(head_dim, c.warps, c.tile_tokens, c.stages);
    if (rule != tensorcore::kOk) return Support::no(describe_rule(rule, c, head_dim));
    return paged_decode_supports_launch(c.shared_bytes(head_dim), c.num_splits, kMaxSplits, target);
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    const TensorCoreConfig c(config);
    const int code = dtype_code(batch.spec.model.dtype);
    const int head_dim = batch.spec.model.head_dim;
    JitProgram program;
    program.name = full_name(config) + ".d" + std::to_string(head_dim) + "." +
                   to_string(batch.spec.model.dtype);
    program.source = "#include \"kernels/paged_decode/tensorcore.cuh\"\n";
    program.kernels = {attention_kernel(code, head_dim, c), merge_kernel(code, head_dim)};
    program.arch = target.arch;
    return {program};
  }

  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    const Batch& batch = problem.batch();
    ATTN_ASSERT(problem.backend() == Backend::cuda, "tensorcore needs a device problem");
    const Support support = supports(batch, config, context.target);
    ATTN_ASSERT(support.ok, support.reason);
    const TensorCoreConfig c(config);
    const ModelShape& m = batch.spec.model;
    const JitProgram program = programs(batch, config, context.target).front();
    const int code = dtype_code(m.dtype);
    CUfunction attention = context.loader->function(program, attention_kernel(code, m.head_dim, c));
    CUfunction merge = context.loader->function(program, merge_kernel(code, m.head_dim));
    const int smem = c.shared_bytes(m.head_dim);
    ATTN_CU_CHECK(
        context.cuda->api(),
        cuFuncSetAttribute(attention, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));

    TensorCoreParams p{};
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
    p.group = batch.spec.group_size();
    p.page_size = batch.page_size;
    p.max_pages_per_seq = batch.max_pages_per_seq;
    p.num_splits = c.num_splits > 0 ? c.num_splits : auto_splits(batch, c, context.target);
    // A window at least as long as every sequence hides nothing.
    p.sliding_window = (batch.sliding_window > 0 && batch.sliding_window < batch.max_kv_len())
                           ? int(batch.sliding_window)
                           : 0;
    const double scale = double(batch.softmax_scale);
    if (batch.logits_soft_cap > 0) {
      const double cap = double(batch.logits_soft_cap);
      p.score_scale = float(scale / cap);
      p.cap_log2 = float(cap * kLog2e);
    } else {
      p.score_scale = float(scale * kLog2e);
      p.cap_log2 = 0.0f;
    }
    DeviceBuffer sinks;
    if (!batch.sink_logits.empty()) {
      std::vector<float> sink_log2(batch.sink_logits.size());
      for (size_t h = 0; h < sink_log2.size(); ++h)
        sink_log2[h] = float(double(batch.sink_logits[h]) * kLog2e);
      sinks = DeviceBuffer(*context.cuda, sink_log2.size() * sizeof(float));
      sinks.upload(sink_log2.data(), sink_log2.size() * sizeof(float));
      p.sink_log2 = reinterpret_cast<const float*>(sinks.address());
    }
    if (p.num_splits > 1) {
      const size_t rows = size_t(p.num_splits) * size_t(batch.num_seqs) * size_t(m.num_q_heads);
      const size_t out_bytes = rows * size_t(m.head_dim) * sizeof(float);
      CUdeviceptr scratch = context.workspace->get(out_bytes + rows * sizeof(float));
      p.partial_out = reinterpret_cast<float*>(scratch);
      p.partial_lse = reinterpret_cast<float*>(scratch + out_bytes);
    }

    LaunchShape attention_shape;
    attention_shape.grid_x = unsigned(batch.num_seqs);
    attention_shape.grid_y = unsigned(m.num_kv_heads);
    attention_shape.grid_z = unsigned(p.num_splits);
    attention_shape.block_x = unsigned(tensorcore::threads(c.warps));
    attention_shape.shared_bytes = unsigned(smem);
    LaunchShape merge_shape;
    merge_shape.grid_x = unsigned(batch.num_seqs);
    merge_shape.grid_y = unsigned(m.num_q_heads);
    merge_shape.block_x = unsigned(m.head_dim / 2);
    return std::make_unique<TensorCoreLauncher>(context, attention, merge, attention_shape,
                                                merge_shape, p, std::move(sinks));
  }

  Work work(const Batch& batch) const override { return paged_decode_work(batch); }

 private:
  static std::string attention_kernel(int code, int head_dim, const TensorCoreConfig& c) {
    return "attn::paged_decode_tensorcore<" + std::to_string(code) + ", " +
           std::to_string(head_dim) + ", " + std::to_string(c.warps) + ", " +
           std::to_string(c.tile_tokens) + ", " + std::to_string(c.stages) + ">";
  }
  static std::string merge_kernel(int code, int head_dim) {
    return "attn::paged_decode_tensorcore_merge<" + std::to_string(code) + ", " +
           std::to_string(head_dim) + ">";
  }
};

}  // namespace

std::unique_ptr<Variant> make_paged_decode_tensorcore() {
  return std::make_unique<TensorCoreVariant>();
}

}  // namespace attn
