// Traits of flash_fwd.sm90_wgmma: threads, shared-memory layout, register budgets and validity
// derived from one config (head_dim, tile_m, tile_n, stages, consumers). Included by the host (to
// refuse a config, with a reason, before compiling it) and by the device template (which
// static_asserts the same rule), so the two can never disagree.
#pragma once

#include "base/host_device.hpp"
#include "kernels/common/sm90_attention_traits.hpp"

namespace attn {
namespace flash_sm90 {

// The tile shapes, index maps, register split and tile rules are those of every FA3-style kernel
// here (kernels/common/sm90_attention_traits.hpp).
using sm90_attn::a_fragment_accumulator;
using sm90_attn::accumulator_column;
using sm90_attn::accumulator_row;
using sm90_attn::column_blocks;
using sm90_attn::k_major_step_offset;
using sm90_attn::kBlockColumns;
using sm90_attn::kBlockRowBytes;
using sm90_attn::kConsumerRegisters;
using sm90_attn::kConsumerRows;
using sm90_attn::kMaxSharedBytes;
using sm90_attn::kProducerRegisters;
using sm90_attn::kRegisterOverhead;
using sm90_attn::kSwizzleAtomBytes;
using sm90_attn::kv_tile_bytes;
using sm90_attn::mn_major_step_offset;
using sm90_attn::q_bytes;
using sm90_attn::register_estimate;
using sm90_attn::threads;
using sm90_attn::v_leading_bytes;

using Rule = sm90_attn::Rule;
using sm90_attn::kConsumers;
using sm90_attn::kHeadDim;
using sm90_attn::kOk;
using sm90_attn::kRegisters;
using sm90_attn::kSharedMemory;
using sm90_attn::kStages;
using sm90_attn::kTileM;
using sm90_attn::kTileN;

// mbarriers: Q's, and full + empty for K and for V in every stage.
ATTN_HOST_DEVICE constexpr int barrier_bytes(int stages) {
  return (1 + 4 * stages) * 8;
}
// Q, STAGES K buffers, STAGES V buffers, the barriers, and 1 KiB to align the tiles to the
// 1024-byte period of the 128-byte swizzle.
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int tile_m, int tile_n, int stages) {
  return sm90_attn::tile_bytes(head_dim, tile_m, tile_n, stages) + barrier_bytes(stages);
}

ATTN_HOST_DEVICE constexpr int check(int head_dim, int tile_m, int tile_n, int stages,
                                     int consumers) {
  return sm90_attn::check_tiles(head_dim, tile_m, tile_n, stages, consumers,
                                shared_bytes(head_dim, tile_m, tile_n, stages));
}

}  // namespace flash_sm90
}  // namespace attn
