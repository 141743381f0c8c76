// paged_decode.tensorcore: flash-decoding on the tensor cores (mma.sync m16n8k16) over a paged KV
// cache, for GQA.
//
// Computes, for each sequence s and query head h (one query token per sequence, at position
// kv_len - 1),
//   out[s, h] = softmax(logits(q[s, h] . K[s, :, h / group]) [+ sink]) V[s, :, h / group]
// where K and V rows are read through the page table: token t of sequence s lives in page
// block_table[s, t / page_size] at slot t % page_size. logits() scales, and soft-caps when asked;
// a sliding window keeps the last w keys; a sink logit joins the denominator with no value.
//
// Work decomposition (grid = sequences, kv_heads, splits):
// - A CTA owns one KV head of one sequence and all `group` query heads that share it: the q heads
//   are the M rows of 16 x 8 x 16 mma tiles (rows past the group are zero padding), so each K/V
//   byte is read from memory once per KV head, whatever the GQA ratio (1..16).
// - The sequence's visible keys are cut into compute blocks of BLOCK_TOKENS keys; a block spans
//   several pages or part of one (every key row is addressed through the block table, 16 bytes
//   per cp.async). Blocks are dealt to num_splits contiguous ranges (split-KV) so short batches
//   still fill the GPU; each split writes a normalised partial output and its log2-sum-exp, and
//   paged_decode_tensorcore_merge combines them. With one split the CTA writes `out` itself.
// - K and V of a block stream into one of STAGES shared-memory buffers with cp.async while
//   earlier blocks are computed. Rows are padded by 16 bytes so ldmatrix is bank-conflict free.
//   Each warp copies the rows it computes, so the pipeline needs no barrier between warps.
// - Each warp owns WARP_TOKENS = BLOCK_TOKENS / WARPS keys of every block and keeps its own online
//   softmax state (row max and sum in the log2 domain, fp32 output accumulator in registers):
//   S = Q K^T with Q and K fragments from ldmatrix, then P (16-bit, from S's accumulators) times
//   V with V fragments from ldmatrix.trans. No barrier between warps inside a block; their states
//   are merged once through shared memory at the end.
//
// Tunables and why they exist:
//   BLOCK_TOKENS  keys per compute block (per pipeline stage): bytes in flight per stage vs
//                 shared memory and registers
//   WARPS         threads per CTA: key slices computed in parallel vs CTAs per SM
//   STAGES        pipeline depth: blocks in flight while one is computed
//   num_splits    (runtime) split-KV count; 0 on the host = auto, enough CTAs to fill the GPU
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/paged_decode/tensorcore_params.hpp"
#include "kernels/paged_decode/tensorcore_traits.hpp"

namespace attn {
namespace tc {

__device__ __forceinline__ unsigned int smem_address(const void* pointer) {
  unsigned int address;
  asm("{\n.reg .u64 a;\ncvta.to.shared.u64 a, %1;\ncvt.u32.u64 %0, a;\n}\n"
      : "=r"(address)
      : "l"(pointer));
  return address;
}

// 16-byte asynchronous copy that bypasses L1 (each K/V byte is used once per CTA). When `valid`
// is false nothing is read and the 16 shared bytes become zero: keys past the sequence's end
// must be finite zeros, since 0 * NaN (the pool's unused slots hold NaN) would poison P.V.
__device__ __forceinline__ void copy16_zfill(void* shared, const void* global, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(shared)),
               "l"(global), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void copy_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void copy_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned int (&r)[4], const void* shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(shared)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned int (&r)[4], const void* shared) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(shared)));
}

// d += a (16 x 16, row-major) * b (16 x 8, column-major), fp32 accumulation.
template <int DTYPE>
__device__ __forceinline__ void mma(float (&d)[4], const unsigned int (&a)[4], unsigned int b0,
                                    unsigned int b1) {
  if constexpr (DTYPE == kDTypeBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

}  // namespace tc

template <int DTYPE, int HEAD_DIM, int WARPS, int BLOCK_TOKENS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32) paged_decode_tensorcore(const TensorCoreParams p) {
  static_assert(tensorcore::check(HEAD_DIM, WARPS, BLOCK_TOKENS, STAGES) == tensorcore::kOk,
                "invalid paged_decode.tensorcore config: see tensorcore::check");
  constexpr int THREADS = tensorcore::threads(WARPS);
  constexpr int ROW = tensorcore::row_elements(HEAD_DIM);  // padded smem row, 16-bit elements
  constexpr int M = tensorcore::kMmaRows;
  constexpr int WARP_TOKENS = tensorcore::warp_tokens(WARPS, BLOCK_TOKENS);
  constexpr int S_TILES = WARP_TOKENS / 8;  // n8 tiles of the warp's scores
  constexpr int D_TILES = HEAD_DIM / 8;     // n8 tiles of the output
  constexpr int K_STEPS = HEAD_DIM / 16;    // k16 steps of Q.K
  constexpr int CHUNKS = HEAD_DIM / 8;      // 16-byte chunks of a row
  constexpr int ROWS_PER_PASS = 32 / CHUNKS;  // rows one warp copies per pass
  constexpr int PASSES = WARP_TOKENS / ROWS_PER_PASS;
  constexpr int TILE = BLOCK_TOKENS * ROW;  // one K or V buffer, elements
  static_assert(32 % CHUNKS == 0 && WARP_TOKENS % ROWS_PER_PASS == 0, "copy pattern");
  static_assert(tensorcore::merge_bytes(HEAD_DIM, WARPS) <= STAGES * 2 * TILE * 2,
                "the cross-warp merge reuses the stage buffers");
  const float kNegInf = -__int_as_float(0x7f800000);

  // [STAGES][K, V][BLOCK_TOKENS][ROW], then Q [M][ROW]. After the key loop the stage buffers hold
  // the cross-warp merge: outputs [WARPS][M][HEAD_DIM], maxima and sums [WARPS][M] (floats).
  extern __shared__ __align__(16) unsigned short smem[];
  unsigned short* q_tile = smem + STAGES * 2 * TILE;

  const int seq = blockIdx.x, kv_head = blockIdx.y, split = blockIdx.z;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int q_head0 = kv_head * p.group;

  // Visible keys [first_key, kv_len): the window keeps the last sliding_window of them. Blocks
  // start at first_key, so no key before it is ever loaded.
  const int kv_len = p.kv_lens[seq];
  const int first_key =
      (p.sliding_window > 0 && kv_len > p.sliding_window) ? kv_len - p.sliding_window : 0;
  const int blocks = max(0, kv_len - first_key + BLOCK_TOKENS - 1) / BLOCK_TOKENS;
  const int blocks_per_split = (blocks + p.num_splits - 1) / p.num_splits;
  const int block_begin = min(blocks, split * blocks_per_split);
  const int block_end = min(blocks, block_begin + blocks_per_split);

  // Q rows of the group; padding rows are zero (their scores are 0, finite, and never written).
  for (int c = tid; c < M * CHUNKS; c += THREADS) {
    const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (r < p.group) {
      value =
          load_16B_readonly(static_cast<const char*>(p.q) +
                            (((long long)seq * p.num_q_heads + q_head0 + r) * HEAD_DIM + col) * 2);
    }
    *reinterpret_cast<uint4*>(q_tile + r * ROW + col) = value;
  }

  // Copy pattern: each warp copies its own WARP_TOKENS rows of every block (the rows it computes),
  // so a stage needs no barrier between warps: lane copies chunk (lane % CHUNKS) of the warp's
  // rows lane / CHUNKS + i * ROWS_PER_PASS. Page numbers of the block after next are fetched from
  // the block table one iteration ahead (their latency hides behind the current block's compute),
  // and the row's page and slot advance by increments instead of a division per row.
  const int* pages = p.block_table + (long long)seq * p.max_pages_per_seq;
  const int copy_col = (lane % CHUNKS) * 8;
  const int copy_row = warp * WARP_TOKENS + lane / CHUNKS;
  const char* k_head =
      static_cast<const char*>(p.k_pool) + (kv_head * p.head_stride + copy_col) * 2;
  const char* v_head =
      static_cast<const char*>(p.v_pool) + (kv_head * p.head_stride + copy_col) * 2;
  // Rows of a block: page and slot advance from the first row's by increments (one division).
  // Page numbers of the next block to copy are held in registers where that costs few of them.
  constexpr bool PREFETCH = PASSES <= 8;
  int next_page[PASSES];
  auto fetch_pages = [&](int block) {
    const int t0 = first_key + block * BLOCK_TOKENS + copy_row;
    int page = t0 / p.page_size, slot = t0 - page * p.page_size;
#pragma unroll
    for (int i = 0; i < PASSES; ++i) {
      next_page[i] = t0 + i * ROWS_PER_PASS < kv_len ? pages[page] : 0;
      slot += ROWS_PER_PASS;
      while (slot >= p.page_size) {
        slot -= p.page_size;
        ++page;
      }
    }
  };
  auto load_block = [&](int block, int stage) {
    unsigned short* k_dst = smem + stage * 2 * TILE + copy_row * ROW + copy_col;
    unsigned short* v_dst = k_dst + TILE;
    const int t0 = first_key + block * BLOCK_TOKENS + copy_row;
    int page = t0 / p.page_size, slot = t0 - page * p.page_size;
#pragma unroll
    for (int i = 0; i < PASSES; ++i) {
      const bool valid = t0 + i * ROWS_PER_PASS < kv_len;
      long long offset = 0;  // invalid rows: an in-bounds address that is not read
      if (valid) {
        const int physical = PREFETCH ? next_page[i] : pages[page];
        offset = (long long)physical * p.page_stride + (long long)slot * p.token_stride;
      }
      tc::copy16_zfill(k_dst + i * ROWS_PER_PASS * ROW, k_head + offset * 2, valid);
      tc::copy16_zfill(v_dst + i * ROWS_PER_PASS * ROW, v_head + offset * 2, valid);
      slot += ROWS_PER_PASS;
      while (slot >= p.page_size) {
        slot -= p.page_size;
        ++page;
      }
    }
  };

  // Prologue: STAGES - 1 blocks in flight. Every stage commits a group (possibly empty) so the
  // wait count below stays exact.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (block_begin + s < block_end) {
      if (PREFETCH) fetch_pages(block_begin + s);
      load_block(block_begin + s, s);
    }
    tc::copy_commit();
  }
  if (PREFETCH && block_begin + STAGES - 1 < block_end) fetch_pages(block_begin + STAGES - 1);
  __syncthreads();  // Q visible to every warp

  // This lane's rows of the accumulators: r0 = lane / 4 and r0 + 8.
  float o[D_TILES][4];
#pragma unroll
  for (int n = 0; n < D_TILES; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float row_max[2] = {kNegInf, kNegInf};  // log2 domain
  float row_sum[2] = {0.0f, 0.0f};        // this lane's columns only; summed over lanes at the end

  // ldmatrix row addresses (lane l names a row of matrix l / 8).
  const unsigned short* q_frag = q_tile + (lane % 16) * ROW + (lane / 16) * 8;
  const int k_frag = ((lane / 16) * 8 + lane % 8) * ROW + ((lane / 8) % 2) * 8;
  const int v_frag = (lane % 16) * ROW + (lane / 16) * 8;

  for (int block = block_begin; block < block_end; ++block) {
    const int i = block - block_begin;
    tc::copy_wait<STAGES - 2>();
    __syncwarp();  // the warp's copies of this block visible to all its lanes; block - 1 consumed
    if (block + STAGES - 1 < block_end) load_block(block + STAGES - 1, (i + STAGES - 1) % STAGES);
    tc::copy_commit();
    if (PREFETCH && block + STAGES < block_end) fetch_pages(block + STAGES);

    const unsigned short* k_tile = smem + (i % STAGES) * 2 * TILE + warp * WARP_TOKENS * ROW;
    const unsigned short* v_tile = k_tile + TILE;

    // S = Q K^T over the warp's keys: [16 heads x WARP_TOKENS keys].
    float s[S_TILES][4];
#pragma unroll
    for (int j = 0; j < S_TILES; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < K_STEPS; ++ks) {
      unsigned int a[4];
      tc::ldmatrix_x4(a, q_frag + ks * 16);
#pragma unroll
      for (int pair = 0; pair < S_TILES / 2; ++pair) {
        unsigned int b[4];  // keys pair*16 .. +7 and +8 .. +15, dims ks*16 .. +15
        tc::ldmatrix_x4(b, k_tile + pair * 16 * ROW + k_frag + ks * 16);
        tc::mma<DTYPE>(s[2 * pair], a, b[0], b[1]);
        tc::mma<DTYPE>(s[2 * pair + 1], a, b[2], b[3]);
      }
    }

    // Logits (log2 domain), the end-of-sequence mask, and this block's row maxima.
    const int warp_key0 = first_key + block * BLOCK_TOKENS + warp * WARP_TOKENS;
    float tile_max[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int j = 0; j < S_TILES; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int t = warp_key0 + j * 8 + 2 * (lane % 4) + (e & 1);
        float x = s[j][e] * p.score_scale;
        if (p.cap_log2 > 0.0f) x = p.cap_log2 * tanhf(x);
        if (t >= kv_len) x = kNegInf;
        s[j][e] = x;
        tile_max[e / 2] = fmaxf(tile_max[e / 2], x);
      }
    }
    float base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      // The 4 lanes of a quad hold one row.
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
      const float new_max = fmaxf(row_max[r], tile_max[r]);
      base[r] = new_max == kNegInf ? 0.0f : new_max;    // no key yet: avoid -inf - -inf
      const float alpha = exp2f(row_max[r] - base[r]);  // 0 while the row had no key
      row_max[r] = new_max;
      row_sum[r] *= alpha;
#pragma unroll
      for (int n = 0; n < D_TILES; ++n) {
        o[n][2 * r] *= alpha;
        o[n][2 * r + 1] *= alpha;
      }
    }

    // P = 2^(S - max), then O += P V; P's accumulator layout is the A fragment layout of the
    // next mma (two n8 tiles of S make one k16 slice of P).
#pragma unroll
    for (int kc = 0; kc < S_TILES / 2; ++kc) {
      float prob[2][4];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          prob[h][e] = exp2f(s[2 * kc + h][e] - base[e / 2]);
          row_sum[e / 2] += prob[h][e];
        }
      }
      unsigned int a[4];
      a[0] = pack2<DTYPE>(prob[0][0], prob[0][1]);
      a[1] = pack2<DTYPE>(prob[0][2], prob[0][3]);
      a[2] = pack2<DTYPE>(prob[1][0], prob[1][1]);
      a[3] = pack2<DTYPE>(prob[1][2], prob[1][3]);
#pragma unroll
      for (int dp = 0; dp < D_TILES / 2; ++dp) {
        unsigned int b[4];  // keys kc*16 .. +15, dims dp*16 .. +7 and +8 .. +15
        tc::ldmatrix_x4_trans(b, v_tile + kc * 16 * ROW + v_frag + dp * 16);
        tc::mma<DTYPE>(o[2 * dp], a, b[0], b[1]);
        tc::mma<DTYPE>(o[2 * dp + 1], a, b[2], b[3]);
      }
    }
  }
  tc::copy_wait<0>();
  __syncthreads();  // the stage buffers become the merge area

  // Merge the warps' states: each warp's output, max and sum per row into shared memory.
  float* merge_out = reinterpret_cast<float*>(smem);    // [WARPS][M][HEAD_DIM]
  float* merge_max = merge_out + WARPS * M * HEAD_DIM;  // [WARPS][M]
  float* merge_sum = merge_max + WARPS * M;             // [WARPS][M]
  const int r0 = lane / 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
    float* dst = merge_out + (warp * M + r0 + 8 * r) * HEAD_DIM + 2 * (lane % 4);
#pragma unroll
    for (int n = 0; n < D_TILES; ++n)
      *reinterpret_cast<float2*>(dst + n * 8) = make_float2(o[n][2 * r], o[n][2 * r + 1]);
    if (lane % 4 == 0) {
      merge_max[warp * M + r0 + 8 * r] = row_max[r];
      merge_sum[warp * M + r0 + 8 * r] = row_sum[r];
    }
  }
  __syncthreads();

  // Two output elements per thread and step, over the group's rows only.
  for (int idx = tid; idx < p.group * (HEAD_DIM / 2); idx += THREADS) {
    const int r = idx / (HEAD_DIM / 2), d = (idx % (HEAD_DIM / 2)) * 2;
    float top = kNegInf;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) top = fmaxf(top, merge_max[w * M + r]);
    const float top_base = top == kNegInf ? 0.0f : top;
    float sum = 0.0f, x0 = 0.0f, x1 = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
      const float factor = exp2f(merge_max[w * M + r] - top_base);
      const float2 part = *reinterpret_cast<const float2*>(merge_out + (w * M + r) * HEAD_DIM + d);
      sum = fmaf(merge_sum[w * M + r], factor, sum);
      x0 = fmaf(part.x, factor, x0);
      x1 = fmaf(part.y, factor, x1);
    }
    const int q_head = q_head0 + r;
    const long long head_row = (long long)seq * p.num_q_heads + q_head;
    if (p.num_splits == 1) {
      // The sink joins the denominator: sum * 2^top + 2^sink, computed relative to the larger.
      float inv = 0.0f;  // no visible key: zero, even with a sink
      if (sum > 0.0f) {
        if (p.sink_log2 != nullptr) {
          const float sink = p.sink_log2[q_head];
          const float both = fmaxf(top, sink);
          const float keep = exp2f(top - both);
          inv = keep / (sum * keep + exp2f(sink - both));
        } else {
          inv = 1.0f / sum;
        }
      }
      *reinterpret_cast<unsigned int*>(static_cast<char*>(p.out) + (head_row * HEAD_DIM + d) * 2) =
          pack2<DTYPE>(x0 * inv, x1 * inv);
    } else {
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      const long long split_row = (long long)split * p.num_seqs * p.num_q_heads + head_row;
      *reinterpret_cast<float2*>(p.partial_out + split_row * HEAD_DIM + d) =
          make_float2(x0 * inv, x1 * inv);
      if (d == 0) p.partial_lse[split_row] = sum > 0.0f ? top + log2f(sum) : kNegInf;
    }
  }
}

// Combines the splits of paged_decode_tensorcore: out = sum_s w_s * partial_s / (sum_s w_s +
// w_sink) with w_s = 2^(lse_s - top), w_sink = 2^(sink - top), top the largest of them. Grid
// (num_seqs, num_q_heads), HEAD_DIM / 2 threads of two elements each.
template <int DTYPE, int HEAD_DIM>
__global__ void __launch_bounds__(HEAD_DIM / 2)
    paged_decode_tensorcore_merge(const TensorCoreParams p) {
  const float kNegInf = -__int_as_float(0x7f800000);
  const long long head_row = (long long)blockIdx.x * p.num_q_heads + blockIdx.y;
  const long long split_rows = (long long)p.num_seqs * p.num_q_heads;
  const int d = threadIdx.x * 2;
  float max_lse = kNegInf;
  // Unrolled so that several splits' loads are in flight at once (up to 128 splits).
#pragma unroll 8
  for (int s = 0; s < p.num_splits; ++s)
    max_lse = fmaxf(max_lse, p.partial_lse[s * split_rows + head_row]);
  float x0 = 0.0f, x1 = 0.0f, total = 0.0f;
  if (max_lse != kNegInf) {  // else no visible key: zero, even with a sink
    float top = max_lse;
    if (p.sink_log2 != nullptr) {
      const float sink = p.sink_log2[blockIdx.y];
      top = fmaxf(top, sink);
      total = exp2f(sink - top);
    }
#pragma unroll 8
    for (int s = 0; s < p.num_splits; ++s) {
      const float weight = exp2f(p.partial_lse[s * split_rows + head_row] - top);
      const float2 part = *reinterpret_cast<const float2*>(
          p.partial_out + (s * split_rows + head_row) * HEAD_DIM + d);
      x0 = fmaf(weight, part.x, x0);
      x1 = fmaf(weight, part.y, x1);
      total += weight;
    }
  }
  const float inv = total > 0.0f ? 1.0f / total : 0.0f;
  *reinterpret_cast<unsigned int*>(static_cast<char*>(p.out) + (head_row * HEAD_DIM + d) * 2) =
      pack2<DTYPE>(x0 * inv, x1 * inv);
}

}  // namespace attn
