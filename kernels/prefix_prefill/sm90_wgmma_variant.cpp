// Host side of prefix_prefill.sm90_wgmma (device code: sm90_wgmma.cuh, rules:
// sm90_wgmma_traits.hpp): the new tokens' gather and the tile schedule of prefix_prefill.sm80_mma,
// plus the TMA descriptors of Q, the paged pools (pages of 64 keys or more) and the gathered new
// tokens, and the pools' strides for the cp.async path (smaller pages, and every tile of an fp8
// cache whose codes the producer warpgroup converts); or, over an fp8 cache with fp8_dequant=1, the
// plan of the blocks the kernel converts once to 16-bit copies and the copies' tensor maps
// (sm90_fp8_copies.hpp).
#include <algorithm>

#include "kernels/common/sm90_attention_rules.hpp"
#include "kernels/device/tensor_map.hpp"
#include "kernels/dtype_code_of.hpp"
#include "kernels/launch_inputs.hpp"
#include "kernels/params_launcher.hpp"
#include "kernels/prefix_prefill/prefix_prefill_variants.hpp"
#include "kernels/prefix_prefill/sm90_fp8_copies.hpp"
#include "kernels/prefix_prefill/sm90_wgmma_params.hpp"
#include "kernels/prefix_prefill/sm90_wgmma_traits.hpp"

namespace attn {

namespace {

const char* const kAxes[] = {"tile_m", "tile_n", "stages", "consumers"};
// An fp8 cache's one more: 0, the producer warpgroup converts each tile it loads; 1, the kernel
// converts the blocks the launch reads to 16-bit copies once (sm90_fp8_copies.cuh).
const char* const kFp8DequantAxis = "fp8_dequant";

std::vector<std::string> axes_of(const Batch& batch) {
  std::vector<std::string> axes(std::begin(kAxes), std::end(kAxes));
  if (batch.kv_fp8()) axes.push_back(kFp8DequantAxis);
  return axes;
}

struct Sm90Config {
  int tile_m, tile_n, stages, consumers, fp8_dequant;
  explicit Sm90Config(const KernelConfig& c)
      : tile_m(int(c.get("tile_m"))),
        tile_n(int(c.get("tile_n"))),
        stages(int(c.get("stages"))),
        consumers(int(c.get("consumers"))),
        fp8_dequant(int(c.find(kFp8DequantAxis).value_or(0))) {}
  // The producer warpgroup converts fp8 codes (the kernel's KV_FP8); otherwise its tiles are
  // 16-bit, a 16-bit cache's or the copies the kernel makes of an fp8 cache's (converts_once).
  bool converts(const Batch& batch) const { return batch.kv_fp8() && fp8_dequant == 0; }
  bool converts_once(const Batch& batch) const { return batch.kv_fp8() && fp8_dequant == 1; }
  // The pages the kernel's context tiles come from: the copies' (tiles of tile_n keys) or the
  // batch's.
  int page_size(const Batch& batch) const {
    return converts_once(batch) ? tile_n : int(batch.page_size);
  }
  int box(const Batch& batch) const {
    return prefix_prefill::sm90_wgmma::box_tokens(page_size(batch), tile_n);
  }
  int shared_bytes(const Batch& batch) const {
    return prefix_prefill::sm90_wgmma::shared_bytes(batch.spec.model.head_dim, tile_m, tile_n,
                                                    stages, batch.spec.model.effective_v_head_dim(),
                                                    converts(batch));
  }
  int check(const Batch& batch) const {
    return prefix_prefill::sm90_wgmma::check(batch.spec.model.head_dim, tile_m, tile_n, stages,
                                             consumers, page_size(batch), batch.spec.group_size(),
                                             batch.spec.model.effective_v_head_dim(),
                                             converts(batch), batch.kv_fp8());
  }
};

KernelConfig make_config(int tile_m, int tile_n, int stages, int consumers) {
  return KernelConfig{
      {"tile_m", tile_m}, {"tile_n", tile_n}, {"stages", stages}, {"consumers", consumers}};
}

std::string describe_rule(int rule, const Sm90Config& c, const Batch& batch) {
  const int head_dim = batch.spec.model.head_dim;
  const int estimate = sm90_attention::register_estimate(head_dim, c.tile_n,
                                                         batch.spec.model.effective_v_head_dim());
  if (rule == sm90_attention::kRegisters &&
      estimate <= prefix_prefill::sm90_wgmma::register_limit(c.consumers)) {
    return "too many registers per consumer thread with fp8_dequant=1 (estimate " +
           std::to_string(estimate) + " and " +
           std::to_string(prefix_prefill::sm90_wgmma::kScaleRegisters) +
           " for the fp8 scales, setmaxnreg " +
           std::to_string(prefix_prefill::sm90_wgmma::consumer_registers(c.consumers)) +
           "): lower tile_n or consumers, or fp8_dequant=0";
  }
  const std::string tiles = sm90_attention::describe_tile_rule(
      rule, head_dim, c.tile_n, c.consumers, c.shared_bytes(batch), false, 2,
      prefix_prefill::sm90_wgmma::register_limit(c.consumers),
      batch.spec.model.effective_v_head_dim());
  if (!tiles.empty()) return tiles;
  switch (rule) {
    case prefix_prefill::sm90_wgmma::kPageSize:
      return "page size " + std::to_string(batch.page_size) + " with tile_n " +
             std::to_string(c.tile_n) +
             ": a TMA box (a page of 64 keys or more, or the tile's part of one) must hold a "
             "multiple of 8 keys and tile both the key tile and the page; smaller pages are "
             "copied and take any size (prefix_prefill.sm80_mma takes any page size)";
    case prefix_prefill::sm90_wgmma::kGroup:
      return "the GQA group " + std::to_string(batch.spec.group_size()) + " exceeds tile_m " +
             std::to_string(c.tile_m) + " (a CTA holds whole groups)";
    default:
      return "invalid config";
  }
}

class Sm90WgmmaVariant : public Variant {
 public:
  std::string name() const override { return "prefix_prefill.sm90_wgmma"; }
  Family family() const override { return Family::prefix_prefill; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "FlashAttention-3 style prefix-prefill (sm_90a): TMA page boxes (cp.async for pages "
           "under 64 keys) + mbarriers, wgmma, producer/consumer warpgroups, GQA rows packed";
  }

  // prefix_prefill.sm80_mma's features less two: the window (this kernel masks causally and at
  // the context's end only) and the vllm layout (its x-packed K and dims-major V have no TMA page
  // box here). prefix_prefill.sm80_mma runs both. fp8 K/V: the producer warpgroup converts.
  FeatureSet features() const override {
    return prefix_prefill_features()
        .without(feature::kSlidingWindow)
        .note(feature::kSlidingWindow, "prefix_prefill.sm80_mma runs windows")
        .with(feature::kKvLayout, {"nhd", "hnd"})
        .note(feature::kKvLayout, "prefix_prefill.sm80_mma reads the vllm layout")
        .with(feature::kHeadDim, {64, 80, 96, 128, 192, 256})
        .with(feature::kVHeadDim, {128});
  }

  std::vector<ConfigAxis> space(const Batch& batch, const Target&) const override {
    std::vector<ConfigAxis> axes = sm90_attention::tile_axes("rows (new tokens x GQA group)");
    if (batch.kv_fp8()) {
      axes.push_back(
          {kFp8DequantAxis,
           {0, 1},
           "fp8 cache: 0 the producer converts every tile it loads, 1 the kernel converts "
           "each block of keys it reads once, to 16-bit copies"});
    }
    return axes;
  }

  // Measured on an H200 (issue-6 case, BENCHMARKS.md, af2f81a: c2.st3.tm128.tn128 319.65 us,
  // st2 328.86, tn64 st2 / st3 432.90 / 418.10): two consumer warpgroups, 128 keys per stage where
  // the registers allow, three stages where the shared memory holds them (st2 where a device has
  // less; the persistent kernel's second Q buffer fits with st2 only, and st3 still won), one
  // consumer when the longest sequence fills at most 64 rows (decode-like batches), and 64 keys
  // per stage where the page size does not tile 128.
  //
  // An fp8 cache: the copies converted once where a context tile is read by more than one query
  // tile of 64 rows (prefix-prefill-llama3-8b-fp8-8x2048-512 on an H200: see BENCHMARKS.md), the
  // producer's conversion where each is read about once (decode-like batches).
  KernelConfig default_config(const Batch& batch, const Target& target) const override {
    std::vector<KernelConfig> candidates = tile_candidates(batch);
    if (batch.kv_fp8()) {
      // The preferred way first, then the other one's tiles (fp8_dequant=1 fits no tile of two
      // consumers at head dim 256).
      const int dequant = batch.max_query_len() * batch.spec.group_size() > 64 ? 1 : 0;
      const std::vector<KernelConfig> tiles = candidates;
      candidates.clear();
      for (int way : {dequant, 1 - dequant}) {
        for (KernelConfig c : tiles) {
          c.set(kFp8DequantAxis, way);
          candidates.push_back(c);
        }
      }
    }
    for (const KernelConfig& config : candidates) {
      const Sm90Config c(config);
      if (c.check(batch) == sm90_attention::kOk &&
          (target.max_shared_per_block <= 0 ||
           c.shared_bytes(batch) <= target.max_shared_per_block)) {
        return config;
      }
    }
    return candidates.back();
  }

  static std::vector<KernelConfig> tile_candidates(const Batch& batch) {
    const int head_dim = batch.spec.model.head_dim;
    std::vector<KernelConfig> candidates;
    if (batch.max_query_len() * batch.spec.group_size() <= 64) {
      candidates.push_back(make_config(64, 128, 2, 1));  // where the registers and memory allow
      candidates.push_back(make_config(64, 64, 2, 1));
    }
    if (head_dim <= 128) {
      candidates.push_back(make_config(128, 128, 3, 2));
      candidates.push_back(make_config(128, 128, 2, 2));
    }
    for (const KernelConfig& c : {make_config(128, 64, 2, 2), make_config(64, 64, 2, 1)})
      candidates.push_back(c);
    return candidates;
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (target.backend != Backend::cuda) return Support::no("needs a CUDA GPU");
    if (target.arch != "sm_90a") {
      return Support::no("needs sm_90a (Hopper: TMA, wgmma, setmaxnreg); this device is " +
                         target.arch);
    }
    if (Support s = prefix_prefill_supports_limits(batch); !s) return s;
    if (Support s = config_has_exactly(config, axes_of(batch), name()); !s) return s;
    const Sm90Config c(config);
    if (c.fp8_dequant != 0 && c.fp8_dequant != 1)
      return Support::no("fp8_dequant must be 0 or 1, not " + std::to_string(c.fp8_dequant));
    const int rule = c.check(batch);
    if (rule != sm90_attention::kOk) return Support::no(describe_rule(rule, c, batch));
    return supports_shared_bytes(c.shared_bytes(batch), target);
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    const Sm90Config c(config);
    JitProgram program;
    program.name = full_name(config) + ".d" + std::to_string(batch.spec.model.head_dim) +
                   (batch.spec.model.effective_v_head_dim() != batch.spec.model.head_dim
                        ? ".dv" + std::to_string(batch.spec.model.effective_v_head_dim())
                        : std::string()) +
                   "." + to_string(batch.spec.model.dtype) + ".box" + std::to_string(c.box(batch)) +
                   (batch.kv_fp8() ? ".kv_fp8" : "");
    program.source = "#include \"kernels/prefix_prefill/sm90_wgmma.cuh\"\n";
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
    const Sm90Config c(config);
    const ModelShape& m = batch.spec.model;
    const JitProgram program = programs(batch, config, context.target).front();
    CUfunction attention = context.loader->function(program, attention_kernel(batch, c));
    CUfunction gather = context.loader->function(program, "attn::prefix_prefill_gather");
    const int smem = c.shared_bytes(batch);
    const int v_head_dim = m.effective_v_head_dim();
    const bool interleaved = prefix_prefill::sm90_wgmma::interleaves(m.head_dim, v_head_dim);
    allow_dynamic_shared_memory(context, attention, smem);

    const int group = batch.spec.group_size();
    const int tile_tokens = c.tile_m / group;
    std::vector<DeviceBuffer> buffers;
    auto upload = [&](const void* data, size_t bytes) {
      buffers.emplace_back(*context.cuda, std::max<size_t>(bytes, 16));
      if (bytes > 0) buffers.back().upload(data, bytes);
      return buffers.back().address();
    };
    // The new tokens' K/V from their cache slots, once, here (not timed).
    const PrefixPrefillNewTokens fresh = gather_new_tokens(problem, context, gather, buffers);
    const std::vector<int> tiles = prefix_prefill_cta_schedule(
        batch, tile_tokens, c.tile_n, c.consumers == 2 ? sm90_attention::kConsumerRows : 0);

    const DriverApi& api = context.cuda->api();
    const CUtensorMapDataType type = tensor_map_type(m.dtype);
    PrefixPrefillSm90Params p{};
    {
      // Q as (head_dim, q heads, tokens): a box is one 64-dim column block (zero-filled past the
      // row at head dims 80 and 96) of the group's heads of tile_tokens consecutive tokens, rows
      // token-major.
      const uint64_t dims[3] = {uint64_t(m.head_dim), uint64_t(m.num_q_heads),
                                uint64_t(batch.total_q)};
      const uint64_t strides[2] = {uint64_t(m.head_dim) * 2,
                                   uint64_t(m.num_q_heads) * uint64_t(m.head_dim) * 2};
      const uint32_t box[3] = {64, uint32_t(group), uint32_t(tile_tokens)};
      p.q_map = encode_tensor_map(api, type, problem.q(), 3, dims, strides, box);
    }
    const int box_tokens = c.box(batch);
    const bool fp8 = batch.kv_fp8();
    const bool converts = c.converts(batch);
    // Persistent: one CTA per SM (the shared memory allows no second), each drawing work items
    // in the schedule's order until none is left.
    const int grid = std::min(int(tiles.size() / 3), std::max(context.target.sm_count, 1));
    // The pools and block table the kernel reads: the batch's, or over an fp8 cache with
    // fp8_dequant=1 the 16-bit copies the kernel makes: tiles of tile_n keys (HND), numbered in
    // order (a block table of those numbers, which follow from the lengths alone).
    PagedPoolShape k_shape = paged_pool_shape(batch), v_shape = paged_pool_shape(batch, v_head_dim);
    const void* k_pool = problem.k_pool();
    const void* v_pool = problem.v_pool();
    const int* block_table = problem.block_table();
    const void* k_new = fresh.k_new;
    const void* v_new = fresh.v_new;
    int max_pages_per_seq = batch.max_pages_per_seq;
    if (c.converts_once(batch)) {
      const PrefixPrefillFp8CopiesPlan plan = plan_prefix_prefill_fp8_copies(
          prefix_prefill_seq_table(batch), fresh.new_rows, m.num_kv_heads, tiles, tile_tokens,
          c.tile_n, batch.causal, grid);
      auto allocate = [&](size_t bytes) {
        buffers.emplace_back(*context.cuda, std::max<size_t>(bytes, 16));
        return buffers.back().address();
      };
      auto zeros = [&](size_t bytes) {
        const std::vector<unsigned char> zero(bytes, 0);
        return upload(zero.data(), bytes);
      };
      PrefixPrefillFp8Copies& copies = p.copies;
      copies.k_pool = static_cast<const unsigned char*>(problem.k_pool());
      copies.v_pool = static_cast<const unsigned char*>(problem.v_pool());
      copies.block_table = problem.block_table();
      // The pools' byte strides (a code is one byte); a page of the pool is far below 2^31 codes
      // (prefix_prefill_supports_limits).
      for (const auto& [strides, value] :
           {std::pair{copies.k_strides, false}, std::pair{copies.v_strides, true}}) {
        const PoolStrides bytes = prefix_prefill_pool_strides(batch, value);
        strides[0] = int(bytes.page);
        strides[1] = int(bytes.token);
        strides[2] = int(bytes.head);
      }
      copies.page_size = int(batch.page_size);
      copies.max_pages_per_seq = batch.max_pages_per_seq;
      copies.k_new = static_cast<const unsigned char*>(fresh.k_new);
      copies.v_new = static_cast<const unsigned char*>(fresh.v_new);
      const size_t tile_rows = size_t(std::max(plan.tiles, 1)) * size_t(m.num_kv_heads) *
                               size_t(c.tile_n);  // rows of the context copies
      const size_t new_rows = size_t(fresh.new_rows) * size_t(m.num_kv_heads);
      copies.k_copies = reinterpret_cast<unsigned short*>(allocate(tile_rows * m.head_dim * 2));
      copies.v_copies = reinterpret_cast<unsigned short*>(allocate(tile_rows * v_head_dim * 2));
      copies.k_new_copies = reinterpret_cast<unsigned short*>(allocate(new_rows * m.head_dim * 2));
      copies.v_new_copies = reinterpret_cast<unsigned short*>(allocate(new_rows * v_head_dim * 2));
      copies.units = reinterpret_cast<const prefix_prefill::sm90_fp8_copies::Unit*>(
          upload(plan.units.data(), plan.units.size() * sizeof(plan.units[0])));
      copies.unit_count = int(plan.units.size());
      copies.context_blocks = plan.context_blocks;
      copies.flags = reinterpret_cast<int*>(zeros(size_t(plan.context_blocks + plan.new_blocks) *
                                                  size_t(m.num_kv_heads) * sizeof(int)));
      copies.counter = reinterpret_cast<unsigned long long*>(zeros(8));
      // One number per unit, and one past the last unit per converting warp (three per CTA).
      copies.takes_per_launch = int64_t(plan.units.size()) + 3 * int64_t(grid);
      copies.seqs = fresh.seqs;
      copies.kv_heads = m.num_kv_heads;
      for (PagedPoolShape* shape : {&k_shape, &v_shape}) {
        shape->hnd = true;
        shape->page_size = c.tile_n;
        shape->pages = std::max(plan.tiles, 1);
      }
      k_pool = copies.k_copies;
      v_pool = copies.v_copies;
      k_new = copies.k_new_copies;
      v_new = copies.v_new_copies;
      block_table =
          reinterpret_cast<const int*>(upload(plan.copy_tiles.data(), plan.copy_tiles.size() * 4));
      max_pages_per_seq = plan.max_tiles;
    }
    const bool hnd_pool = k_shape.hnd;
    const bool tma_pages =
        !converts && !prefix_prefill::sm90_wgmma::copies_context(box_tokens, c.tile_n);
    if (tma_pages && interleaved) {
      p.k_map = paged_pool_interleaved_tensor_map(context, k_shape, k_pool, box_tokens);
      p.v_map = paged_pool_interleaved_tensor_map(context, v_shape, v_pool, box_tokens);
    } else if (tma_pages) {
      // Column-block-major tiles (head dims 80 and 96): a box per page and column block, the
      // kernel's coordinates (dim, kv head, slot, page) for NHD and (dim, slot, kv head, page)
      // for HND (paged_pool_tensor_map's token_coordinate 2 and 1).
      p.k_map = paged_pool_tensor_map(context, k_shape, k_pool, box_tokens).map;
      p.v_map = paged_pool_tensor_map(context, v_shape, v_pool, box_tokens).map;
    }
    p.hnd = hnd_pool ? 1 : 0;
    // The pools as the cp.async path reads them (elements, which an fp8 cache's are bytes; NHD or
    // HND, launch_inputs.hpp): K's strides; the kernel scales them by v_head_dim / head_dim for
    // V's pool.
    p.k_pool = static_cast<const unsigned short*>(k_pool);
    p.v_pool = static_cast<const unsigned short*>(v_pool);
    const int pool_page = int(k_shape.page_size);
    p.page_stride = pool_page * m.num_kv_heads * m.head_dim;
    p.token_stride = hnd_pool ? m.head_dim : m.num_kv_heads * m.head_dim;
    p.head_stride = hnd_pool ? pool_page * m.head_dim : m.head_dim;
    if (fp8) {
      // K's scale joins the logits' and V's the output's (the kernel's KV_SCALES).
      p.k_scale = upload_kv_scales(*context.cuda, batch.k_scales, m.num_kv_heads, buffers);
      p.v_scale = upload_kv_scales(*context.cuda, batch.v_scales, m.num_kv_heads, buffers);
    }
    if (converts) {
      // The producer warpgroup copies the gathered codes too (rows of head_dim and v_head_dim
      // codes), and dequantises them.
      p.k_new = static_cast<const unsigned char*>(fresh.k_new);
      p.v_new = static_cast<const unsigned char*>(fresh.v_new);
    } else {
      // K_new and V_new (rows of head_dim and v_head_dim).
      auto new_tokens_map = [&](const void* rows, int row_dims) {
        if (!interleaved) {
          // (dims, kv heads, new_rows): a box is one column block of tile_n rows of one kv head.
          return encode_heads_tensor_map(api, type, rows, row_dims, m.num_kv_heads,
                                         uint64_t(fresh.new_rows), uint32_t(c.tile_n));
        }
        // (64, 8 rows, kv heads x column blocks, new_rows / 8): a box is tile_n rows of one kv
        // head's every column block, landing interleaved as the context's tiles.
        const uint64_t columns = uint64_t(m.num_kv_heads) * uint64_t(row_dims);
        const uint64_t dims[4] = {64, 8, columns / 64, uint64_t(fresh.new_rows) / 8};
        const uint64_t strides[3] = {columns * 2, 128, 8 * columns * 2};
        const uint32_t box[4] = {64, 8, uint32_t(row_dims / 64), uint32_t(c.tile_n / 8)};
        return encode_tensor_map(api, type, rows, 4, dims, strides, box);
      };
      p.k_new_map = new_tokens_map(k_new, m.head_dim);
      p.v_new_map = new_tokens_map(v_new, v_head_dim);
    }
    p.new_rows = int(fresh.new_rows);
    p.out = problem.out();
    p.block_table = block_table;
    p.tiles = reinterpret_cast<const int*>(upload(tiles.data(), tiles.size() * 4));
    p.items = int(tiles.size() / 3);
    const int zeros[2] = {0, 0};
    p.schedule = reinterpret_cast<int*>(upload(zeros, sizeof zeros));
    p.seqs = fresh.seqs;
    if (!batch.sink_logits.empty()) {
      const std::vector<float> sink_log2 = sink_logits_log2(batch);
      p.sink_log2 = reinterpret_cast<const float*>(upload(sink_log2.data(), sink_log2.size() * 4));
    }
    p.num_q_heads = m.num_q_heads;
    p.group = group;
    p.tile_tokens = tile_tokens;
    p.page_size = pool_page;
    p.max_pages_per_seq = max_pages_per_seq;
    p.causal = batch.causal ? 1 : 0;
    const LogitTransform logits = log2_logit_transform(batch);
    p.score_scale = logits.score_scale;
    p.cap_log2 = logits.cap_log2;

    LaunchShape shape;
    shape.grid_x = unsigned(grid);
    shape.block_x = unsigned(sm90_attention::threads(c.consumers));
    shape.shared_bytes = unsigned(smem);
    return std::make_unique<ParamsLauncher<PrefixPrefillSm90Params>>(context, attention, shape, p,
                                                                     std::move(buffers));
  }

  Work work(const Batch& batch) const override { return prefix_prefill_work(batch); }

 private:
  static std::string attention_kernel(const Batch& batch, const Sm90Config& c) {
    return "attn::prefix_prefill_sm90_wgmma<" +
           std::to_string(dtype_code_of(batch.spec.model.dtype)) + ", " +
           std::to_string(batch.spec.model.head_dim) + ", " +
           std::to_string(batch.spec.model.effective_v_head_dim()) + ", " +
           std::to_string(c.tile_m) + ", " + std::to_string(c.tile_n) + ", " +
           std::to_string(c.stages) + ", " + std::to_string(c.consumers) + ", " +
           std::to_string(c.box(batch)) +
           (c.converts(batch) ? ", true"
            : batch.kv_fp8()  ? ", false, true"
                              : "") +
           ">";
  }
};

}  // namespace

std::unique_ptr<Variant> make_prefix_prefill_sm90_wgmma() {
  return std::make_unique<Sm90WgmmaVariant>();
}

}  // namespace attn
