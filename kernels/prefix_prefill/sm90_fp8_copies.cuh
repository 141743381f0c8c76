// prefix_prefill.sm90_wgmma over an fp8 cache with fp8_dequant=1 (parameters and layout:
// sm90_fp8_copies_params.hpp; the plan: sm90_fp8_copies.hpp): the codes each launch reads become
// 16-bit copies once, inside the attention kernel, while its tensor cores work. The producer
// warpgroup's three warps that issue no TMA load take units (one block: 16 keys of one kv head, K
// and V) from a counter in the plan's order, convert them (16 codes per lane and load, exactly,
// without the scales, which the consumers apply) and raise the block's flag; the warp that loads
// the tiles reads a tile's flags (a lane per block, before it waits for the stage) and spins only
// where a block is not converted yet. Measured on the Llama-3-8B fp8 prefill (H200): 300-302 us
// against 320 with a separate pass before the kernel (the pass's whole time added to the launch)
// and 292 for the bf16 cache; the kernel over finished copies takes 284, so the conversion costs
// about 9 us of the tensor cores' pace (its memory traffic and issue slots) and the waits at the
// start (each CTA's first tiles) about 8. Tried and not kept: a kernel converting the first
// wave's blocks before this one (+8 us: it runs alone), 56 producer registers for two loads in
// flight (the consumers' 224 cost more), fp16 copies with one conversion per pair (fp16 products
// over a converted Q cost the consumers 13 us), L2 eviction hints, L1 prefetches.
//
// No warp that converts ever waits, so every unit handed out is finished, and a number is handed
// out until every unit is: the flags a loader waits for are raised whatever the CTAs' order. A
// launch takes exactly takes_per_launch numbers from the counter, so the launch's number (and the
// flag value that means "written in this launch") follows from the counter alone, with nothing to
// reset between launches.
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/prefix_prefill/sm80_mma_params.hpp"
#include "kernels/prefix_prefill/sm90_fp8_copies_params.hpp"

namespace attn {
namespace prefix_prefill::sm90_fp8_copies {

// This launch's number. Read before the CTA's first barrier, so before any of its converting warps
// takes a number: until each of them has taken its last one, the counter stays below the next
// launch's first number.
__device__ __forceinline__ unsigned launch_number(const PrefixPrefillFp8Copies& c) {
  unsigned long long taken;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];\n" : "=l"(taken) : "l"(c.counter) : "memory");
  return unsigned(taken / (unsigned long long)c.takes_per_launch);
}

// Asks L2 for a row of DIMS codes at `at` (64 bytes a prefetch; a row may start anywhere in a
// 64-byte piece): convert_rows' loads then hit L2.
template <int DIMS>
__device__ __forceinline__ void prefetch_row(const unsigned char* at) {
#pragma unroll
  for (int piece = 0; piece < (DIMS + 63) / 64 + 1; ++piece)
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"(at + piece * 64));
}

// Rows 0 .. rows - 1 (at most kBlockKeys) of DIMS codes, row r's at src + the `offset` of lane
// lane0 + r, as 16-bit values of DTYPE at dst + r * dst_row: 16 codes per lane and load, BATCH
// loads in flight. Every lane of the warp calls it (the offsets are shuffled).
template <int DTYPE, int DIMS>
__device__ __forceinline__ void convert_rows(const unsigned char* src, long long offset, int lane0,
                                             unsigned short* dst, int dst_row, int rows, int lane) {
  static_assert(DIMS % 16 == 0, "whole 16-byte chunks of codes per row");
  constexpr int CHUNKS = DIMS / 16;
  constexpr int PER_LANE = (kBlockKeys * CHUNKS + 31) / 32;
  constexpr int BATCH = 1;
#pragma unroll 1
  for (int k0 = 0; k0 < PER_LANE; k0 += BATCH) {
    uint4 codes[BATCH];
#pragma unroll
    for (int b = 0; b < BATCH; ++b) {
      const int i = lane + 32 * (k0 + b);
      const long long at = __shfl_sync(0xffffffffu, offset, lane0 + (i / CHUNKS) % kBlockKeys);
      if (i / CHUNKS < rows)
        codes[b] = __ldg(reinterpret_cast<const uint4*>(src + at + (i % CHUNKS) * 16));
    }
#pragma unroll
    for (int b = 0; b < BATCH; ++b) {
      const int i = lane + 32 * (k0 + b);
      if (i / CHUNKS < rows) {
        uint4* out = reinterpret_cast<uint4*>(dst + (i / CHUNKS) * dst_row + (i % CHUNKS) * 16);
        out[0] = e4m3x8_to_16bit_rebiased<DTYPE>(make_uint2(codes[b].x, codes[b].y));
        out[1] = e4m3x8_to_16bit_rebiased<DTYPE>(make_uint2(codes[b].z, codes[b].w));
      }
    }
  }
}

// A converting warp (lane 0 .. 31): units until none is left. Lane r < 16 finds row r of K, lane
// 16 + r row r of V (a context row through the page table, once per unit), asks L2 for it, and
// the conversion's lanes take their rows' offsets from them.
template <int DTYPE, int HEAD_DIM, int V_HEAD_DIM, int TILE_N>
__device__ __forceinline__ void convert_units(const PrefixPrefillFp8Copies& c, unsigned launch,
                                              int lane) {
  const int kv_heads = c.kv_heads;
  constexpr int BLOCKS_PER_TILE = TILE_N / kBlockKeys;
  static_assert(TILE_N % kBlockKeys == 0, "whole blocks per copy tile");
  static_assert(kBlockKeys == 16, "K's rows on lanes 0..15, V's on 16..31");
  const bool value = lane >= kBlockKeys;
  const int row = lane % kBlockKeys;
#pragma unroll 1
  for (;;) {
    unsigned long long taken = 0;
    if (lane == 0) taken = atomicAdd(c.counter, 1ull);
    taken = __shfl_sync(0xffffffffu, taken, 0);
    // (This launch's numbers are launch x takes_per_launch and on.)
    const long long index = (long long)taken - (long long)launch * c.takes_per_launch;
    if (index >= c.unit_count) return;
    const int4 unit = __ldg(reinterpret_cast<const int4*>(c.units) + index);
    const int seq = unit.x, first = unit.y, head = unit.z, block = unit.w;
    const bool context = seq >= 0;
    // Context: keys first .. of the sequence, up to its end, through the page table, into rows
    // of a copy tile; new tokens: gathered rows first .. first + 15 (new_rows is a multiple of
    // kBlockKeys), into the same rows of the copies.
    const int rows = context ? min(kBlockKeys, c.seqs[seq].context_len - first) : kBlockKeys;
    long long offset = 0;  // of this lane's row in its pool or gathered rows
    if (row < rows) {
      if (context) {
        const int slot = first % c.page_size + row;
        const int* strides = value ? c.v_strides : c.k_strides;
        const int page = __ldg(c.block_table + (long long)seq * c.max_pages_per_seq +
                               first / c.page_size + slot / c.page_size);
        offset =
            (long long)page * strides[0] + (slot % c.page_size) * strides[1] + head * strides[2];
      } else {
        offset = ((long long)(first + row) * kv_heads + head) * (value ? V_HEAD_DIM : HEAD_DIM);
      }
      const unsigned char* src =
          context ? (value ? c.v_pool : c.k_pool) : (value ? c.v_new : c.k_new);
      if (value) {
        prefetch_row<V_HEAD_DIM>(src + offset);
      } else {
        prefetch_row<HEAD_DIM>(src + offset);
      }
    }
    const long long copy_row =
        context ? ((long long)(block / BLOCKS_PER_TILE) * kv_heads + head) * TILE_N +
                      (block % BLOCKS_PER_TILE) * kBlockKeys
                : (long long)first * kv_heads + head;
    const int dst_rows = context ? 1 : kv_heads;  // copy rows from one row to the next
    convert_rows<DTYPE, HEAD_DIM>(context ? c.k_pool : c.k_new, offset, 0,
                                  (context ? c.k_copies : c.k_new_copies) + copy_row * HEAD_DIM,
                                  dst_rows * HEAD_DIM, rows, lane);
    convert_rows<DTYPE, V_HEAD_DIM>(context ? c.v_pool : c.v_new, offset, kBlockKeys,
                                    (context ? c.v_copies : c.v_new_copies) + copy_row * V_HEAD_DIM,
                                    dst_rows * V_HEAD_DIM, rows, lane);
    // Every lane's writes, visible to TMA (the async proxy), ordered before lane 0's release of
    // the flag by the warp's barrier (the release is cumulative).
    asm volatile("fence.proxy.async.global;\n" ::: "memory");
    __syncwarp();
    if (lane == 0) {
      int* flag = c.flags + flag_index(context, block, head, kv_heads, c.context_blocks);
      asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(flag), "r"(launch + 1u)
                   : "memory");
    }
  }
}

// The flag lane `lane` of the loading warp waits for before context tile `tile` (copy tile
// `copy`) of kv head `head` is loaded: block `lane` of the tile where it holds keys of the context
// (`ctx` keys; blocks past it are never written: their K scores are masked and their V rows
// zeroed), else none (null).
template <int TILE_N>
__device__ __forceinline__ const int* context_flag(const PrefixPrefillFp8Copies& c, int copy,
                                                   int tile, int ctx, int head, int lane) {
  constexpr int BLOCKS_PER_TILE = TILE_N / kBlockKeys;
  if (lane >= BLOCKS_PER_TILE || tile * TILE_N + lane * kBlockKeys >= ctx) return nullptr;
  return c.flags +
         flag_index(true, copy * BLOCKS_PER_TILE + lane, head, c.kv_heads, c.context_blocks);
}

// The same before the gathered rows row .. row + TILE_N - 1 (`row` a multiple of kBlockKeys) are
// loaded: block `lane` of them where it lies below new_rows (TMA zero-fills past it), another
// sequence's rows included (they are read, and masked).
template <int TILE_N>
__device__ __forceinline__ const int* new_rows_flag(const PrefixPrefillFp8Copies& c, int row,
                                                    int new_rows, int head, int lane) {
  const int first = row + lane * kBlockKeys;
  if (lane >= TILE_N / kBlockKeys || first >= new_rows) return nullptr;
  return c.flags + flag_index(false, first / kBlockKeys, head, c.kv_heads, c.context_blocks);
}

// A flag's value (launch + 1 for none), read with acquire semantics, so that a raised one orders
// the block's writes before the loads that follow.
__device__ __forceinline__ unsigned read_flag(const int* flag, unsigned launch) {
  if (flag == nullptr) return launch + 1u;
  unsigned value;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

// Every lane of the loading warp: spins until its flag holds launch + 1 (`seen` its first read),
// then the TMA loads may read the block.
__device__ __forceinline__ void wait_flag(const int* flag, unsigned seen, unsigned launch) {
#pragma unroll 1
  while (seen != launch + 1u) {
    __nanosleep(32);
    seen = read_flag(flag, launch);
  }
  __syncwarp();
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}

}  // namespace prefix_prefill::sm90_fp8_copies
}  // namespace attn
