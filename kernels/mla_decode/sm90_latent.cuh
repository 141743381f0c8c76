// What the two Hopper MLA kernels share (mla_decode.sm90_wgmma, sm90_wgmma.cuh, and
// mla_decode.sm90_wgmma_key_rows, sm90_wgmma_key_rows.cuh): the named barriers of their two
// consumer warpgroups, Q's copy into shared memory and the producer warp that loads latent blocks
// by TMA. (The split merge that ends a split sequence, split_merge.cuh, all three GPU kernels
// share.)
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/fast_math.cuh"
#include "kernels/common/sm90.cuh"
#include "kernels/common/sm90_attention_traits.hpp"
#include "kernels/mla_decode/sm90_wgmma_params.hpp"
#include "kernels/mla_decode/split_merge.cuh"

namespace attn {
namespace mla_sm90 {

// Named barriers: 1 for the 256 consumer threads, 2 + w for consumer warpgroup w alone.
constexpr int kConsumerThreads = 256;
__device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 1, 256;\n" ::: "memory");
}
__device__ __forceinline__ void warpgroup_sync(int wg) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(2 + wg) : "memory");
}

// 0, as a value the compiler cannot see through: a loop-invariant operand added to it is computed
// where it is used instead of hoisted out of the loop and kept live.
__device__ __forceinline__ unsigned long long opaque_zero() {
  unsigned long long zero;
  asm volatile("mov.b64 %0, 0;\n" : "=l"(zero));
  return zero;
}

// The producer warp: block i of the split (keys key_begin + i BLOCK ..) into stage i % STAGES,
// once the consumers have released the stage's previous block (the empty mbarrier). Lane b takes
// keys b BOX .. of the block when the first of them is a key of the sequence: one TMA box of BOX
// rows x 64 columns per 64-column block of the latent row, all completing on the stage's full
// mbarrier. A stage holds the block as CB column blocks of [BLOCK][64], 128-byte swizzled. Every
// key before kv_len of a block is loaded (keys in [key_end, kv_len) belong to the next split: real
// data, masked by the consumers); rows past kv_len are left as they were (the consumers zero V's).
template <int CB, int BLOCK, int STAGES, int BOX>
__device__ __forceinline__ void load_latent_blocks(const MlaSm90Params& params, int seq,
                                                   int key_begin, int blocks, int kv_len,
                                                   unsigned char* kv_s, unsigned long long* full,
                                                   unsigned long long* empty, int lane) {
  constexpr int BOXES = BLOCK / BOX;
  constexpr int BOX_BYTES = BOX * sm90_attention::kBlockRowBytes;
  constexpr int COLUMN_BLOCK = BLOCK * sm90_attention::kBlockRowBytes;
  constexpr int STAGE = CB * COLUMN_BLOCK;
  static_assert(BOXES <= 32 && BLOCK % BOX == 0, "one producer lane per box");
  const MlaSm80Params& p = params.base;
  const int* pages = p.block_table + static_cast<long long>(seq) * p.max_pages_per_seq;
  for (int i = 0; i < blocks; ++i) {
    const int stage = i % STAGES;
    const int key = key_begin + i * BLOCK + lane * BOX;
    const bool load = lane < BOXES && key < kv_len;
    const int page = load ? __ldg(pages + key / p.page_size) : 0;
    const int boxes = __popc(__ballot_sync(0xffffffffu, load));
    if (i >= STAGES) sm90::mbarrier_wait(&empty[stage], ((i / STAGES) - 1) & 1);
    if (lane == 0) sm90::mbarrier_expect_bytes(&full[stage], boxes * CB * BOX_BYTES);
    __syncwarp();
    if (load) {
      const int row = page * p.page_size + key % p.page_size;
      unsigned char* dst = kv_s + stage * STAGE + lane * BOX_BYTES;
#pragma unroll 1
      for (int c = 0; c < CB; ++c) {
        sm90::tma_load_2d(dst + c * COLUMN_BLOCK, &params.latent_map, c * 64, row, &full[stage]);
      }
    }
  }
}

// The consumers copy the CTA's ROWS rows of Q (row0 .. of the sequence whose first query token is
// q0; zeros past its seq_rows rows) into q_s as D / 64 column blocks of [ROWS][64], 128-byte
// swizzled (16-byte chunk c of row r at chunk c ^ (r % 8)): the K-major operand wgmma reads.
template <int D, int ROWS>
__device__ __forceinline__ void load_q_rows(unsigned char* q_s, const MlaSm80Params& p, int q0,
                                            int row0, int seq_rows, int tid) {
  const unsigned char* q_rows = static_cast<const unsigned char*>(p.q) +
                                (static_cast<long long>(q0) * p.num_q_heads + row0) * D * 2;
  constexpr int ROW_CHUNKS = D / 8;
  for (int i = tid; i < ROWS * ROW_CHUNKS; i += kConsumerThreads) {
    const int r = i / ROW_CHUNKS, chunk = i % ROW_CHUNKS;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (row0 + r < seq_rows) {
      v = __ldg(
          reinterpret_cast<const uint4*>(q_rows + static_cast<long long>(r) * D * 2 + chunk * 16));
    }
    *reinterpret_cast<uint4*>(q_s + (chunk / 8) * ROWS * 128 + r * 128 +
                              ((chunk % 8) ^ (r % 8)) * 16) = v;
  }
  sm90::fence_proxy_async_shared();  // the generic writes, before wgmma reads them
  consumers_sync();
}

}  // namespace mla_sm90
}  // namespace attn
