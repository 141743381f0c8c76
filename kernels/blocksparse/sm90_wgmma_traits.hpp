// Traits of blocksparse.sm90_wgmma: shared-memory layout, register split and validity derived from
// one config (head_dim, tile_n, stages, ctas_per_sm, consumers) and, once a batch is known, its
// layout's block size; and the encoding of the work plan the host builds (blocksparse_sm90_plan).
// The tile shapes, index maps and tile rules are those of the FA3-style Hopper kernels
// (kernels/common/sm90_attention_traits.hpp). Included by the host (to refuse a config, with a
// reason, before compiling it) and by the device template (which static_asserts the same rules).
#pragma once

#include "base/host_device.hpp"
#include "kernels/common/sm90_attention_traits.hpp"
#include "kernels/common/sm90_persistent_traits.hpp"

namespace attn {
namespace blocksparse::sm90_wgmma {

using sm90_attention::kOk;

// Each consumer warpgroup owns 64 query rows (one wgmma M), which lie in one block row of the
// layout whenever 64 divides the block size; a CTA's tile is 64 x consumers positions.
constexpr int kRowsPerConsumer = sm90_attention::kConsumerRows;
ATTN_HOST_DEVICE constexpr int tile_m(int consumers) {
  return kRowsPerConsumer * consumers;
}
ATTN_HOST_DEVICE constexpr int threads(int consumers) {
  return sm90_attention::threads(consumers);  // the producer warpgroup and the consumers
}

// --- The work plan (host: blocksparse_sm90_plan; device: the kernel reads it) ---
// One work item per (position tile, q head): kItemInts ints, heaviest tiles first, the q heads of
// a tile adjacent.
enum ItemField : int {
  kItemSeq = 0,        // sequence
  kItemTile,           // position tile t: positions [t x tile_m, (t + 1) x tile_m)
  kItemQHead,          // q head
  kItemFirstEntry,     // the item's first entry in the entry list
  kItemTiles,          // the key tiles the CTA loads (entries_per_tile entries each)
  kItemConsumerTiles,  // + w: the key tiles consumer w walks (the rest only pass its barriers)
  kItemInts = 8,       // padded to 32 bytes
};
// An entry is one run of kEntryKeys keys of one kept block: its first key (sequence-local) times
// kEntryScale, plus bit w when consumer w's rows keep the block. A key tile of tile_n keys gathers
// entries_per_tile consecutive entries of the item (any blocks, not necessarily neighbours); the
// entries of an item increase by key, and are padded to whole tiles with entries no consumer
// keeps (the last real entry's keys again: finite data the consumers hide).
constexpr int kEntryKeys = 64;
constexpr int kEntryScale = 4;
ATTN_HOST_DEVICE constexpr int entries_per_tile(int tile_n) {
  return tile_n / kEntryKeys;
}
ATTN_HOST_DEVICE constexpr int entry_key0(int entry) {
  return entry / kEntryScale;
}
ATTN_HOST_DEVICE constexpr bool entry_kept_by(int entry, int consumer) {
  return (entry >> consumer) & 1;
}

// mbarriers and item slots: sm90_persistent's (Q's full and empty per buffer, K's and V's per
// stage, the slots announcing each buffer's item).
ATTN_HOST_DEVICE constexpr int barrier_bytes(int stages, int q_buffers) {
  return sm90_persistent::barrier_bytes(stages, q_buffers);
}

// Hopper's shared memory per SM (228 KiB), of which the driver reserves 1 KiB per resident CTA.
constexpr int kSharedPerSm = 228 * 1024;
constexpr int kReservedSharedPerCta = 1024;
constexpr int kRegisterFile = 65536;  // 32-bit registers per SM

// Shared memory one CTA may use: the per-block opt-in limit, and with two CTAs per SM half of the
// SM's (less the reserve).
ATTN_HOST_DEVICE constexpr int shared_budget(int ctas_per_sm) {
  return ctas_per_sm * (sm90_attention::kMaxSharedBytes + kReservedSharedPerCta) <= kSharedPerSm
             ? sm90_attention::kMaxSharedBytes
             : kSharedPerSm / ctas_per_sm - kReservedSharedPerCta;
}
// v_head_dim (here and below): V's width, 0 for head_dim.
ATTN_HOST_DEVICE constexpr int shared_bytes_with(int head_dim, int tile_n, int stages,
                                                 int consumers, int q_buffers, int v_head_dim = 0) {
  return sm90_attention::tile_bytes(head_dim, tile_m(consumers), tile_n, stages, v_head_dim) +
         (q_buffers - 1) * sm90_attention::q_bytes(head_dim, tile_m(consumers)) +
         barrier_bytes(stages, q_buffers);
}
// Q buffers: the CTA is persistent (a work item after another); with two the next item's Q loads
// while the current item runs. Two wherever they fit the CTA's budget, else one.
ATTN_HOST_DEVICE constexpr int q_buffers(int head_dim, int tile_n, int stages, int consumers,
                                         int ctas_per_sm, int v_head_dim = 0) {
  return shared_bytes_with(head_dim, tile_n, stages, consumers, 2, v_head_dim) <=
                 shared_budget(ctas_per_sm)
             ? 2
             : 1;
}
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int tile_n, int stages, int consumers,
                                            int ctas_per_sm, int v_head_dim = 0) {
  return shared_bytes_with(head_dim, tile_n, stages, consumers,
                           q_buffers(head_dim, tile_n, stages, consumers, ctas_per_sm, v_head_dim),
                           v_head_dim);
}

// setmaxnreg budgets. The register file is split among the resident CTAs at launch; a CTA's
// setmaxnreg.inc takes what its own producer gave back with setmaxnreg.dec. The producer walks
// the work items (persistent grid), which at 24 registers would spill.
// - One CTA per SM: sm90_persistent's split (two consumers: 128 x 40 + 256 x 232 = 384 x 168;
//   one: 56 / 240, room to spare).
// - One consumer, two CTAs per SM: __launch_bounds__(256, 2) gives each thread 128 registers
//   (65536 / 512); the producer keeps 32 so the consumer can rise to 224 (128 x 32 + 128 x 224 =
//   256 x 128).
ATTN_HOST_DEVICE constexpr int producer_registers(int consumers, int ctas_per_sm) {
  return ctas_per_sm == 2 ? 32 : sm90_persistent::producer_registers(consumers);
}
ATTN_HOST_DEVICE constexpr int consumer_registers(int consumers, int ctas_per_sm) {
  return ctas_per_sm == 2 ? 224 : sm90_persistent::consumer_registers(consumers);
}
// Registers per thread at launch: the register file split among the resident CTAs' threads,
// rounded down to the allocation granularity of 8. The split above must fit a CTA's share.
ATTN_HOST_DEVICE constexpr int launch_registers(int consumers, int ctas_per_sm) {
  return kRegisterFile / (ctas_per_sm * threads(consumers)) / 8 * 8;
}
ATTN_HOST_DEVICE constexpr bool register_split_fits(int consumers, int ctas_per_sm) {
  return 128 * (producer_registers(consumers, ctas_per_sm) +
                consumers * consumer_registers(consumers, ctas_per_sm)) <=
         threads(consumers) * launch_registers(consumers, ctas_per_sm);
}

enum Rule : int {
  // sm90_attention::Rule's kOk .. kRegisters, then:
  kCtasPerSm = sm90_attention::kRuleCount,  // ctas_per_sm must be 1 or 2
  kTwoCtaShared,                            // two CTAs' shared memory exceeds the SM's
  kTwoCtaRegisters,                         // the consumer's registers exceed its two-CTA budget
  kTwoCtaConsumers,                         // two consumer warpgroups leave room for one CTA only
  kBlockSize,                               // 64 must divide the layout's block size
};

// block_size 0: not known yet (the config alone); checked when it is. The head dims are the
// consumer's (sm90_attention::head_dims_allowed: 64 to 256, and 192 with a V of 128); at 256 only
// 64-key tiles fit the registers.
ATTN_HOST_DEVICE constexpr int check(int head_dim, int tile_n, int stages, int consumers,
                                     int ctas_per_sm, int block_size = 0, int v_head_dim = 0) {
  if (!sm90_attention::head_dims_allowed(head_dim, v_head_dim)) return sm90_attention::kHeadDim;
  if (consumers != 1 && consumers != 2) return sm90_attention::kConsumers;
  if (ctas_per_sm != 1 && ctas_per_sm != 2) return kCtasPerSm;
  const int smem = shared_bytes(head_dim, tile_n, stages, consumers, ctas_per_sm, v_head_dim);
  const int tiles = sm90_attention::check_tiles(head_dim, tile_m(consumers), tile_n, stages,
                                                consumers, smem, false, 2, v_head_dim);
  if (tiles != kOk) return tiles;
  if (ctas_per_sm == 2 && consumers == 2) return kTwoCtaConsumers;
  if (smem > shared_budget(ctas_per_sm)) return kTwoCtaShared;
  if (sm90_attention::register_estimate(head_dim, tile_n, v_head_dim) >
      consumer_registers(consumers, ctas_per_sm))
    return ctas_per_sm == 2 ? int(kTwoCtaRegisters) : int(sm90_attention::kRegisters);
  if (block_size != 0 && (block_size % kRowsPerConsumer != 0 || block_size % kEntryKeys != 0))
    return kBlockSize;
  return kOk;
}

}  // namespace blocksparse::sm90_wgmma
}  // namespace attn
