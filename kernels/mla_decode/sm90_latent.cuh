// What the two Hopper MLA kernels share (mla_decode.sm90_wgmma, sm90_wgmma.cuh, and
// mla_decode.sm90_wgmma_key_rows, sm90_wgmma_key_rows.cuh): the named barriers of their two
// consumer warpgroups, the producer warp that loads latent blocks by TMA, and the split merge that
// ends a split sequence.
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/fast_math.cuh"
#include "kernels/common/sm90.cuh"
#include "kernels/common/sm90_attention_traits.hpp"
#include "kernels/mla_decode/sm90_wgmma_params.hpp"

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

// After every CTA of a split sequence has written its normalised rows and their log2-sum-exp to
// the partial buffers: the last of the (sequence, row tile)'s CTAs to finish merges them into the
// output (rows row0 .. row0 + rows - 1 of the sequence, output rows from out_row0), with merge_s
// ([splits][TILE_ROWS] floats of shared memory) for the weights, and resets the tile's counter
// for the next launch. Every consumer thread calls it.
template <int DTYPE, int RANK, int TILE_ROWS>
__device__ __forceinline__ void merge_splits(const MlaSm80Params& p, int seq, int splits, int row0,
                                             int rows, long long out_row0, float* merge_s,
                                             int tid) {
  const float kNegInf = -__int_as_float(0x7f800000);
  __shared__ int last_split;
  __threadfence();
  consumers_sync();
  int* counter = p.split_counters + static_cast<long long>(seq) * p.row_tiles + blockIdx.y;
  if (tid == 0) last_split = atomicAdd(counter, 1) == splits - 1;
  consumers_sync();
  if (!last_split) return;
  __threadfence();
  const int base_slot = p.seq_partial[seq];
  for (int r = tid; r < rows; r += kConsumerThreads) {
    const float* lse = p.partial_lse + static_cast<long long>(base_slot) * p.max_rows + row0 + r;
    float m = kNegInf;
    for (int sp = 0; sp < splits; ++sp) m = fmaxf(m, __ldcg(lse + sp * p.max_rows));
    float total = 0.0f;
    for (int sp = 0; sp < splits; ++sp) {
      const float w = m == kNegInf ? 0.0f : exp2_ftz(__ldcg(lse + sp * p.max_rows) - m);
      merge_s[sp * TILE_ROWS + r] = w;
      total += w;
    }
    const float inv = total > 0.0f ? 1.0f / total : 0.0f;
    for (int sp = 0; sp < splits; ++sp) merge_s[sp * TILE_ROWS + r] *= inv;
  }
  consumers_sync();
  for (int i = tid; i < rows * (RANK / 4); i += kConsumerThreads) {
    const int r = i / (RANK / 4), c = (i % (RANK / 4)) * 4;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int sp = 0; sp < splits; ++sp) {
      const float w = merge_s[sp * TILE_ROWS + r];
      const float4 v = __ldcg(reinterpret_cast<const float4*>(
          p.partial_out + (static_cast<long long>(base_slot + sp) * p.max_rows + row0 + r) * RANK +
          c));
      acc[0] += w * v.x;
      acc[1] += w * v.y;
      acc[2] += w * v.z;
      acc[3] += w * v.w;
    }
    uint2 packed;
    packed.x = pack2<DTYPE>(acc[0], acc[1]);
    packed.y = pack2<DTYPE>(acc[2], acc[3]);
    *reinterpret_cast<uint2*>(static_cast<unsigned short*>(p.out) + (out_row0 + r) * RANK + c) =
        packed;
  }
  if (tid == 0) *counter = 0;
}

}  // namespace mla_sm90
}  // namespace attn
