// Host side of flash_fwd.sm90_wgmma (device code: sm90_wgmma.cuh, rules: sm90_wgmma_traits.hpp).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "kernels/common/sm90_attention_rules.hpp"
#include "kernels/dequant_then_attend.hpp"
#include "kernels/device/tensor_map.hpp"
#include "kernels/dtype_code_of.hpp"
#include "kernels/flash_fwd/flash_fwd_variants.hpp"
#include "kernels/flash_fwd/gathered_kv.hpp"
#include "kernels/flash_fwd/sm90_wgmma_params.hpp"
#include "kernels/flash_fwd/sm90_wgmma_traits.hpp"
#include "kernels/flash_fwd/work_order.hpp"
#include "kernels/launch_inputs.hpp"
#include "kernels/params_launcher.hpp"

namespace attn {

namespace {

struct Sm90Config {
  int tile_m, tile_n, stages, consumers;
  explicit Sm90Config(const KernelConfig& c)
      : tile_m(int(c.get("tile_m"))),
        tile_n(int(c.get("tile_n"))),
        stages(int(c.get("stages"))),
        consumers(int(c.get("consumers"))) {}
  // v_head_dim: V's width (ModelShape::effective_v_head_dim).
  int shared_bytes(int head_dim, int v_head_dim) const {
    return flash_fwd::sm90_wgmma::shared_bytes(head_dim, tile_m, tile_n, stages, v_head_dim);
  }
  int check(int head_dim, int v_head_dim) const {
    return flash_fwd::sm90_wgmma::check(head_dim, tile_m, tile_n, stages, consumers, v_head_dim);
  }
};

// The kernel's query tiles end at their sequence's last row (sm90_wgmma.cuh, Item).
constexpr QueryTilesFrom kTilesFrom = QueryTilesFrom::end;

// The persistent grid's work items: the query tiles of every sequence times the q heads.
int64_t flash_sm90_items(const Batch& batch, int tile_m) {
  int64_t tiles = 0;
  for (int64_t q_len : batch.query_lens) tiles += (q_len + tile_m - 1) / tile_m;
  return tiles * batch.spec.model.num_q_heads;
}

// What the work order needs to know of the batch and the GPU (flash_fwd_work_order): the
// persistent grid's CTAs, and each sequence's K and V bytes of one kv head, gathered contiguous.
WorkOrderShape work_order_shape(const Batch& batch, const Target& target) {
  const ModelShape& m = batch.spec.model;
  WorkOrderShape shape;
  shape.num_q_heads = m.num_q_heads;
  shape.group = batch.spec.group_size();
  shape.ctas = std::max(target.sm_count, 1);
  for (const int64_t kv_len : batch.kv_lens)
    shape.kv_seq_bytes.push_back(kv_len * (m.head_dim + m.effective_v_head_dim()) *
                                 int64_t(size_of(m.dtype)));
  shape.l2_bytes = target.l2_bytes;
  return shape;
}

KernelConfig make_config(int tile_m, int tile_n, int stages, int consumers) {
  return KernelConfig{
      {"tile_m", tile_m}, {"tile_n", tile_n}, {"stages", stages}, {"consumers", consumers}};
}

// The key tile widths a default config chooses from, widest first: FlashAttention-3's for the head
// dim (hopper/tile_size.h: 176 keys at 128, 80 at 256; at 64 it pairs 192 rows with 128 to 192
// keys, we keep 128 rows) and the power of two below. Measured on an H200 with c2.st2.tm128
// (BENCHMARKS.md, flash_fwd, "wider key tiles"): d64 4x4096 1292 us at 128 keys, 1227 at 192;
// d128 4x4096 881 at 128, 861 at 176; d256 4x4096 822 at 64, 787 at 80. Head dims 80 and 96
// take 128's (their accumulators are smaller), 192 FlashAttention-3's 112 and narrower ones
// (not measured here).
std::vector<int> default_widths(int head_dim) {
  if (head_dim == 64) return {192, 176, 128};
  if (head_dim <= 128) return {176, 128};
  if (head_dim == 192) return {112, 96, 64};
  return {80, 64};
}

// What a key tile costs beyond its keys (its barriers, the row maxima's shuffles, O's rescale,
// the issue of two products), in keys. The same sweep: at d64 4x4096 22 tiles of 192 keys took
// 0.950x the time of 32 tiles of 128, which about 40 keys per tile explain; with 32 the choice is
// the measured best width on every case of that sweep but d64 16x1024 causal (128 keys, 0.5%
// behind 192).
constexpr int64_t kTileCostKeys = 32;

// The width of `widths` (widest first) whose query tiles of 128 rows load the fewest keys
// weighted by kTileCostKeys: a wide tile pays where it divides the sequences' keys well (192
// keys over 4096: 22 tiles of which the last has 64 keys; over 1024 the sixth tile has 64 of 192,
// so 176 wins there), less so near a causal diagonal. Ties keep the wider.
int default_tile_n(const Batch& batch, const std::vector<int>& widths) {
  int best = widths.front();
  int64_t best_cost = INT64_MAX;
  for (int tile_n : widths) {
    const int64_t cost =
        flash_fwd_key_tiles(batch, 128, tile_n, kTilesFrom) * (tile_n + kTileCostKeys);
    if (cost < best_cost) {
      best = tile_n;
      best_cost = cost;
    }
  }
  return best;
}

// The kernel's LAST_KEYS (flash_fwd::sm90_wgmma::last_tile_keys): where the config narrows the last
// tile (flash_fwd::sm90_wgmma::narrows_last_tile), the most keys any sequence's last key tile
// holds, in whole k16 steps (16 where no sequence has keys); tile_n (the whole tile) elsewhere.
int last_tile_keys(const Batch& batch, int tile_n) {
  if (!flash_fwd::sm90_wgmma::narrows_last_tile(batch.spec.model.head_dim, tile_n, batch.causal))
    return tile_n;
  int keys = 16;
  for (const int64_t kv_len : batch.kv_lens) {
    if (kv_len > 0)
      keys = std::max(keys, flash_fwd::sm90_wgmma::last_tile_keys(int(kv_len), tile_n));
  }
  return keys;
}

// Key tiles per query tile up to which the default takes more stages.
constexpr int64_t kShortItemTiles = 8;

std::string describe_rule(int rule, const Sm90Config& c, int head_dim, int v_head_dim) {
  const std::string reason = sm90_attention::describe_tile_rule(
      rule, head_dim, c.tile_n, c.consumers, c.shared_bytes(head_dim, v_head_dim),
      flash_fwd::sm90_wgmma::kAnyTileN, flash_fwd::sm90_wgmma::kMaxConsumers,
      flash_fwd::sm90_wgmma::consumer_registers(c.consumers), v_head_dim);
  return reason.empty() ? "invalid config" : reason;
}

class Sm90WgmmaVariant : public FlashFwdVariant {
 public:
  std::string name() const override { return "flash_fwd.sm90_wgmma"; }
  Family family() const override { return Family::flash_fwd; }
  Backend backend() const override { return Backend::cuda; }
  std::string summary() const override {
    return "FlashAttention-3 style (sm_90a): TMA + mbarriers, wgmma, producer/consumer "
           "warpgroups with setmaxnreg, softmax overlapped with P.V";
  }

  // The family's features and head dims 80, 96 and 192, and 192 with a V of 128
  // (sm90_attention::head_dims_allowed; other narrower Vs are declined by the config's check).
  // An fp8 cache's gathered codes are converted to 16-bit by a pass before the kernel
  // (kernels/common/fp8_dequantize.cuh: wgmma's operands stay 16-bit), timed with it; the scales
  // join the logits and the output.
  FeatureSet features() const override {
    return flash_fwd_features()
        .with(feature::kHeadDim, {64, 80, 96, 128, 192, 256})
        .with(feature::kVHeadDim, {128});
  }

  std::vector<ConfigAxis> space(const Batch&, const Target&) const override {
    return sm90_attention::tile_axes("query rows", {64, 80, 128, 176, 192},
                                     flash_fwd::sm90_wgmma::kMaxConsumers);
  }

  // Three consumer warpgroups at head dim 64 (below). Otherwise two (128 query rows), the key
  // tile width of the head dim's candidates that loads the fewest keys once each tile's fixed
  // cost is counted (default_tile_n), two stages or, for short items, more. One consumer where
  // two do not fit the device's shared memory.
  KernelConfig default_config(const Batch& batch, const Target& target) const override {
    const int head_dim = batch.spec.model.head_dim;
    const int v_head_dim = batch.spec.model.effective_v_head_dim();
    auto fits = [&](const KernelConfig& config) {
      const Sm90Config c(config);
      return c.check(head_dim, v_head_dim) == flash_fwd::sm90_wgmma::kOk &&
             (target.max_shared_per_block <= 0 ||
              c.shared_bytes(head_dim, v_head_dim) <= target.max_shared_per_block);
    };
    // Head dim 64: three consumer warpgroups (192 query rows, FlashAttention-3's choice there)
    // over 128-key tiles, the widest their 160 registers hold, in the most stages that fit. The
    // softmax's exponentials take as long as the products there, and a third warpgroup keeps
    // the tensor cores fed while two run theirs. Measured on an H200 (BENCHMARKS.md, flash_fwd,
    // "three consumer warpgroups"), against two consumers' best: d64 16x1024 353.70 -> 329.38
    // us, 16x1024 causal 231.60 -> 219.97, 4x4096 1234.62 -> 1151.95, 1x16384 4912.74 ->
    // 4682.66 (two stages); two and four stages within 1% on the longer cases.
    if (head_dim == 64) {
      for (int stages = 4; stages >= 2; --stages) {
        if (fits(make_config(192, 128, stages, 3))) return make_config(192, 128, stages, 3);
      }
    }
    std::vector<int> widths;
    for (int tile_n : default_widths(head_dim)) {
      if (fits(make_config(128, tile_n, 2, 2))) widths.push_back(tile_n);
    }
    if (widths.empty()) return make_config(64, 64, 2, 1);
    const int tile_n = default_tile_n(batch, widths);
    // Short items (few key tiles per query tile: 1024-token sequences, or causal ones up to
    // 2048) start and end often, and each start waits for its first K and V tiles, which the
    // producer can load only into stages the item before has freed: there, the most stages that
    // fit. Measured on an H200 (BENCHMARKS.md, flash_fwd, "wider key tiles"): d64 16x1024 366.40
    // us in 2 stages, 352.48 in 4; d64 16x1024 causal 242.59, 230.08; d128 16x1024 causal
    // 175.14, 165.90 in 3; longer items lose up to 1% (d64 4x4096 1229.95, 1239.44 in 3).
    const int64_t query_tiles = flash_sm90_items(batch, 128) / batch.spec.model.num_q_heads;
    const bool short_items =
        query_tiles > 0 &&
        flash_fwd_key_tiles(batch, 128, tile_n, kTilesFrom) <= kShortItemTiles * query_tiles;
    int stages = 2;
    for (int more = 4; short_items && more > 2; --more) {
      if (fits(make_config(128, tile_n, more, 2))) {
        stages = more;
        break;
      }
    }
    return make_config(128, tile_n, stages, 2);
  }

  Support supports(const Batch& batch, const KernelConfig& config,
                   const Target& target) const override {
    if (target.backend != Backend::cuda) return Support::no("needs a CUDA GPU");
    if (target.arch != "sm_90a") {
      return Support::no("needs sm_90a (Hopper: TMA, wgmma, setmaxnreg); this device is " +
                         target.arch);
    }
    if (Support s = gathered_kv_supports(batch); !s) return s;
    const ModelShape& m = batch.spec.model;
    if (Support s = config_has_exactly(config, {"tile_m", "tile_n", "stages", "consumers"}, name());
        !s)
      return s;
    const Sm90Config c(config);
    const int v_head_dim = m.effective_v_head_dim();
    const int rule = c.check(m.head_dim, v_head_dim);
    if (rule != flash_fwd::sm90_wgmma::kOk)
      return Support::no(describe_rule(rule, c, m.head_dim, v_head_dim));
    if (flash_sm90_items(batch, c.tile_m) > INT_MAX) {
      return Support::no("more than 2^31 work items (query tiles x q heads)");
    }
    return supports_shared_bytes(c.shared_bytes(m.head_dim, v_head_dim), target);
  }

  std::vector<JitProgram> programs(const Batch& batch, const KernelConfig& config,
                                   const Target& target) const override {
    const Sm90Config c(config);
    JitProgram program =
        gathered_kv_program(*this, batch, config, target, "kernels/flash_fwd/sm90_wgmma.cuh",
                            attention_kernel(batch, c));
    if (batch.kv_fp8()) add_dequantize_fp8(program, batch.spec.model.dtype);
    const int last = last_tile_keys(batch, c.tile_n);
    if (last < c.tile_n) program.name += ".last" + std::to_string(last);
    return {program};
  }

  std::unique_ptr<Launcher> prepare_with_lse(Problem& problem, const KernelConfig& config,
                                             ExecContext& context, float* lse) const override {
    const Batch& batch = problem.batch();
    ATTN_ASSERT(problem.backend() == Backend::cuda, "sm90_wgmma needs a device problem");
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

    // Contiguous K and V [total_kv, kv_heads, head_dim], gathered once from the paged pool.
    std::vector<DeviceBuffer> buffers = gather_kv_contiguous(problem, context, gather);
    // The work order, with shared-rows items (the kernel's SHARES_ROWS) weighed as the share
    // each warpgroup multiplies and drawn as late as the L2 budget allows, and the top tiles the
    // kernel stacks (STACKS) listed once per stack of consecutive q heads.
    std::vector<QueryTile> tiles = flash_fwd_query_tiles(batch, c.tile_m, c.tile_n, kTilesFrom);
    WorkOrderShape order_shape = work_order_shape(batch, context.target);
    if (flash_fwd::sm90_wgmma::shares_rows(m.head_dim, c.tile_m) && !batch.causal) {
      tiles = weigh_shared_rows(std::move(tiles), batch.query_lens, c.tile_m, c.consumers);
      order_shape.prefer_long_tail = true;
    }
    if (flash_fwd::sm90_wgmma::stacks_heads(m.head_dim, c.tile_m, batch.causal)) {
      order_shape.stacked = stacked_tiles(tiles, batch.query_lens, c.tile_m, c.consumers);
      order_shape.stack_heads = c.consumers;
    }
    const std::vector<int32_t> work = flash_fwd_work_order(tiles, order_shape);
    buffers.push_back(upload_array(*context.cuda, work));
    buffers.push_back(upload_array(*context.cuda, std::vector<int32_t>{0, 0}));  // p.schedule

    // Q, K and V as 3-D tensors (dims, heads, tokens) (encode_heads_tensor_map); the output as the
    // 2-D [tokens, heads * v_head_dim] (the staged epilogue's TMA stores, head dim 128 only). A
    // tensor map needs at least one row; without keys (never the case with query tokens) nothing
    // would read it.
    const DriverApi& api = context.cuda->api();
    const CUtensorMapDataType type = tensor_map_type(m.dtype);
    const uint64_t o_columns = uint64_t(m.num_q_heads) * uint64_t(v_head_dim);
    const uint64_t q_rows = uint64_t(batch.total_q);
    const uint64_t kv_rows = uint64_t(std::max<int64_t>(1, batch.total_kv));
    FlashFwdSm90Params p{};
    p.q_map = encode_heads_tensor_map(api, type, problem.q(), m.head_dim, m.num_q_heads, q_rows,
                                      uint32_t(c.tile_m));
    // An fp8 cache: the pass's 16-bit copies of the gathered codes, which the kernel reads instead.
    const GatheredKvRows kv = dequantised_gathered_kv(batch, context, buffers);
    p.k_scale = kv.k_scale;
    p.v_scale = kv.v_scale;
    p.k_map = encode_heads_tensor_map(api, type, kv.k_rows, m.head_dim, m.num_kv_heads, kv_rows,
                                      uint32_t(c.tile_n));
    p.v_map = encode_heads_tensor_map(api, type, kv.v_rows, v_head_dim, m.num_kv_heads, kv_rows,
                                      uint32_t(c.tile_n));
    p.o_map = encode_tensor_map_2d(api, type, problem.out(), o_columns, q_rows, o_columns * 2,
                                   uint32_t(sm90_attention::kConsumerRows));
    p.q_rows_map = encode_heads_tensor_map(api, type, problem.q(), m.head_dim, m.num_q_heads,
                                           q_rows, uint32_t(sm90_attention::kConsumerRows));
    p.out = problem.out();
    p.lse = lse;
    p.cu_seqlens_q = problem.cu_seqlens_q();
    p.cu_seqlens_kv = static_cast<const int*>(buffers[2].pointer());
    p.work = static_cast<const int*>(buffers[3].pointer());
    p.items = int(work.size() / 3);
    ATTN_ASSERT(p.items <= flash_sm90_items(batch, c.tile_m),
                "work items: at most query tiles x q heads");
    p.schedule = static_cast<int*>(buffers[4].pointer());
    p.num_q_heads = m.num_q_heads;
    p.group = batch.spec.group_size();
    p.scale_log2 = float(double(batch.softmax_scale) * kLog2e);

    LaunchShape shape;
    // Persistent: at most one CTA per SM, each drawing work items in their order until none is
    // left.
    shape.grid_x = unsigned(std::min(p.items, std::max(context.target.sm_count, 1)));
    shape.block_x = unsigned(flash_fwd::sm90_wgmma::threads(c.consumers));
    shape.shared_bytes = unsigned(smem);
    auto attend = std::make_unique<ParamsLauncher<FlashFwdSm90Params>>(context, attention, shape, p,
                                                                       std::move(buffers));
    if (!batch.kv_fp8()) return attend;
    return std::make_unique<DequantThenAttend>(
        context, context.loader->function(program, dequantize_fp8_kernel(m.dtype)), kv.pass,
        std::move(attend));
  }

  Work work(const Batch& batch) const override { return flash_fwd_work(batch); }

 private:
  static std::string attention_kernel(const Batch& batch, const Sm90Config& c) {
    return "attn::flash_fwd_sm90_wgmma<" + std::to_string(dtype_code_of(batch.spec.model.dtype)) +
           ", " + std::to_string(batch.spec.model.head_dim) + ", " +
           std::to_string(batch.spec.model.effective_v_head_dim()) + ", " +
           std::to_string(c.tile_m) + ", " + std::to_string(c.tile_n) + ", " +
           std::to_string(c.stages) + ", " + std::to_string(c.consumers) + ", " +
           (batch.causal ? "true" : "false") + ", " +
           std::to_string(last_tile_keys(batch, c.tile_n)) + (batch.kv_fp8() ? ", true" : "") + ">";
  }
};

}  // namespace

std::unique_ptr<Variant> make_flash_fwd_sm90_wgmma() {
  return std::make_unique<Sm90WgmmaVariant>();
}

}  // namespace attn
