// Host side of blocksparse.sm90_wgmma (device code: sm90_wgmma.cuh, rules: sm90_wgmma_traits.hpp).
#include <algorithm>
#include <limits>

#include "kernels/blocksparse/blocksparse_variants.hpp"
#include "kernels/blocksparse/sm90_wgmma_params.hpp"
#include "kernels/blocksparse/sm90_wgmma_traits.hpp"
#include "kernels/common/sm90_attention_rules.hpp"
#include "kernels/dequant_then_attend.hpp"
#include "kernels/device/tensor_map.hpp"
#include "kernels/dtype_code_of.hpp"
#include "kernels/flash_fwd/flash_fwd_variants.hpp"  // gathered_kv_supports
#include "kernels/flash_fwd/gathered_kv.hpp"
#include "kernels/launch_inputs.hpp"
#include "kernels/params_launcher.hpp"

namespace attn {

namespace {

struct Sm90Config {
  int tile_n, stages, ctas_per_sm, consumers;
  explicit Sm90Config(const KernelConfig& c)
      : tile_n(int(c.get("tile_n"))),
        stages(int(c.get("stages"))),
        ctas_per_sm(int(c.get("ctas_per_sm"))),
        consumers(int(c.get("consumers"))) {}
  // v_head_dim: V's width (ModelShape::effective_v_head_dim).
  int shared_bytes(int head_dim, int v_head_dim) const {
    return blocksparse::sm90_wgmma::shared_bytes(head_dim, tile_n, stages, consumers, ctas_per_sm,
                                                 v_head_dim);
  }
  int check(int head_dim, int v_head_dim, int block_size = 0) const {
    return blocksparse::sm90_wgmma::check(head_dim, tile_n, stages, consumers, ctas_per_sm,
                                          block_size, v_head_dim);
  }
};

KernelConfig make_config(int tile_n, int stages, int ctas_per_sm, int consumers) {
  return KernelConfig{{"tile_n", tile_n},
                      {"stages", stages},
                      {"ctas_per_sm", ctas_per_sm},
                      {"consumers", consumers}};
}

std::string describe_rule(int rule, const Sm90Config& c, int head_dim, int v_head_dim,
                          int block_size) {
  using namespace blocksparse::sm90_wgmma;
  const int smem = c.shared_bytes(head_dim, v_head_dim);
  switch (rule) {
    case kCtasPerSm:
      return "ctas_per_sm must be 1 or 2";
    case kTwoCtaShared:
      return "two CTAs per SM need 2 x " + std::to_string(smem + kReservedSharedPerCta) +
             " bytes of shared memory (the SM has " + std::to_string(kSharedPerSm) +
             "): lower stages or tile_n, or run one CTA per SM";
    case kTwoCtaRegisters:
      return "too many registers per consumer thread for two CTAs per SM (estimate " +
             std::to_string(sm90_attention::register_estimate(head_dim, c.tile_n, v_head_dim)) +
             ", setmaxnreg " + std::to_string(consumer_registers(1, 2)) +
             "): lower tile_n or run one CTA per SM";
    case kTwoCtaConsumers:
      return "two consumer warpgroups (384 threads at up to 232 registers) leave room for one CTA "
             "per SM: ctas_per_sm must be 1 with consumers 2";
    case kBlockSize:
      return "64 (the query rows of a consumer warpgroup, and the keys of a plan entry) must "
             "divide the layout's block size " +
             std::to_string(block_size) +
             " (a warpgroup's rows in one block row, an entry's keys in one block column)";
    default: {
      const std::string reason = sm90_attention::describe_tile_rule(
          rule, head_dim, c.tile_n, c.consumers, smem, false, 2,
          consumer_registers(c.consumers, c.ctas_per_sm), v_head_dim);
      return reason.empty() ? "invalid config" : reason;
    }
  }
}

class Sm90WgmmaVariant : public Variant {
 public:
  std::string name() const override { return "blocksparse.sm90_wgmma"; }
  Family family() const override { return Family::blocksparse; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "block-sparse FlashAttention-3 style (sm_90a): a persistent grid over (64 or 128 "
           "positions, q head) items, the union of the item's block rows' kept key tiles by TMA + "
           "mbarriers, wgmma with softmax overlapped with P.V, producer/consumer warpgroups with "
           "setmaxnreg; two ping-pong consumers over adjacent block rows, or one per CTA at 1 or 2 "
           "CTAs per SM";
  }

  // The family's features and head dims 80, 96, 192 and 256, and 192 with a V of 128
  // (sm90_attention::head_dims_allowed; other narrower Vs are declined by the config's check).
  // An fp8 cache's gathered codes are converted to 16-bit by a pass before the kernel
  // (kernels/common/fp8_dequantize.cuh: wgmma's operands stay 16-bit), timed with it; the kv
  // head's scales join the logits and the output.
  FeatureSet features() const override {
    return blocksparse_features()
        .with(feature::kHeadDim, {64, 80, 96, 128, 192, 256})
        .with(feature::kVHeadDim, {128})
        .with(feature::kKvDtype, {"fp8_e4m3.per_tensor", "fp8_e4m3.per_head"});
  }

  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    return {
        {"tile_n",
         {64, 128},
         "keys per pipeline stage: one or two runs of 64 keys of kept blocks, gathered"},
        {"stages", {2, 3, 4}, "TMA buffers of K and of V in flight"},
        {"ctas_per_sm",
         {1, 2},
         "resident CTAs per SM (launch bounds, setmaxnreg split): two overlap each other's "
         "softmax with their wgmma, one has room for more stages and larger tiles"},
        {"consumers",
         {1, 2},
         "consumer warpgroups of 64 rows: two share each K/V load between adjacent block rows and "
         "ping-pong their softmax and matrix products (one CTA per SM)"},
    };
  }

  // Measured on an H200 (4 x 8192, BENCHMARKS.md): two consumers over adjacent block rows, one
  // CTA per SM, 128-key tiles (two gathered entries) with as many stages as fit beside two Q
  // buffers; then 64-key tiles; then one consumer at two CTAs per SM (the earlier default: each
  // one's softmax under the other's matrix products).
  KernelConfig default_config(const Batch& batch, const Target& target) const override {
    const int head_dim = batch.spec.model.head_dim;
    const int v_head_dim = batch.spec.model.effective_v_head_dim();
    const int block = batch.block_sparse ? batch.block_sparse->block_size : 64;
    const std::vector<KernelConfig> candidates = {
        make_config(128, 4, 1, 2), make_config(128, 2, 1, 2), make_config(64, 4, 1, 2),
        make_config(64, 2, 2, 1), make_config(64, 2, 1, 1)};
    for (const KernelConfig& config : candidates) {
      const Sm90Config c(config);
      if (c.check(head_dim, v_head_dim, block) == blocksparse::sm90_wgmma::kOk &&
          (target.max_shared_per_block <= 0 ||
           c.shared_bytes(head_dim, v_head_dim) <= target.max_shared_per_block)) {
        return config;
      }
    }
    return candidates.back();
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (target.backend != Backend::cuda) return Support::no("needs a CUDA GPU");
    if (target.arch != "sm_90a") {
      return Support::no("needs sm_90a (Hopper: TMA, wgmma, setmaxnreg); this device is " +
                         target.arch);
    }
    if (Support s = blocksparse_supports_layout(batch); !s) return s;
    if (Support s = gathered_kv_supports(batch); !s) return s;
    if (Support s =
            config_has_exactly(config, {"tile_n", "stages", "ctas_per_sm", "consumers"}, name());
        !s)
      return s;
    const ModelShape& m = batch.spec.model;
    const Sm90Config c(config);
    const int block = batch.block_sparse->block_size;
    const int v_head_dim = m.effective_v_head_dim();
    const int rule = c.check(m.head_dim, v_head_dim, block);
    if (rule != blocksparse::sm90_wgmma::kOk)
      return Support::no(describe_rule(rule, c, m.head_dim, v_head_dim, block));
    return supports_shared_bytes(c.shared_bytes(m.head_dim, v_head_dim), target);
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    JitProgram program =
        gathered_kv_program(*this, batch, config, target, "kernels/blocksparse/sm90_wgmma.cuh",
                            attention_kernel(batch, Sm90Config(config)));
    if (batch.kv_fp8()) add_dequantize_fp8(program, batch.spec.model.dtype);
    return {program};
  }

  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    const Batch& batch = problem.batch();
    ATTN_ASSERT(problem.backend() == Backend::cuda,
                "blocksparse.sm90_wgmma needs a device problem");
    const Support support = check(batch, config, context.target);
    ATTN_ASSERT(support.ok, support.reason);
    const Sm90Config c(config);
    const ModelShape& m = batch.spec.model;
    const JitProgram program = programs(batch, config, context.target).front();
    CUfunction attention = context.loader->function(program, attention_kernel(batch, c));
    CUfunction gather = context.loader->function(program, kGatherKvKernel);
    const int v_head_dim = m.effective_v_head_dim();
    const int smem = c.shared_bytes(m.head_dim, v_head_dim);
    allow_dynamic_shared_memory(context, attention, smem);

    // Contiguous K and V [total_kv, kv_heads, head_dim] (V: v_head_dim) and cu_seqlens_kv,
    // gathered once.
    std::vector<DeviceBuffer> buffers = gather_kv_contiguous(problem, context, gather);
    const BlockSparseSm90Plan plan = blocksparse_sm90_plan(batch, c.consumers, c.tile_n);
    ATTN_ASSERT(plan.num_items() <= std::numeric_limits<int>::max(),
                "blocksparse.sm90_wgmma: more work items than an int counts");
    buffers.push_back(upload_array(*context.cuda, plan.items));
    buffers.push_back(upload_array(*context.cuda, plan.entries));
    buffers.push_back(upload_array(*context.cuda, std::vector<int32_t>{0, 0}));

    // Q, K and V as 3-D tensors (dims, heads, tokens) (encode_heads_tensor_map: boxes past a row
    // of 80 or 96 dims are zero-filled). A tensor map needs at least one row; without keys (never
    // the case with query tokens) nothing would read it.
    const DriverApi& api = context.cuda->api();
    const CUtensorMapDataType type = tensor_map_type(m.dtype);
    const uint64_t q_rows = uint64_t(std::max<int64_t>(1, batch.total_q));
    const uint64_t kv_rows = uint64_t(std::max<int64_t>(1, batch.total_kv));
    BlockSparseSm90Params p{};
    p.q_map = encode_heads_tensor_map(api, type, problem.q(), m.head_dim, m.num_q_heads, q_rows,
                                      uint32_t(blocksparse::sm90_wgmma::tile_m(c.consumers)));
    // K and V boxes are one plan entry (64 keys): a tile gathers tile_n / 64 of them. An fp8
    // cache: the pass's 16-bit copies of the gathered codes, which the kernel reads instead.
    const GatheredKvRows kv = dequantised_gathered_kv(batch, context, buffers);
    const uint32_t entry_rows = uint32_t(blocksparse::sm90_wgmma::kEntryKeys);
    p.k_map = encode_heads_tensor_map(api, type, kv.k_rows, m.head_dim, m.num_kv_heads, kv_rows,
                                      entry_rows);
    p.v_map = encode_heads_tensor_map(api, type, kv.v_rows, v_head_dim, m.num_kv_heads, kv_rows,
                                      entry_rows);
    p.k_scale = kv.k_scale;
    p.v_scale = kv.v_scale;
    p.out = problem.out();
    p.cu_seqlens_q = problem.cu_seqlens_q();
    p.cu_seqlens_kv = static_cast<const int*>(buffers[2].pointer());
    p.items = static_cast<const int*>(buffers[3].pointer());
    p.entries = static_cast<const int*>(buffers[4].pointer());
    p.schedule = static_cast<int*>(buffers[5].pointer());
    p.num_items = int(plan.num_items());
    p.num_q_heads = m.num_q_heads;
    p.group = batch.spec.group_size();
    p.scale_log2 = float(double(batch.softmax_scale) * kLog2e);

    // Persistent: ctas_per_sm CTAs per SM, each drawing work items in the plan's order until
    // none is left.
    LaunchShape shape;
    shape.grid_x = unsigned(std::max<int64_t>(
        1, std::min<int64_t>(plan.num_items(),
                             int64_t(std::max(context.target.sm_count, 1)) * c.ctas_per_sm)));
    shape.block_x = unsigned(blocksparse::sm90_wgmma::threads(c.consumers));
    shape.shared_bytes = unsigned(smem);
    auto attend = std::make_unique<ParamsLauncher<BlockSparseSm90Params>>(context, attention, shape,
                                                                          p, std::move(buffers));
    if (!batch.kv_fp8()) return attend;
    return std::make_unique<DequantThenAttend>(
        context, context.loader->function(program, dequantize_fp8_kernel(m.dtype)), kv.pass,
        std::move(attend));
  }

  Work work(const Batch& batch) const override { return blocksparse_work(batch); }

 private:
  static std::string attention_kernel(const Batch& batch, const Sm90Config& c) {
    return "attn::blocksparse_sm90_wgmma<" + std::to_string(dtype_code_of(batch.spec.model.dtype)) +
           ", " + std::to_string(batch.spec.model.head_dim) + ", " +
           std::to_string(batch.spec.model.effective_v_head_dim()) + ", " +
           std::to_string(c.tile_n) + ", " + std::to_string(c.stages) + ", " +
           std::to_string(c.consumers) + ", " + std::to_string(c.ctas_per_sm) + ", " +
           (batch.causal ? "true" : "false") + (batch.kv_fp8() ? ", true" : "") + ">";
  }
};

}  // namespace

std::unique_ptr<Variant> make_blocksparse_sm90_wgmma() {
  return std::make_unique<Sm90WgmmaVariant>();
}

}  // namespace attn
