// prefix_prefill.mma and prefix_prefill.masked: flash-attention-2 style prefill over a paged
// context, on the tensor cores (mma.sync m16n8k16, ldmatrix, cp.async multi-stage pipeline).
//
// Computes, for each sequence s with context_len c cached tokens and query_len n new tokens, for
// new token i (position p = c + i) and query head h (kv head h / group):
//   out[s, i, h] = softmax(logits(q . K[s, j, h / group]) over visible keys j [+ sink]) V[...]
// Keys 0 .. c - 1 are read through the page table (block_table[s, j / page_size], slot
// j % page_size, in the pool's layout: NHD, HND or vLLM's x-packed K with V [.., head_dim, page]);
// keys c .. c + n - 1 (the new tokens) from K_new/V_new, which prepare() gathers once into
// contiguous rows as seed 002's kernel receives them. Visibility (workloads/visibility.hpp):
// causal bottom-right (j <= p), sliding window (p - j < w), or, in the masked variant
// (EXPLICIT_MASK), the explicit (n, c + n) grid of the sequence alone. logits() scales and
// soft-caps; a sink logit joins the denominator with no value; fp8-e4m3 K/V are codes times a
// per-tensor or per-kv-head scale (K's folds into the logit scale, V's into the output).
//
// Work decomposition (grid = q tiles x kv heads, flattened, heaviest tiles first):
// - A CTA owns BLOCK_M rows of one kv head: tile_tokens = BLOCK_M / group consecutive new tokens
//   of one sequence times the group's q heads (token-major). Packing the GQA group into M lets a
//   decode row (query_len 1) fill the mma tiles too, and each K/V tile is read once for the whole
//   group. Warps split the rows (16 or 32 each) and keep their own online softmax state (row max
//   and sum in the log2 domain, fp32 output accumulators in registers): no cross-warp merge.
// - The keys a tile's rows can see are walked in KV tiles of BLOCK_N keys: first the cached
//   context (a tile spans several pages or part of one; every key row is addressed through the
//   block table), then the new tokens up to the tile's last causal position. Tiles outside the
//   window or past the diagonal are never loaded; masks are evaluated only on tiles that a rule
//   cuts (the explicit mask on every tile).
// - Tiles stream through STAGES shared-memory buffers with cp.async (16 bytes per copy, zero-fill
//   past a sequence's end, since 0 * NaN from a pool's unused slot would poison P.V). An fp8
//   stage is dequantised into one 16-bit tile before the tensor cores read it. vLLM's V (dims
//   major, keys contiguous per page) is kept dims-major in shared memory and read with ldmatrix
//   without .trans; a page size that is not a multiple of one 16-byte chunk of keys falls back to
//   element loads for V.
//
// Tunables and why they exist:
//   BLOCK_M       rows (tokens x group) per CTA: K/V reuse from shared memory vs CTAs to fill
//                 the GPU
//   BLOCK_N       keys per KV tile (per pipeline stage), independent of the page size
//   WARPS         16 or 32 rows per warp: fragment reuse vs registers
//   STAGES        cp.async pipeline depth: KV tiles in flight while one is computed
//   UNROLL_CACHE  unroll of the loop over cached-context tiles (lets the compiler overlap one
//                 tile's softmax with the next tile's loads and mma issue; seed 002's
//                 num_unroll_cache)
//   UNROLL_NEW    the same over the new tokens' tiles (seed 002's num_unroll_request)
#pragma once

#include "kernels/common/convert.cuh"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/mma_sm80.cuh"
#include "kernels/prefix_prefill/gather.cuh"
#include "kernels/prefix_prefill/mma_params.hpp"
#include "kernels/prefix_prefill/mma_traits.hpp"

namespace attn {
namespace pp {

// Dequantises rows x cols fp8-e4m3 codes (rows of src_row bytes) into 16-bit values of DTYPE
// (rows of dst_row bytes). Exact: every e4m3 value is a bf16 and an fp16 value.
template <int DTYPE, int THREADS>
__device__ __forceinline__ void dequantise_tile(const unsigned char* src, int src_row,
                                                unsigned char* dst, int dst_row, int rows, int cols,
                                                int tid) {
  const int units = rows * (cols / 8);
  for (int u = tid; u < units; u += THREADS) {
    const int r = u / (cols / 8), c = (u % (cols / 8)) * 8;
    const uint2 codes = *reinterpret_cast<const uint2*>(src + r * src_row + c);
    float values[8];
    unpack8_e4m3_scaled(codes, values);
#pragma unroll
    for (int e = 0; e < 8; ++e) values[e] *= 0x1p120f;  // the helper's 2^-120, back out exactly
    *reinterpret_cast<uint4*>(dst + r * dst_row + c * 2) = pack8<DTYPE>(values);
  }
}

template <bool B>
struct Flag {
  static constexpr bool value = B;
};

}  // namespace pp

template <int DTYPE, bool KV_FP8, bool V_DIM_MAJOR, bool EXPLICIT_MASK, int HEAD_DIM, int BLOCK_M,
          int BLOCK_N, int WARPS, int STAGES, int UNROLL_CACHE, int UNROLL_NEW>
// One block per SM as the launch bound: without it ptxas capped a 256-thread config at 128
// registers and spilled; the traits' register estimate is what keeps a config in registers.
__global__ void __launch_bounds__(WARPS * 32, 1) prefix_prefill_mma(const PrefixPrefillParams p) {
  static_assert(
      prefix_prefill::check(HEAD_DIM, BLOCK_M, BLOCK_N, WARPS, STAGES, UNROLL_CACHE, UNROLL_NEW,
                            KV_FP8, V_DIM_MAJOR, EXPLICIT_MASK) == prefix_prefill::kOk,
      "invalid prefix_prefill.mma config: see prefix_prefill::check");
  using namespace prefix_prefill;
  constexpr int THREADS = threads(WARPS);
  constexpr int ELEM = kv_element_bytes(KV_FP8);
  constexpr int WARP_ROWS = warp_rows(BLOCK_M, WARPS);
  constexpr int MF = WARP_ROWS / kMmaRows;  // mma row tiles per warp
  constexpr int S_TILES = BLOCK_N / 8;      // n8 tiles of the scores
  constexpr int D_TILES = HEAD_DIM / 8;     // n8 tiles of the output
  constexpr int K_STEPS = HEAD_DIM / 16;    // k16 steps of Q.K
  // Shared-memory rows in bytes: as stored (cp.async destinations) and as computed (16-bit).
  constexpr int KEY_ROW = row_bytes(HEAD_DIM, ELEM);  // K (and key-major V) as stored
  constexpr int DIM_ROW = row_bytes(BLOCK_N, ELEM);   // dim-major V as stored
  constexpr int ROW = row_bytes(HEAD_DIM, 2) / 2;     // Q, K, key-major V: 16-bit elements
  constexpr int VT_ROW = row_bytes(BLOCK_N, 2) / 2;   // dim-major V: 16-bit elements
  constexpr int STAGE = kv_tile_bytes(HEAD_DIM, BLOCK_N, ELEM, V_DIM_MAJOR);
  constexpr int K_CHUNKS = HEAD_DIM * ELEM / 16;  // 16-byte chunks of a key row
  constexpr int V_CHUNKS = BLOCK_N * ELEM / 16;   // 16-byte chunks of a dim-major V row
  constexpr int CHUNK_KEYS = 16 / ELEM;           // keys in one chunk of a dim-major V row
  const float kNegInf = -__int_as_float(0x7f800000);

  // [Q: BLOCK_M x ROW][STAGES x (K, V) as stored][fp8: one (K, V) tile dequantised]. The Q tile
  // is reused for staging the output at the end.
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned short* q_tile = reinterpret_cast<unsigned short*>(smem);
  unsigned char* stages = smem + q_tile_bytes(HEAD_DIM, BLOCK_M);
  unsigned char* dequantised = stages + STAGES * STAGE;

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int tile = blockIdx.x / p.num_kv_heads, kv_head = blockIdx.x % p.num_kv_heads;
  const int seq = p.tiles[2 * tile], t0 = p.tiles[2 * tile + 1];
  const PrefixPrefillSeq info = p.seqs[seq];
  const int ctx = info.context_len, q_len = info.query_len;
  const int kv_len = ctx + q_len;
  const int tokens = min(p.tile_tokens, q_len - t0);  // valid tokens of this tile
  const int rows = tokens * p.group;                  // valid rows; the rest are zero padding

  // Keys the tile's rows can see at most: [key_lo, key_hi). Positions ctx + t0 .. ctx + t0 +
  // tokens - 1. The explicit mask may show any key of the sequence.
  int key_lo = 0, key_hi = kv_len;
  if (!EXPLICIT_MASK) {
    if (p.sliding_window > 0) key_lo = max(0, ctx + t0 - p.sliding_window + 1);
    if (p.causal) key_hi = ctx + t0 + tokens;
  }
  // Keys every row sees (no mask needed on a tile inside [all_lo, all_hi]).
  const int all_lo = p.sliding_window > 0 ? ctx + t0 + tokens - p.sliding_window : 0;
  const int all_hi = p.causal ? ctx + t0 : kv_len - 1;
  // KV tiles: context tiles [c_first, c_first + n_ctx) over keys 0..ctx-1, then new-token tiles
  // [n_first, n_first + n_new) over new-token indices 0..q_len-1.
  const int c_first = key_lo / BLOCK_N;
  const int n_ctx = key_lo < ctx ? (min(ctx, key_hi) + BLOCK_N - 1) / BLOCK_N - c_first : 0;
  const int n_first = max(0, key_lo - ctx) / BLOCK_N;
  const int n_new = key_hi > ctx ? (key_hi - ctx + BLOCK_N - 1) / BLOCK_N - n_first : 0;
  const int n_tiles = n_ctx + n_new;

  // Q rows: row r is token t0 + r / group, q head kv_head * group + r % group (zero past `rows`).
  {
    constexpr int Q_CHUNKS = HEAD_DIM / 8;
    const char* q_base = static_cast<const char*>(p.q);
    for (int c = tid; c < BLOCK_M * Q_CHUNKS; c += THREADS) {
      const int r = c / Q_CHUNKS, col = (c % Q_CHUNKS) * 8;
      const bool valid = r < rows;
      long long offset = 0;
      if (valid) {
        const long long token = info.q_start + t0 + r / p.group;
        offset = ((token * p.num_q_heads + kv_head * p.group + r % p.group) * HEAD_DIM + col) * 2;
      }
      cp_async_16(q_tile + r * ROW + col, q_base + offset, valid);
    }
  }

  // Loads KV tile j (context tile or new-token tile) into stage buffer `stage`.
  const int* pages = p.block_table + (long long)seq * p.max_pages_per_seq;
  const char* k_pool = static_cast<const char*>(p.k_pool);
  const char* v_pool = static_cast<const char*>(p.v_pool);
  const char* k_new = static_cast<const char*>(p.k_new) +
                      ((long long)info.new_start * p.num_kv_heads + kv_head) * HEAD_DIM * ELEM;
  const char* v_new =
      static_cast<const char*>(p.v_new) +
      (V_DIM_MAJOR ? ((long long)kv_head * HEAD_DIM * p.new_rows + info.new_start) * ELEM
                   : ((long long)info.new_start * p.num_kv_heads + kv_head) * HEAD_DIM * ELEM);
  const long long new_row_bytes = (long long)p.num_kv_heads * HEAD_DIM * ELEM;
  auto page_of = [&](int key) {
    return p.page_shift >= 0 ? key >> p.page_shift : key / p.page_size;
  };
  // Copies are issued in batches of up to 4 per thread: the batch's page numbers are read from
  // the block table first, then its cp.async copies go out, so the table's latency is paid once
  // per batch instead of once per copy (each copy's address depends on its page). Larger batches,
  // or batches unrolled into each other, cost registers that the output accumulators need.
  constexpr int K_TOTAL = BLOCK_N * K_CHUNKS, K_ITERS = (K_TOTAL + THREADS - 1) / THREADS;
  constexpr int V_TOTAL = HEAD_DIM * V_CHUNKS, V_ITERS = (V_TOTAL + THREADS - 1) / THREADS;
  constexpr int K_BATCH = K_ITERS < 4 ? K_ITERS : 4, V_BATCH = V_ITERS < 4 ? V_ITERS : 4;
  auto load_tile = [&](int j, int stage) {
    unsigned char* k_dst = stages + stage * STAGE;
    unsigned char* v_dst = k_dst + BLOCK_N * KEY_ROW;
    const bool cached = j < n_ctx;
    const int key0 = (cached ? c_first + j : n_first + j - n_ctx) * BLOCK_N;
    const int end = cached ? ctx : q_len;
    // K, and key-major V: row = key, 16-byte chunks of its dims.
#pragma unroll 1
    for (int i0 = 0; i0 < K_ITERS; i0 += K_BATCH) {
      int page[K_BATCH];
#pragma unroll
      for (int b = 0; b < K_BATCH; ++b) {
        const int c = tid + (i0 + b) * THREADS, key = key0 + c / K_CHUNKS;
        page[b] = cached && i0 + b < K_ITERS && c < K_TOTAL && key < end ? pages[page_of(key)] : 0;
      }
#pragma unroll
      for (int b = 0; b < K_BATCH; ++b) {
        const int c = tid + (i0 + b) * THREADS;
        if (i0 + b >= K_ITERS || c >= K_TOTAL) continue;
        const int row = c / K_CHUNKS, chunk = c % K_CHUNKS, key = key0 + row;
        const bool valid = key < end;
        const char* k_src = k_pool;
        const char* v_src = v_pool;
        if (valid && cached) {
          const int slot = key - page_of(key) * p.page_size;
          k_src += pp::paged_offset(p.k_strides, page[b], slot, kv_head, chunk);
          if (!V_DIM_MAJOR) v_src += pp::paged_offset(p.v_strides, page[b], slot, kv_head, chunk);
        } else if (valid) {
          k_src = k_new + key * new_row_bytes + chunk * 16;
          v_src = v_new + key * new_row_bytes + chunk * 16;
        }
        cp_async_16(k_dst + row * KEY_ROW + chunk * 16, k_src, valid);
        if (!V_DIM_MAJOR) cp_async_16(v_dst + row * KEY_ROW + chunk * 16, v_src, valid);
      }
    }
    if (V_DIM_MAJOR) {
      // Row = dim, 16-byte chunks of CHUNK_KEYS keys. A cached chunk is one copy when it lies in
      // one page and wholly before the context's end (pages hold NaN past it); else element loads.
      const bool whole_chunks = p.page_size % CHUNK_KEYS == 0;
#pragma unroll 1
      for (int i0 = 0; i0 < V_ITERS; i0 += V_BATCH) {
        int page[V_BATCH];
#pragma unroll
        for (int b = 0; b < V_BATCH; ++b) {
          const int c = tid + (i0 + b) * THREADS, key = key0 + (c % V_CHUNKS) * CHUNK_KEYS;
          page[b] =
              cached && whole_chunks && i0 + b < V_ITERS && c < V_TOTAL && key + CHUNK_KEYS <= end
                  ? pages[page_of(key)]
                  : 0;
        }
#pragma unroll
        for (int b = 0; b < V_BATCH; ++b) {
          const int c = tid + (i0 + b) * THREADS;
          if (i0 + b >= V_ITERS || c >= V_TOTAL) continue;
          const int dim = c / V_CHUNKS, key = key0 + (c % V_CHUNKS) * CHUNK_KEYS;
          unsigned char* dst = v_dst + dim * DIM_ROW + (c % V_CHUNKS) * 16;
          if (!cached) {  // the gathered rows are zero-padded to a multiple of 16 keys
            const bool valid = key < end;
            cp_async_16(dst, valid ? v_new + ((long long)dim * p.new_rows + key) * ELEM : v_pool,
                        valid);
          } else if (key >= end || (whole_chunks && key + CHUNK_KEYS <= end)) {
            const bool valid = key < end;
            const char* src =
                valid ? v_pool + pp::paged_offset(p.v_strides, page[b],
                                                  key - page_of(key) * p.page_size, kv_head, dim)
                      : v_pool;
            cp_async_16(dst, src, valid);
          } else {
#pragma unroll 1
            for (int e = 0; e < CHUNK_KEYS; ++e) {
              unsigned short value = 0;
              if (key + e < end) {
                const int page_index = page_of(key + e);
                const char* src =
                    v_pool + pp::paged_offset(p.v_strides, pages[page_index],
                                              key + e - page_index * p.page_size, kv_head, dim);
                value = ELEM == 1 ? *reinterpret_cast<const unsigned char*>(src)
                                  : *reinterpret_cast<const unsigned short*>(src);
              }
              if (ELEM == 1) {
                dst[e] = (unsigned char)value;
              } else {
                reinterpret_cast<unsigned short*>(dst)[e] = value;
              }
            }
          }
        }
      }
    }
  };

  // Prologue: Q and STAGES - 1 tiles in flight, one commit group each (possibly empty), so the
  // wait count in the loop stays exact.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < n_tiles) load_tile(s, s);
    cp_async_commit();
  }

  // This lane's rows: r = warp * WARP_ROWS + mf * 16 + lane / 4 + 8 * h; their positions and,
  // for the explicit mask, where their grid rows start.
  int position[MF][2];
  int mask_row[MF][2];  // explicit grids hold under 2^31 entries (kMaxExplicitMaskEntries)
#pragma unroll
  for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = warp * WARP_ROWS + mf * 16 + lane / 4 + 8 * h;
      const int token = t0 + min(r, max(rows - 1, 0)) / p.group;  // padding rows copy a valid one
      position[mf][h] = ctx + token;
      mask_row[mf][h] = EXPLICIT_MASK ? int(p.mask_offsets[seq] + (long long)token * kv_len) : 0;
    }
  }
  const bool warp_active = warp * WARP_ROWS < rows;
  const float score_scale = p.score_scale * (KV_FP8 ? p.k_scale[kv_head] : 1.0f);

  float o[MF][D_TILES][4];
#pragma unroll
  for (int mf = 0; mf < MF; ++mf)
#pragma unroll
    for (int n = 0; n < D_TILES; ++n) o[mf][n][0] = o[mf][n][1] = o[mf][n][2] = o[mf][n][3] = 0.0f;
  float row_max[MF][2], row_sum[MF][2];  // log2 domain; sums over this lane's columns only
#pragma unroll
  for (int mf = 0; mf < MF; ++mf) {
    row_max[mf][0] = row_max[mf][1] = kNegInf;
    row_sum[mf][0] = row_sum[mf][1] = 0.0f;
  }

  // ldmatrix row addresses (lane l names a row of matrix l / 8), in 16-bit elements.
  const unsigned short* q_frag = q_tile + (warp * WARP_ROWS + lane % 16) * ROW + (lane / 16) * 8;
  const int k_frag = ((lane / 16) * 8 + lane % 8) * ROW + ((lane / 8) % 2) * 8;
  const int v_frag = V_DIM_MAJOR ? ((lane / 16) * 8 + lane % 8) * VT_ROW + ((lane / 8) % 2) * 8
                                 : (lane % 16) * ROW + (lane / 16) * 8;

  // One KV tile: wait for it, refill the freed stage, (dequantise,) S = Q K^T, mask, online
  // softmax, O += P V.
  auto step = [&](int j) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile j landed for every thread; tile j - 1 consumed by every warp
    if (j + STAGES - 1 < n_tiles) load_tile(j + STAGES - 1, (j + STAGES - 1) % STAGES);
    cp_async_commit();

    const unsigned char* tile_base = stages + (j % STAGES) * STAGE;
    if (KV_FP8) {
      pp::dequantise_tile<DTYPE, THREADS>(tile_base, KEY_ROW, dequantised, ROW * 2, BLOCK_N,
                                          HEAD_DIM, tid);
      if (V_DIM_MAJOR) {
        pp::dequantise_tile<DTYPE, THREADS>(tile_base + BLOCK_N * KEY_ROW, DIM_ROW,
                                            dequantised + BLOCK_N * ROW * 2, VT_ROW * 2, HEAD_DIM,
                                            BLOCK_N, tid);
      } else {
        pp::dequantise_tile<DTYPE, THREADS>(tile_base + BLOCK_N * KEY_ROW, KEY_ROW,
                                            dequantised + BLOCK_N * ROW * 2, ROW * 2, BLOCK_N,
                                            HEAD_DIM, tid);
      }
      __syncthreads();
      tile_base = dequantised;
    }
    // A warp whose rows are all padding (a short sequence's tile: decode rows) only copies.
    if (!warp_active) return;
    const unsigned short* k_tile = reinterpret_cast<const unsigned short*>(tile_base);
    const unsigned short* v_tile = k_tile + BLOCK_N * ROW;

    // S = Q K^T: [WARP_ROWS rows x BLOCK_N keys].
    float s[MF][S_TILES][4];
#pragma unroll
    for (int mf = 0; mf < MF; ++mf)
#pragma unroll
      for (int n = 0; n < S_TILES; ++n)
        s[mf][n][0] = s[mf][n][1] = s[mf][n][2] = s[mf][n][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < K_STEPS; ++ks) {
      unsigned int a[MF][4];
#pragma unroll
      for (int mf = 0; mf < MF; ++mf) ldmatrix_x4(a[mf], q_frag + mf * 16 * ROW + ks * 16);
#pragma unroll
      for (int pair = 0; pair < S_TILES / 2; ++pair) {
        unsigned int b[4];  // keys pair*16 .. +7 and +8 .. +15, dims ks*16 .. +15
        ldmatrix_x4(b, k_tile + pair * 16 * ROW + k_frag + ks * 16);
#pragma unroll
        for (int mf = 0; mf < MF; ++mf) {
          mma_m16n8k16<DTYPE>(s[mf][2 * pair], a[mf], b[0], b[1]);
          mma_m16n8k16<DTYPE>(s[mf][2 * pair + 1], a[mf], b[2], b[3]);
        }
      }
    }

    // Logits (log2 domain), masks where a rule cuts the tile, this tile's row maxima.
    const bool cached = j < n_ctx;
    const int key0 = cached ? (c_first + j) * BLOCK_N : ctx + (n_first + j - n_ctx) * BLOCK_N;
    const int key_end = cached ? ctx : kv_len;
    const bool masked =
        EXPLICIT_MASK || key0 < all_lo || key0 + BLOCK_N - 1 > all_hi || key0 + BLOCK_N > key_end;
    float tile_max[MF][2];
#pragma unroll
    for (int mf = 0; mf < MF; ++mf) {
      tile_max[mf][0] = tile_max[mf][1] = kNegInf;
#pragma unroll
      for (int n = 0; n < S_TILES; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = s[mf][n][e] * score_scale;
          if (p.cap_log2 > 0.0f) x = p.cap_log2 * tanhf(x);
          if (masked) {
            const int key = key0 + n * 8 + 2 * (lane % 4) + (e & 1);
            const int pos = position[mf][e / 2];
            bool visible = key < key_end;
            if (EXPLICIT_MASK) {
              visible = visible && __ldg(p.mask + (unsigned)(mask_row[mf][e / 2] + key)) != 0;
            } else {
              if (p.causal) visible = visible && key <= pos;
              if (p.sliding_window > 0) visible = visible && pos - key < p.sliding_window;
            }
            if (!visible) x = kNegInf;
          }
          s[mf][n][e] = x;
          tile_max[mf][e / 2] = fmaxf(tile_max[mf][e / 2], x);
        }
      }
    }
    float base[MF][2];
#pragma unroll
    for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // The 4 lanes of a quad hold one row.
        float m = tile_max[mf][h];
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
        const float new_max = fmaxf(row_max[mf][h], m);
        base[mf][h] = new_max == kNegInf ? 0.0f : new_max;        // no key yet: avoid -inf - -inf
        const float alpha = exp2f(row_max[mf][h] - base[mf][h]);  // 0 while the row had no key
        row_max[mf][h] = new_max;
        row_sum[mf][h] *= alpha;
#pragma unroll
        for (int n = 0; n < D_TILES; ++n) {
          o[mf][n][2 * h] *= alpha;
          o[mf][n][2 * h + 1] *= alpha;
        }
      }
    }

    // P = 2^(S - max), then O += P V; two n8 tiles of S's accumulators make one k16 A fragment.
#pragma unroll
    for (int kc = 0; kc < S_TILES / 2; ++kc) {
      unsigned int a[MF][4];
#pragma unroll
      for (int mf = 0; mf < MF; ++mf) {
        float prob[2][4];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            prob[h][e] = exp2f(s[mf][2 * kc + h][e] - base[mf][e / 2]);
            row_sum[mf][e / 2] += prob[h][e];
          }
        }
        a[mf][0] = pack2<DTYPE>(prob[0][0], prob[0][1]);
        a[mf][1] = pack2<DTYPE>(prob[0][2], prob[0][3]);
        a[mf][2] = pack2<DTYPE>(prob[1][0], prob[1][1]);
        a[mf][3] = pack2<DTYPE>(prob[1][2], prob[1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < D_TILES / 2; ++dp) {
        unsigned int b[4];  // keys kc*16 .. +15, dims dp*16 .. +7 and +8 .. +15
        if (V_DIM_MAJOR) {
          ldmatrix_x4(b, v_tile + dp * 16 * VT_ROW + v_frag + kc * 16);
        } else {
          ldmatrix_x4_trans(b, v_tile + kc * 16 * ROW + v_frag + dp * 16);
        }
#pragma unroll
        for (int mf = 0; mf < MF; ++mf) {
          mma_m16n8k16<DTYPE>(o[mf][2 * dp], a[mf], b[0], b[1]);
          mma_m16n8k16<DTYPE>(o[mf][2 * dp + 1], a[mf], b[2], b[3]);
        }
      }
    }
  };

  // Cached context first, then the new tokens; one pipeline runs across the boundary.
#pragma unroll UNROLL_CACHE
  for (int j = 0; j < n_ctx; ++j) step(j);
#pragma unroll UNROLL_NEW
  for (int j = n_ctx; j < n_tiles; ++j) step(j);
  cp_async_wait<0>();
  __syncthreads();  // Q visible (when no tile ran) and every warp past its last ldmatrix of Q

  // Normalise (the sink joins the denominator; V's fp8 scale comes in here) and stage the warp's
  // rows in its own rows of the Q tile, then write them out 16 bytes at a time.
  const float out_scale = KV_FP8 ? p.v_scale[kv_head] : 1.0f;
#pragma unroll
  for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = row_sum[mf][h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int r = warp * WARP_ROWS + mf * 16 + lane / 4 + 8 * h;
      float inv = 0.0f;  // no visible key: zero, even with a sink
      if (sum > 0.0f) {
        if (p.sink_log2 != nullptr) {
          const float sink = p.sink_log2[kv_head * p.group + r % p.group];
          const float top = row_max[mf][h];
          const float both = fmaxf(top, sink);
          const float keep = exp2f(top - both);
          inv = keep / (sum * keep + exp2f(sink - both));
        } else {
          inv = 1.0f / sum;
        }
      }
      inv *= out_scale;
      unsigned short* dst = q_tile + r * ROW + 2 * (lane % 4);
#pragma unroll
      for (int n = 0; n < D_TILES; ++n) {
        *reinterpret_cast<unsigned int*>(dst + n * 8) =
            pack2<DTYPE>(o[mf][n][2 * h] * inv, o[mf][n][2 * h + 1] * inv);
      }
    }
  }
  __syncwarp();
  constexpr int O_CHUNKS = HEAD_DIM / 8;
  char* out = static_cast<char*>(p.out);
  for (int c = lane; c < WARP_ROWS * O_CHUNKS; c += 32) {
    const int r = warp * WARP_ROWS + c / O_CHUNKS, col = (c % O_CHUNKS) * 8;
    if (r >= rows) continue;
    const long long token = info.q_start + t0 + r / p.group;
    const long long offset =
        ((token * p.num_q_heads + kv_head * p.group + r % p.group) * HEAD_DIM + col) * 2;
    *reinterpret_cast<uint4*>(out + offset) =
        *reinterpret_cast<const uint4*>(q_tile + r * ROW + col);
  }
}

}  // namespace attn
