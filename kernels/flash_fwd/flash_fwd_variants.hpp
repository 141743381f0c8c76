// The flash_fwd family: dense attention forward over contiguous Q/K/V of a variable-length batch
// (seed 004's semantics): causal (aligned to the bottom right when a sequence's query and key
// lengths differ) or not, GQA any ratio, bf16/fp16 with fp32 accumulation, and an optional
// log-sum-exp output for training.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/variant.hpp"

namespace attn {

class Registry;

// Registers flash_fwd.sm80_mma and flash_fwd.sm90_wgmma (CUDA) and flash_fwd.cpu_reference.
void add_flash_fwd_variants(Registry& registry);

// A flash_fwd variant: prepare() as every variant, plus the optional log-sum-exp output.
class FlashFwdVariant : public Variant {
 public:
  // As prepare(), and every launch also writes lse [total_q, num_q_heads] floats: the natural log
  // of each row's softmax denominator, log(sum_j exp(scale * q.k_j)) over the visible keys j
  // (-inf for a row that sees none). `lse` is device memory for a device problem and host memory
  // for a host problem; the caller owns it. Null: no LSE, the same as prepare().
  virtual std::unique_ptr<Launcher> prepare_with_lse(Problem& problem, const KernelConfig& config,
                                                     ExecContext& context, float* lse) const = 0;
  std::unique_ptr<Launcher> prepare(Problem& problem, const KernelConfig& config,
                                    ExecContext& context) const override {
    return prepare_with_lse(problem, config, context, nullptr);
  }
};

// What the CUDA flash_fwd variants implement: prefill and mixed batches (a decode batch, one
// token per sequence, belongs to paged_decode), causal or non-causal dense masks, shared
// prefixes, NHD and HND pools (gathered into contiguous K/V), bf16/fp16 with K/V of Q's dtype or
// fp8 e4m3 with per-tensor or per-head scales (gathered as codes, dequantised by the kernels),
// head dims 64, 128 and 256 (flash_fwd.sm80_mma adds 80, 96, 192 and a narrower V,
// flash_fwd.sm90_wgmma 80, 96, 192 and 192 with a V of 128), pages of 1
// to 256 tokens. The family does not define sliding windows, soft-caps, sinks, block-sparse or
// explicit masks.
FeatureSet flash_fwd_features();

// minimum_work over K/V gathered per sequence: Q, the visible K and V rows once per kv head
// (causal: every key is some query's), and the output. FLOPs: 2 multiply-adds per (query head,
// visible key, dim) for Q.K and P.V (visible_pairs).
Work flash_fwd_work(const Batch& batch);

// Limits of the kernels that read K/V gathered into contiguous buffers by flash_fwd_gather_kv
// (flash_fwd.sm80_mma, blocksparse.sm80_mma; their features hold NHD or HND pools, bf16/fp16,
// and for flash_fwd.sm80_mma fp8 codes): a positive softmax scale, and offsets within a sequence
// and token counts that fit the kernels' 32-bit arithmetic.
Support gathered_kv_supports(const Batch& batch);

// Where a sequence's query tiles of tile_m rows start: at its first row (tile m holds rows
// m tile_m ..), or at its last (tile m holds rows q_len - (m + 1) tile_m .., the first tile of
// the sequence may start above row 0). From the end, the one partial tile of a sequence whose
// length tile_m does not divide is its top one, which under a causal mask sees the fewest keys.
enum class QueryTilesFrom { start, end };

// One query tile of a sequence: tile m_block of tile_m rows (QueryTilesFrom), and the key tiles
// of tile_n keys its rows see (with a causal mask, fewer near the top).
struct QueryTile {
  int32_t seq, m_block;
  int64_t key_tiles;
};

// Every query tile of every sequence, heaviest first (the most key tiles); ties keep sequence
// order.
std::vector<QueryTile> flash_fwd_query_tiles(const Batch& batch, int tile_m, int tile_n,
                                             QueryTilesFrom from = QueryTilesFrom::start);

// The (sequence, query tile) of every CTA column, heaviest first: the number of key tiles of
// tile_n keys a query tile of tile_m rows visits (fewer near the top of a causal sequence), so the
// longest CTAs start in the first wave and the short ones fill the tail. Ties keep sequence
// order. Flattened as [num_tiles][2].
std::vector<int32_t> flash_fwd_tile_schedule(const Batch& batch, int tile_m, int tile_n,
                                             QueryTilesFrom from = QueryTilesFrom::start);

// The key tiles of tile_n keys that all query tiles of tile_m rows visit together (one q head):
// the keys a kernel loads and multiplies, rounded up to whole tiles per query tile.
int64_t flash_fwd_key_tiles(const Batch& batch, int tile_m, int tile_n,
                            QueryTilesFrom from = QueryTilesFrom::start);

}  // namespace attn
