// Host side of blocksparse.sm80_mma_decode (device code: decode.cuh, rules: decode_traits.hpp).
#include <algorithm>
#include <climits>

#include "kernels/blocksparse/blocksparse_params.hpp"
#include "kernels/blocksparse/blocksparse_variants.hpp"
#include "kernels/blocksparse/sm80_mma_decode_traits.hpp"
#include "kernels/dtype_code_of.hpp"
#include "kernels/flash_fwd/gathered_kv.hpp"
#include "kernels/launch_inputs.hpp"
#include "kernels/params_launcher.hpp"

namespace attn {

namespace {

// A config, and whether the batch's cache is fp8 (its codes dequantised in the kernel).
struct DecodeConfig {
  int tile_n, warps, stages;
  bool fp8;
  DecodeConfig(const KernelConfig& c, const Batch& batch)
      : tile_n(int(c.get("tile_n"))),
        warps(int(c.get("warps"))),
        stages(int(c.get("stages"))),
        fp8(batch.kv_fp8()) {}
  int shared_bytes(int head_dim) const {
    return blocksparse::sm80_mma_decode::shared_bytes(head_dim, tile_n, warps, stages, fp8);
  }
  int check(int head_dim) const {
    return blocksparse::sm80_mma_decode::check(head_dim, tile_n, warps, stages, fp8);
  }
};

KernelConfig make_config(int tile_n, int warps, int stages) {
  return KernelConfig{{"tile_n", tile_n}, {"warps", warps}, {"stages", stages}};
}

std::string describe_rule(int rule, const DecodeConfig& c, int head_dim, int block_size) {
  switch (rule) {
    case blocksparse::sm80_mma_decode::kHeadDim:
      return "head_dim " + std::to_string(head_dim) + " is not 64, 80, 96, 128 or 192";
    case blocksparse::sm80_mma_decode::kWarps:
      return "warps must be 1, 2, 4 or 8";
    case blocksparse::sm80_mma_decode::kStages:
      return "stages must be 2, 3 or 4";
    case blocksparse::sm80_mma_decode::kTileN:
      return "tile_n must be a multiple of " + std::to_string(16 * c.warps) +
             " (16 keys per warp) and at most 128";
    case blocksparse::sm80_mma_decode::kSharedMemory:
      return "needs " + std::to_string(c.shared_bytes(head_dim)) +
             " bytes of shared memory (limit " +
             std::to_string(blocksparse::sm80_mma_decode::kMaxSharedBytes) +
             "): lower stages or tile_n";
    case blocksparse::sm80_mma_decode::kRegisters:
      return "too many registers per thread (estimate " +
             std::to_string(
                 blocksparse::sm80_mma_decode::register_estimate(head_dim, c.tile_n, c.warps)) +
             ", limit " +
             std::to_string(blocksparse::sm80_mma_decode::max_register_estimate(c.fp8)) +
             "): lower tile_n or use more warps";
    case blocksparse::sm80_mma_decode::kBlockSize:
      return "tile_n " + std::to_string(c.tile_n) + " must divide the layout's block size " +
             std::to_string(block_size) + " (a key tile in one block column)";
    default:
      return "invalid config";
  }
}

class DecodeVariant : public Variant {
 public:
  std::string name() const override { return "blocksparse.sm80_mma_decode"; }
  Family family() const override { return Family::blocksparse; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "block-sparse decode: GQA q heads in the mma M rows, only the union of the group's "
           "kept blocks, per-head masks";
  }

  FeatureSet features() const override {
    // Head dims 80, 96 and 192 too (the prefill variants take 64 and 128), and fp8 caches.
    return blocksparse_features()
        .with(feature::kHeadDim, {64, 80, 96, 128, 192})
        .with(feature::kKvDtype, {"fp8_e4m3.per_tensor", "fp8_e4m3.per_head"})
        .with(feature::kQueries, {"decode"})
        .note(feature::kQueries, "blocksparse.sm80_mma runs prefill");
  }

  std::vector<ConfigAxis> space(const Batch& batch, const Target&) const override {
    const int block = batch.block_sparse ? batch.block_sparse->block_size : 64;
    std::vector<int64_t> tiles;
    for (int t : {16, 32, 64, 128}) {
      if (block % t == 0) tiles.push_back(t);
    }
    if (tiles.empty()) tiles.push_back(16);
    return {
        {"tile_n", tiles, "kv block size: keys per tile, dividing the layout's block"},
        {"warps", {1, 2, 4, 8}, "warps per CTA, each owning tile_n / warps keys of every tile"},
        {"stages", {2, 3, 4}, "cp.async pipeline depth: tiles in flight"},
    };
  }

  // Not measured yet (written without a GPU): one layout block of 64 keys per tile, 16 keys per
  // warp over 4 warps, 3 stages (106 KiB at head_dim 128: two CTAs per SM on Hopper and A100). An
  // fp8 cache takes the same rule (its own shared memory), unmeasured.
  KernelConfig default_config(const Batch& batch, const Target& target) const override {
    const int head_dim = batch.spec.model.head_dim;
    const int block = batch.block_sparse ? batch.block_sparse->block_size : 64;
    const std::vector<KernelConfig> candidates = {make_config(64, 4, 3), make_config(32, 2, 3),
                                                  make_config(16, 1, 3), make_config(16, 1, 2)};
    for (const KernelConfig& config : candidates) {
      const DecodeConfig c(config, batch);
      if (c.check(head_dim) == blocksparse::sm80_mma_decode::kOk &&
          blocksparse::sm80_mma_decode::check_block(block, c.tile_n) ==
              blocksparse::sm80_mma_decode::kOk &&
          (target.max_shared_per_block <= 0 ||
           c.shared_bytes(head_dim) <= target.max_shared_per_block)) {
        return config;
      }
    }
    return candidates.back();
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (Support s = supports_sm80_target(target, "mma.sync bf16, cp.async"); !s) return s;
    if (Support s = blocksparse_supports_layout(batch); !s) return s;
    const ModelShape& m = batch.spec.model;
    if (batch.spec.group_size() > blocksparse::sm80_mma_decode::kMaxGroup) {
      return Support::no("GQA group of " + std::to_string(batch.spec.group_size()) +
                         " q heads per kv head; at most " +
                         std::to_string(blocksparse::sm80_mma_decode::kMaxGroup) +
                         " fit the mma's M rows (blocksparse.sm80_mma runs any group)");
    }
    if (!(batch.softmax_scale > 0.0f)) return Support::no("softmax_scale must be positive");
    if (batch.max_kv_len() * int64_t(m.num_kv_heads) * m.head_dim > INT_MAX) {
      return Support::no("a sequence of " + std::to_string(batch.max_kv_len()) +
                         " tokens is too long for 32-bit offsets in the kernel");
    }
    if (batch.total_kv > INT_MAX) return Support::no("more than 2^31 tokens in the batch");
    if (Support s = config_has_exactly(config, {"tile_n", "warps", "stages"}, name()); !s) return s;
    const DecodeConfig c(config, batch);
    const int block = batch.block_sparse->block_size;
    int rule = c.check(m.head_dim);
    if (rule == blocksparse::sm80_mma_decode::kOk)
      rule = blocksparse::sm80_mma_decode::check_block(block, c.tile_n);
    if (rule != blocksparse::sm80_mma_decode::kOk) {
      return Support::no(describe_rule(rule, c, m.head_dim, block));
    }
    return supports_shared_bytes(c.shared_bytes(m.head_dim), target);
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    const DecodeConfig c(config, batch);
    JitProgram program;
    program.name = full_name(config) + ".d" + std::to_string(batch.spec.model.head_dim) + "." +
                   to_string(batch.spec.model.dtype) + (c.fp8 ? ".kv_fp8" : "");
    // The gather that makes K and V contiguous comes from flash_fwd.
    program.source =
        "#include \"kernels/blocksparse/sm80_mma_decode.cuh\"\n#include "
        "\"kernels/flash_fwd/gather_kv.cuh\"\n";
    program.kernels = {attention_kernel(batch, c), kGatherKvKernel};
    program.arch = target.arch;
    return {program};
  }

  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    const Batch& batch = problem.batch();
    ATTN_ASSERT(problem.backend() == Backend::cuda,
                "blocksparse.sm80_mma_decode needs a device problem");
    const Support support = check(batch, config, context.target);
    ATTN_ASSERT(support.ok, support.reason);
    const DecodeConfig c(config, batch);
    const ModelShape& m = batch.spec.model;
    const JitProgram program = programs(batch, config, context.target).front();
    CUfunction attention = context.loader->function(program, attention_kernel(batch, c));
    CUfunction gather = context.loader->function(program, kGatherKvKernel);
    const int smem = c.shared_bytes(m.head_dim);
    allow_dynamic_shared_memory(context, attention, smem);

    std::vector<DeviceBuffer> buffers = gather_kv_contiguous(problem, context, gather);
    const BlockSparseDecodePlan plan = blocksparse_decode_plan(batch, c.tile_n);
    buffers.push_back(upload_array(*context.cuda, plan.ctas));
    buffers.push_back(upload_array(*context.cuda, plan.entry_begin));
    buffers.push_back(upload_array(*context.cuda, plan.entries));

    BlockSparseDecodeParams p{};
    p.q = problem.q();
    p.k = buffers[0].pointer();
    p.v = buffers[1].pointer();
    p.out = problem.out();
    p.cu_seqlens_kv = static_cast<const int*>(buffers[2].pointer());
    p.ctas = static_cast<const int*>(buffers[3].pointer());
    p.entry_begin = static_cast<const int*>(buffers[4].pointer());
    p.entries = static_cast<const int*>(buffers[5].pointer());
    p.num_q_heads = m.num_q_heads;
    p.num_kv_heads = m.num_kv_heads;
    p.group = batch.spec.group_size();
    p.scale_log2 = float(double(batch.softmax_scale) * kLog2e);
    if (c.fp8) {
      p.k_scale = upload_kv_scales(*context.cuda, batch.k_scales, m.num_kv_heads, buffers);
      p.v_scale = upload_kv_scales(*context.cuda, batch.v_scales, m.num_kv_heads, buffers);
    }

    LaunchShape shape;
    shape.grid_x = unsigned(plan.ctas.size() / 2);
    shape.block_x = unsigned(blocksparse::sm80_mma_decode::threads(c.warps));
    shape.shared_bytes = unsigned(smem);
    return std::make_unique<ParamsLauncher<BlockSparseDecodeParams>>(context, attention, shape, p,
                                                                     std::move(buffers));
  }

  Work work(const Batch& batch) const override { return blocksparse_work(batch); }

 private:
  static std::string attention_kernel(const Batch& batch, const DecodeConfig& c) {
    const int dtype = dtype_code_of(batch.spec.model.dtype);
    return "attn::blocksparse_sm80_mma_decode<" + std::to_string(dtype) + ", " +
           std::to_string(batch.spec.model.head_dim) + ", " + std::to_string(c.tile_n) + ", " +
           std::to_string(c.warps) + ", " + std::to_string(c.stages) + (c.fp8 ? ", true" : "") +
           ">";
  }
};

}  // namespace

std::unique_ptr<Variant> make_blocksparse_decode() {
  return std::make_unique<DecodeVariant>();
}

}  // namespace attn
