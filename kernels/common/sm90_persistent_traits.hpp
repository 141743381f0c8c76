// Traits of the persistent FlashAttention-3 style Hopper kernels (flash_fwd.sm90_wgmma,
// prefix_prefill.sm90_wgmma; device side: kernels/common/sm90_persistent.cuh): at most one CTA
// per SM walks work items one after another, so Q may have a second buffer (the next item's Q
// loads while the current item runs), the producer needs registers to walk the items, and the
// barriers gain Q's empty barriers and the slots that announce each buffer's item.
#pragma once

#include "base/host_device.hpp"
#include "kernels/common/sm90_attention_traits.hpp"

namespace attn {
namespace sm90_persistent {

// An item slot (sm90_persistent::ItemQueue): the item's index, and what else of the item the
// kernel's producer passes its consumers, in 16-byte units.
constexpr int kSlotBytes = 16;

// mbarriers: full and empty for each Q buffer; full + empty for K and for V in every stage;
// `extra` 8-byte words of the kernel's own (barriers, or flash_fwd.sm90_wgmma's shared-rows
// scratch); then a slot of `slot_bytes` per buffer that announces the item whose Q the buffer
// holds.
ATTN_HOST_DEVICE constexpr int barrier_bytes(int stages, int q_buffers, int extra = 0,
                                             int slot_bytes = kSlotBytes) {
  return (2 * q_buffers + 4 * stages + extra) * 8 + slot_bytes * q_buffers;
}
// Q buffers: two wherever they fit in shared memory, else one. v_head_dim: V's width (0:
// head_dim).
ATTN_HOST_DEVICE constexpr int q_buffers(int head_dim, int tile_m, int tile_n, int stages,
                                         int extra = 0, int slot_bytes = kSlotBytes,
                                         int v_head_dim = 0) {
  return sm90_attention::tile_bytes(head_dim, tile_m, tile_n, stages, v_head_dim) +
                     sm90_attention::q_bytes(head_dim, tile_m) +
                     barrier_bytes(stages, 2, extra, slot_bytes) <=
                 sm90_attention::kMaxSharedBytes
             ? 2
             : 1;
}
// The alignment slack, the Q buffers, STAGES K and V buffers, the barriers and item slots.
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int tile_m, int tile_n, int stages,
                                            int extra = 0, int slot_bytes = kSlotBytes,
                                            int v_head_dim = 0) {
  const int buffers = q_buffers(head_dim, tile_m, tile_n, stages, extra, slot_bytes, v_head_dim);
  return sm90_attention::tile_bytes(head_dim, tile_m, tile_n, stages, v_head_dim) +
         (buffers - 1) * sm90_attention::q_bytes(head_dim, tile_m) +
         barrier_bytes(stages, buffers, extra, slot_bytes);
}

// setmaxnreg of the producer and consumer warpgroups. With two consumers the launch gives the CTA
// 384 x 168 registers. The non-persistent split (the producer keeps 24, the consumers take 240:
// sm90_attention::kProducerRegisters / kConsumerRegisters) spills in a producer that walks work
// items (36 to 56 bytes in ptxas's report for prefix_prefill's), so the consumers give 8 each: 128
// x 40 + 256 x 232 = 384 x 168. The consumers' arrays need at most 216 (register_estimate). With
// one consumer there is room to spare (128 x 56 + 128 x 240 < 65536).
ATTN_HOST_DEVICE constexpr int producer_registers(int consumers) {
  return consumers == 1 ? 56 : 40;
}
ATTN_HOST_DEVICE constexpr int consumer_registers(int consumers) {
  return consumers == 1 ? sm90_attention::kConsumerRegisters
                        : sm90_attention::kConsumerRegisters - 8;
}

}  // namespace sm90_persistent
}  // namespace attn
