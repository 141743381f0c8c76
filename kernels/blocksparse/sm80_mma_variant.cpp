// Host side of blocksparse.sm80_mma (device code: mma.cuh, rules: mma_traits.hpp).
#include <algorithm>
#include <climits>

#include "kernels/blocksparse/blocksparse_params.hpp"
#include "kernels/blocksparse/blocksparse_variants.hpp"
#include "kernels/blocksparse/sm80_mma_traits.hpp"
#include "kernels/dtype_code_of.hpp"
#include "kernels/flash_fwd/flash_fwd_variants.hpp"
#include "kernels/flash_fwd/gathered_kv.hpp"
#include "kernels/launch_inputs.hpp"
#include "kernels/params_launcher.hpp"

namespace attn {

namespace {

// A config, and whether the batch's cache is fp8 (its codes dequantised in the kernel).
struct MmaConfig {
  int tile_m, tile_n, warps, stages;
  bool fp8;
  MmaConfig(const KernelConfig& c, const Batch& batch)
      : tile_m(int(c.get("tile_m"))),
        tile_n(int(c.get("tile_n"))),
        warps(int(c.get("warps"))),
        stages(int(c.get("stages"))),
        fp8(batch.kv_fp8()) {}
  int shared_bytes(int head_dim, int v_head_dim) const {
    return blocksparse::sm80_mma::shared_bytes(head_dim, v_head_dim, tile_m, tile_n, stages, fp8);
  }
  int check(int head_dim, int v_head_dim) const {
    return blocksparse::sm80_mma::check(head_dim, v_head_dim, tile_m, tile_n, warps, stages, fp8);
  }
};

KernelConfig make_config(int tile_m, int tile_n, int warps, int stages) {
  return KernelConfig{{"tile_m", tile_m}, {"tile_n", tile_n}, {"warps", warps}, {"stages", stages}};
}

std::string describe_rule(int rule, const MmaConfig& c, int head_dim, int v_head_dim,
                          int block_size) {
  switch (rule) {
    case blocksparse::sm80_mma::kHeadDim:
      return "head_dim " + std::to_string(head_dim) + " is not 64, 80, 96, 128 or 192";
    case blocksparse::sm80_mma::kVHeadDim:
      return "v_head_dim " + std::to_string(v_head_dim) +
             " must be 64, 80, 96, 128 or 192 and at most head_dim " + std::to_string(head_dim);
    case blocksparse::sm80_mma::kWarps:
      return "warps must be 1, 2, 4 or 8";
    case blocksparse::sm80_mma::kStages:
      return "stages must be 2, 3 or 4";
    case blocksparse::sm80_mma::kTileM:
      return "tile_m must be " + std::to_string(16 * c.warps) + " or " +
             std::to_string(32 * c.warps) + " with " + std::to_string(c.warps) +
             " warps (16 or 32 query rows per warp)";
    case blocksparse::sm80_mma::kTileN:
      return "tile_n must be 16, 32, 64 or 128";
    case blocksparse::sm80_mma::kSharedMemory:
      return "needs " + std::to_string(c.shared_bytes(head_dim, v_head_dim)) +
             " bytes of shared memory (limit " +
             std::to_string(flash_fwd::sm80_mma::kMaxSharedBytes) +
             "): lower stages, tile_n or tile_m";
    case blocksparse::sm80_mma::kRegisters:
      return "too many registers per thread (estimate " +
             std::to_string(
                 blocksparse::sm80_mma::register_estimate(head_dim, c.tile_m, c.tile_n, c.warps)) +
             ", limit " + std::to_string(blocksparse::sm80_mma::max_register_estimate(c.fp8)) +
             "): lower tile_n, or use 16 query rows per warp (tile_m = 16 x warps)";
    case blocksparse::sm80_mma::kBlockSize:
      return "tile_m " + std::to_string(c.tile_m) + " and tile_n " + std::to_string(c.tile_n) +
             " must each divide the layout's block size " + std::to_string(block_size) +
             " (a query tile in one block row, a key tile in one block column)";
    default:
      return "invalid config";
  }
}

class MmaVariant : public Variant {
 public:
  std::string name() const override { return "blocksparse.sm80_mma"; }
  Family family() const override { return Family::blocksparse; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "block-sparse FlashAttention-2 style: mma.sync over the kept blocks of each q head's "
           "CSR layout row, cp.async K/V pipeline";
  }

  // The family's features at head dims 64 to 192, V narrower than Q and K, and fp8 caches.
  FeatureSet features() const override {
    return blocksparse_features()
        .with(feature::kHeadDim, {64, 80, 96, 128, 192})
        .with(feature::kVHeadDim, {64, 80, 96, 128, 192})
        .with(feature::kKvDtype, {"fp8_e4m3.per_tensor", "fp8_e4m3.per_head"});
  }

  // Tile sizes that divide the layout's block (the others are refused anyway).
  std::vector<ConfigAxis> space(const Batch& batch, const Target&) const override {
    const int block = batch.block_sparse ? batch.block_sparse->block_size : 64;
    std::vector<int64_t> tiles;
    for (int t : {16, 32, 64, 128}) {
      if (block % t == 0) tiles.push_back(t);
    }
    if (tiles.empty()) tiles.push_back(16);
    return {
        {"tile_m", tiles,
         "q block size: query rows per CTA (16 or 32 per warp), dividing the "
         "layout's block"},
        {"tile_n", tiles, "kv block size: keys per pipeline stage, dividing the layout's block"},
        {"warps", {1, 2, 4, 8}, "warps per CTA, each owning tile_m / warps query rows"},
        {"stages", {2, 3, 4}, "cp.async pipeline depth: key tiles in flight"},
    };
  }

  // Not measured yet (written without a GPU). The largest tiles the layout's block allows within
  // the no-spill register rule, 16 rows per warp so Q stays in registers: for blocks of 64 (seed
  // 003's Phi-3 layouts) a 64 x 64 tile over 4 warps, which is seed 003's own BLOCK_M x BLOCK_N
  // and num_warps; two stages keep two CTAs per SM (87 KiB of shared memory each at head_dim 128).
  // An fp8 cache takes the same rule (its own shared memory and register limit), unmeasured.
  KernelConfig default_config(const Batch& batch, const Target& target) const override {
    const int head_dim = batch.spec.model.head_dim;
    const int v_head_dim = batch.spec.model.effective_v_head_dim();
    const int block = batch.block_sparse ? batch.block_sparse->block_size : 64;
    const std::vector<KernelConfig> candidates = {
        make_config(128, 64, 8, 2), make_config(64, 64, 4, 2), make_config(32, 32, 2, 2),
        make_config(16, 16, 1, 2)};
    for (const KernelConfig& config : candidates) {
      const MmaConfig c(config, batch);
      if (c.check(head_dim, v_head_dim) == blocksparse::sm80_mma::kOk &&
          blocksparse::sm80_mma::check_block(block, c.tile_m, c.tile_n) ==
              blocksparse::sm80_mma::kOk &&
          (target.max_shared_per_block <= 0 ||
           c.shared_bytes(head_dim, v_head_dim) <= target.max_shared_per_block)) {
        return config;
      }
    }
    return candidates.back();
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (Support s = supports_sm80_target(target, "mma.sync bf16, cp.async"); !s) return s;
    if (Support s = blocksparse_supports_layout(batch); !s) return s;
    if (Support s = gathered_kv_supports(batch); !s) return s;
    const ModelShape& m = batch.spec.model;
    if (Support s = config_has_exactly(config, {"tile_m", "tile_n", "warps", "stages"}, name()); !s)
      return s;
    const MmaConfig c(config, batch);
    const int block = batch.block_sparse->block_size;
    const int v_head_dim = m.effective_v_head_dim();
    int rule = c.check(m.head_dim, v_head_dim);
    if (rule == blocksparse::sm80_mma::kOk)
      rule = blocksparse::sm80_mma::check_block(block, c.tile_m, c.tile_n);
    if (rule != blocksparse::sm80_mma::kOk)
      return Support::no(describe_rule(rule, c, m.head_dim, v_head_dim, block));
    return supports_shared_bytes(c.shared_bytes(m.head_dim, v_head_dim), target);
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    return {gathered_kv_program(*this, batch, config, target, "kernels/blocksparse/sm80_mma.cuh",
                                attention_kernel(batch, MmaConfig(config, batch)))};
  }

  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    const Batch& batch = problem.batch();
    ATTN_ASSERT(problem.backend() == Backend::cuda, "blocksparse.sm80_mma needs a device problem");
    const Support support = check(batch, config, context.target);
    ATTN_ASSERT(support.ok, support.reason);
    const MmaConfig c(config, batch);
    const ModelShape& m = batch.spec.model;
    const BlockSparseLayout& layout = *batch.block_sparse;
    const JitProgram program = programs(batch, config, context.target).front();
    CUfunction attention = context.loader->function(program, attention_kernel(batch, c));
    CUfunction gather = context.loader->function(program, kGatherKvKernel);
    const int smem = c.shared_bytes(m.head_dim, m.effective_v_head_dim());
    allow_dynamic_shared_memory(context, attention, smem);

    std::vector<DeviceBuffer> buffers = gather_kv_contiguous(problem, context, gather);
    const std::vector<int32_t> tiles = blocksparse_mma_schedule(batch, c.tile_m, c.tile_n);
    buffers.push_back(upload_array(*context.cuda, tiles));
    buffers.push_back(upload_array(*context.cuda, layout.crow));
    buffers.push_back(upload_array(*context.cuda, layout.col));

    BlockSparseMmaParams p{};
    p.q = problem.q();
    p.k = buffers[0].pointer();
    p.v = buffers[1].pointer();
    p.out = problem.out();
    p.cu_seqlens_q = problem.cu_seqlens_q();
    p.cu_seqlens_kv = static_cast<const int*>(buffers[2].pointer());
    p.tiles = static_cast<const int*>(buffers[3].pointer());
    p.crow = static_cast<const int*>(buffers[4].pointer());
    p.col = static_cast<const int*>(buffers[5].pointer());
    p.num_blocks = layout.num_blocks;
    p.max_nnz = layout.max_nnz;
    p.block_size = layout.block_size;
    p.num_q_heads = m.num_q_heads;
    p.num_kv_heads = m.num_kv_heads;
    p.group = batch.spec.group_size();
    p.scale_log2 = float(double(batch.softmax_scale) * kLog2e);
    if (c.fp8) {
      p.k_scale = upload_kv_scales(*context.cuda, batch.k_scales, m.num_kv_heads, buffers);
      p.v_scale = upload_kv_scales(*context.cuda, batch.v_scales, m.num_kv_heads, buffers);
    }

    LaunchShape shape;
    shape.grid_x = unsigned(tiles.size() / 2);
    shape.grid_y = unsigned(m.num_q_heads);
    shape.block_x = unsigned(sm80_attention::threads(c.warps));
    shape.shared_bytes = unsigned(smem);
    return std::make_unique<ParamsLauncher<BlockSparseMmaParams>>(context, attention, shape, p,
                                                                  std::move(buffers));
  }

  Work work(const Batch& batch) const override { return blocksparse_work(batch); }

 private:
  static std::string attention_kernel(const Batch& batch, const MmaConfig& c) {
    const int dtype = dtype_code_of(batch.spec.model.dtype);
    return "attn::blocksparse_sm80_mma<" + std::to_string(dtype) + ", " +
           std::to_string(batch.spec.model.head_dim) + ", " + std::to_string(c.tile_m) + ", " +
           std::to_string(c.tile_n) + ", " + std::to_string(c.warps) + ", " +
           std::to_string(c.stages) + ", " + (batch.causal ? "true" : "false") +
           (c.fp8 ? ", " + std::to_string(batch.spec.model.effective_v_head_dim()) + ", true"
            : batch.spec.model.effective_v_head_dim() != batch.spec.model.head_dim
                ? ", " + std::to_string(batch.spec.model.effective_v_head_dim())
                : "") +
           ">";
  }
};

}  // namespace

std::unique_ptr<Variant> make_blocksparse_mma() {
  return std::make_unique<MmaVariant>();
}

}  // namespace attn
