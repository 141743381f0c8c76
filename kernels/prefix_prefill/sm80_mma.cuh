// prefix_prefill.sm80_mma and prefix_prefill.sm80_mma_masked: flash-attention-2 style prefill over
// a paged context, on the tensor cores (mma.sync m16n8k16, ldmatrix, cp.async multi-stage
// pipeline).
//
// Computes, for each sequence s with context_len c cached tokens and query_len n new tokens, for
// new token i (position p = c + i) and query head h (kv head h / group):
//   out[s, i, h] = softmax(logits(q . K[s, j, h / group]) over visible keys j [+ sink]) V[...]
// Q and K rows are HEAD_DIM wide; V rows and the output V_HEAD_DIM wide (at most HEAD_DIM:
// DeepSeek's prefill has Q/K 192 and V 128). Any head dim that is a multiple of 16 works in the
// products (whole k16 steps of Q.K^T, whole pairs of n8 columns of P.V); 80, 96 and 192 differ
// from the power-of-two dims only in the copy loops (below).
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
// - Each key row's source (its byte offset through the block table) is written into shared
//   memory by one thread, STAGES tiles ahead, so the copies do no page arithmetic. A key-major V
//   narrower than K has its own offsets (its pools' strides differ from K's).
// - A thread copies one 16-byte chunk of the dims of every (THREADS / K_CHUNKS)-th key row. At
//   head dims 80, 96 and 192 the chunks of a row (10, 12, 24 for 16-bit K; 5, 6, 12 for fp8) do
//   not divide the thread count, and the threads past the last whole row of chunks idle in the
//   copies (at most 1/6 of them) rather than each copy working out its chunk.
// - Tiles stream through STAGES shared-memory buffers with cp.async (16 bytes per copy; the last
//   tile of the context or of the new tokens zero-fills past the sequence's end, since 0 * NaN
//   from a pool's unused slot would poison P.V; whole tiles use the plain form).
// - The online softmax keeps raw scores until the exponent and rescales the output accumulators
//   only when a row of the warp has a new maximum. An fp8
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
#include "kernels/common/fast_math.cuh"
#include "kernels/common/mma_sm80.cuh"
#include "kernels/prefix_prefill/gather.cuh"
#include "kernels/prefix_prefill/sm80_mma_params.hpp"
#include "kernels/prefix_prefill/sm80_mma_traits.hpp"

namespace attn {
namespace prefix_prefill::sm80_mma {

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

}  // namespace prefix_prefill::sm80_mma

template <int DTYPE, bool KV_FP8, bool V_DIM_MAJOR, bool EXPLICIT_MASK, bool SOFT_CAP, int HEAD_DIM,
          int V_HEAD_DIM, int BLOCK_M, int BLOCK_N, int WARPS, int STAGES, int UNROLL_CACHE,
          int UNROLL_NEW>
// One block per SM as the launch bound: without it ptxas capped a 256-thread config at 128
// registers and spilled; the traits' register estimate is what keeps a config in registers.
__global__ void __launch_bounds__(WARPS * 32, 1)
    prefix_prefill_sm80_mma(const PrefixPrefillParams p) {
  static_assert(prefix_prefill::sm80_mma::check(
                    HEAD_DIM, V_HEAD_DIM, BLOCK_M, BLOCK_N, WARPS, STAGES, UNROLL_CACHE, UNROLL_NEW,
                    KV_FP8, V_DIM_MAJOR, EXPLICIT_MASK) == prefix_prefill::sm80_mma::kOk,
                "invalid prefix_prefill.sm80_mma config: see prefix_prefill::sm80_mma::check");
  using namespace prefix_prefill::sm80_mma;
  constexpr int THREADS = threads(WARPS);
  constexpr int ELEM = kv_element_bytes(KV_FP8);
  constexpr int WARP_ROWS = warp_rows(BLOCK_M, WARPS);
  constexpr int MF = WARP_ROWS / kMmaRows;  // mma row tiles per warp
  constexpr int S_TILES = BLOCK_N / 8;      // n8 tiles of the scores
  constexpr int D_TILES = V_HEAD_DIM / 8;   // n8 tiles of the output
  constexpr int K_STEPS = HEAD_DIM / 16;    // k16 steps of Q.K
  // Shared-memory rows in bytes: as stored (cp.async destinations) and as computed (16-bit).
  constexpr int KEY_ROW = row_bytes(HEAD_DIM, ELEM);     // K as stored
  constexpr int VKEY_ROW = row_bytes(V_HEAD_DIM, ELEM);  // key-major V as stored
  constexpr int DIM_ROW = row_bytes(BLOCK_N, ELEM);      // dim-major V as stored
  constexpr int ROW = row_bytes(HEAD_DIM, 2) / 2;        // Q, K: 16-bit elements
  constexpr int V_ROW = row_bytes(V_HEAD_DIM, 2) / 2;    // key-major V: 16-bit elements
  constexpr int VT_ROW = row_bytes(BLOCK_N, 2) / 2;      // dim-major V: 16-bit elements
  constexpr int STAGE = kv_tile_bytes(HEAD_DIM, V_HEAD_DIM, BLOCK_N, ELEM, V_DIM_MAJOR);
  constexpr int K_CHUNKS = HEAD_DIM * ELEM / 16;     // 16-byte chunks of a key row
  constexpr int VK_CHUNKS = V_HEAD_DIM * ELEM / 16;  // 16-byte chunks of a key-major V row
  constexpr int V_CHUNKS = BLOCK_N * ELEM / 16;      // 16-byte chunks of a dim-major V row
  constexpr int CHUNK_KEYS = 16 / ELEM;              // keys in one chunk of a dim-major V row
  const float kNegInf = -__int_as_float(0x7f800000);

  // [Q: BLOCK_M x ROW][STAGES x (K, V) as stored][fp8: one (K, V) tile dequantised]. The Q tile
  // is reused for staging the output at the end.
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned short* q_tile = reinterpret_cast<unsigned short*>(smem);
  unsigned char* stages = smem + q_tile_bytes(HEAD_DIM, BLOCK_M);
  unsigned char* dequantised = stages + STAGES * STAGE;
  long long* row_source = reinterpret_cast<long long*>(
      dequantised + (KV_FP8 ? prefix_prefill::sm80_mma::kv_tile_bytes(HEAD_DIM, V_HEAD_DIM, BLOCK_N,
                                                                      2, V_DIM_MAJOR)
                            : 0));
  // A key-major V narrower than K: its rows' offsets, after K's (as many).
  constexpr bool SEPARATE_V = separate_v_sources(HEAD_DIM, V_HEAD_DIM, V_DIM_MAJOR);
  long long* v_row_source = row_source + STAGES * BLOCK_N;

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
      (V_DIM_MAJOR ? ((long long)kv_head * V_HEAD_DIM * p.new_rows + info.new_start) * ELEM
                   : ((long long)info.new_start * p.num_kv_heads + kv_head) * V_HEAD_DIM * ELEM);
  const long long new_row_bytes = (long long)p.num_kv_heads * HEAD_DIM * ELEM;
  const long long new_v_row_bytes = (long long)p.num_kv_heads * V_HEAD_DIM * ELEM;
  auto page_of = [&](int key) {
    return p.page_shift >= 0 ? key >> p.page_shift : key / p.page_size;
  };
  // Where each key row of a tile comes from: a byte offset from the tile's base (the pool's, plus
  // this thread's kv head and dims chunk, for a context tile; K_new's for a new-token tile), or -1
  // past the sequence's end (zero-filled). One thread per row writes it into row_source, one tile
  // ahead of the copies, so a copy costs a shared-memory read and an add instead of a block-table
  // read and the page arithmetic, and the table's latency is paid by few threads, under the
  // products. K and a key-major V of K's width share the offsets (NHD and HND pools then have the
  // same page and token strides; the host checks); a narrower V has its own (SEPARATE_V).
  auto page_number = [&](int j, int row) {
    const bool cached = j < n_ctx;
    const int key = (c_first + j) * BLOCK_N + row;
    return cached && row < BLOCK_N && key < ctx ? __ldg(pages + page_of(key)) : 0;
  };
  auto write_row_source = [&](int j, int row, int page) {
    if (row >= BLOCK_N) return;
    const bool cached = j < n_ctx;
    const int key = (cached ? c_first + j : n_first + j - n_ctx) * BLOCK_N + row;
    long long offset = -1, v_offset = -1;
    if (key < (cached ? ctx : q_len)) {
      offset = cached ? (long long)page * p.k_strides.page +
                            int((key - page_of(key) * p.page_size) * p.k_strides.token)
                      : key * new_row_bytes;
      if (SEPARATE_V) {
        v_offset = cached ? (long long)page * p.v_strides.page +
                                int((key - page_of(key) * p.page_size) * p.v_strides.token)
                          : key * new_v_row_bytes;
      }
    }
    row_source[(j % STAGES) * BLOCK_N + row] = offset;
    if (SEPARATE_V) v_row_source[(j % STAGES) * BLOCK_N + row] = v_offset;
  };
  constexpr int SOURCE_ROWS = (BLOCK_N + THREADS - 1) / THREADS;  // rows of the table per thread
  // Key rows: thread tid copies chunk tid % K_CHUNKS of rows tid / K_CHUNKS + i * ROW_STEP. With
  // EVEN_COPY (head dims 64, 128, 256) every thread copies and c = tid + i * THREADS walks the
  // tile's chunks; otherwise the threads from COPIERS on idle.
  constexpr int ROW_STEP = THREADS / K_CHUNKS, COPIERS = ROW_STEP * K_CHUNKS;
  constexpr bool EVEN_COPY = COPIERS == THREADS;
  constexpr int K_TOTAL = BLOCK_N * K_CHUNKS;
  constexpr int K_ITERS =
      EVEN_COPY ? (K_TOTAL + THREADS - 1) / THREADS : (BLOCK_N + ROW_STEP - 1) / ROW_STEP;
  constexpr int V_TOTAL = V_HEAD_DIM * V_CHUNKS, V_ITERS = (V_TOTAL + THREADS - 1) / THREADS;
  constexpr int V_BATCH = V_ITERS < 4 ? V_ITERS : 4;
  static_assert(K_CHUNKS <= THREADS, "a thread copies one dims chunk of its key rows");
  const int copy_chunk = tid % K_CHUNKS;
  const int k_head_chunk =
      int(kv_head * p.k_strides.head + copy_chunk * p.k_strides.chunk);  // within a page
  const int v_head_chunk =
      V_DIM_MAJOR ? 0 : int(kv_head * p.v_strides.head + copy_chunk * p.v_strides.chunk);
  // A key-major V narrower than K: the threads of its chunks copy it (copy_chunk < VK_CHUNKS).
  const bool copies_v = !V_DIM_MAJOR && (VK_CHUNKS == K_CHUNKS || copy_chunk < VK_CHUNKS);
  auto load_tile = [&](int j, int stage) {
    unsigned char* k_dst = stages + stage * STAGE;
    unsigned char* v_dst = k_dst + BLOCK_N * KEY_ROW;
    const bool cached = j < n_ctx;
    const int key0 = (cached ? c_first + j : n_first + j - n_ctx) * BLOCK_N;
    const int end = cached ? ctx : q_len;
    // K, and key-major V: row = key, 16-byte chunks of its dims.
    const char* k_base = cached ? k_pool + k_head_chunk : k_new + copy_chunk * 16;
    const char* v_base = cached ? v_pool + v_head_chunk : v_new + copy_chunk * 16;
    const long long* sources = row_source + stage * BLOCK_N;
    const long long* v_sources = SEPARATE_V ? v_row_source + stage * BLOCK_N : sources;
    // A tile whose keys all exist (every context tile but the last) copies without the zero-fill
    // form, whose per-copy arithmetic cost a fifth of the loop's instructions.
    auto copy_rows = [&](bool zero_fill) {  // inlined at both calls, zero_fill folded
    // Unrolled by up to 8 copies: a 1- or 2-warp CTA copies 32 to 64 rows per thread and tile,
    // whose fully unrolled loop holds every row's offset at once and spills.
#pragma unroll 8
      for (int i = 0; i < K_ITERS; ++i) {
        const int c = tid + i * THREADS;
        if (EVEN_COPY) {
          if (K_TOTAL % THREADS != 0 && c >= K_TOTAL) break;
        } else if (tid >= COPIERS || tid / K_CHUNKS + i * ROW_STEP >= BLOCK_N) {
          break;
        }
        const int row = EVEN_COPY ? c / K_CHUNKS : tid / K_CHUNKS + i * ROW_STEP;
        const long long offset = sources[row];
        const long long v_offset = SEPARATE_V ? v_sources[row] : offset;
        unsigned char* k_row = k_dst + row * KEY_ROW + copy_chunk * 16;
        unsigned char* v_row = v_dst + row * VKEY_ROW + copy_chunk * 16;
        if (zero_fill) {
          const bool valid = offset >= 0;
          cp_async_16(k_row, valid ? k_base + offset : k_pool, valid);
          if (copies_v) cp_async_16(v_row, valid ? v_base + v_offset : v_pool, valid);
        } else {
          cp_async_16(k_row, k_base + offset);
          if (copies_v) cp_async_16(v_row, v_base + v_offset);
        }
      }
    };
    if (key0 + BLOCK_N <= end) {
      copy_rows(false);
    } else {
      copy_rows(true);
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
            const char* src = valid ? v_pool + prefix_prefill::sm80_mma::paged_offset(
                                                   p.v_strides, page[b],
                                                   key - page_of(key) * p.page_size, kv_head, dim)
                                    : v_pool;
            cp_async_16(dst, src, valid);
          } else {
#pragma unroll 1
            for (int e = 0; e < CHUNK_KEYS; ++e) {
              unsigned short value = 0;
              if (key + e < end) {
                const int page_index = page_of(key + e);
                const char* src = v_pool + prefix_prefill::sm80_mma::paged_offset(
                                               p.v_strides, pages[page_index],
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

  // Prologue: the row sources of tiles 0 .. STAGES - 1, then Q and STAGES - 1 tiles in flight, one
  // commit group each (possibly empty), so the wait count in the loop stays exact.
#pragma unroll
  for (int s = 0; s < STAGES; ++s) {
#pragma unroll
    for (int r = 0; r < SOURCE_ROWS; ++r) {
      if (s < n_tiles) write_row_source(s, tid + r * THREADS, page_number(s, tid + r * THREADS));
    }
  }
  __syncthreads();
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
  // With causal visibility, keys past the warp's last position are hidden from all its rows.
  const int warp_last_key = !EXPLICIT_MASK && p.causal
                                ? ctx + t0 + (min(rows, (warp + 1) * WARP_ROWS) - 1) / p.group
                                : kv_len - 1;
  // Scores stay raw until the exponent, as in flash_fwd.sm80_mma: logit2 = scale * s, and the
  // row maxima are taken on s (scale > 0 keeps the order). With soft-cap the scores are turned
  // into log2 logits first and scale is 1.
  const float score_scale = p.score_scale * (KV_FP8 ? p.k_scale[kv_head] : 1.0f);
  const float scale = SOFT_CAP ? 1.0f : score_scale;

  float o[MF][D_TILES][4];
#pragma unroll
  for (int mf = 0; mf < MF; ++mf)
#pragma unroll
    for (int n = 0; n < D_TILES; ++n) o[mf][n][0] = o[mf][n][1] = o[mf][n][2] = o[mf][n][3] = 0.0f;
  float row_max[MF][2], row_sum[MF][2];  // maxima of s; sums over this lane's columns only
#pragma unroll
  for (int mf = 0; mf < MF; ++mf) {
    row_max[mf][0] = row_max[mf][1] = kNegInf;
    row_sum[mf][0] = row_sum[mf][1] = 0.0f;
  }

  // ldmatrix row addresses (lane l names a row of matrix l / 8), in 16-bit elements.
  // As 32-bit shared-memory byte addresses (one register each).
  const unsigned q_frag =
      shared_address(q_tile + (warp * WARP_ROWS + lane % 16) * ROW + (lane / 16) * 8);
  const int k_frag = (((lane / 16) * 8 + lane % 8) * ROW + ((lane / 8) % 2) * 8) * 2;
  const int v_frag = (V_DIM_MAJOR ? ((lane / 16) * 8 + lane % 8) * VT_ROW + ((lane / 8) % 2) * 8
                                  : (lane % 16) * V_ROW + (lane / 16) * 8) *
                     2;

  // Tile j's products, once it is in shared memory: (dequantise,) S = Q K^T, masks, online softmax,
  // O += P V.
  auto compute = [&](int j) {
    const unsigned char* tile_base = stages + (j % STAGES) * STAGE;
    if (KV_FP8) {
      prefix_prefill::sm80_mma::dequantise_tile<DTYPE, THREADS>(tile_base, KEY_ROW, dequantised,
                                                                ROW * 2, BLOCK_N, HEAD_DIM, tid);
      if (V_DIM_MAJOR) {
        prefix_prefill::sm80_mma::dequantise_tile<DTYPE, THREADS>(
            tile_base + BLOCK_N * KEY_ROW, DIM_ROW, dequantised + BLOCK_N * ROW * 2, VT_ROW * 2,
            V_HEAD_DIM, BLOCK_N, tid);
      } else {
        prefix_prefill::sm80_mma::dequantise_tile<DTYPE, THREADS>(
            tile_base + BLOCK_N * KEY_ROW, VKEY_ROW, dequantised + BLOCK_N * ROW * 2, V_ROW * 2,
            BLOCK_N, V_HEAD_DIM, tid);
      }
      __syncthreads();
      tile_base = dequantised;
    }
    const bool cached = j < n_ctx;
    const int key0 = cached ? (c_first + j) * BLOCK_N : ctx + (n_first + j - n_ctx) * BLOCK_N;
    // A warp whose rows are all padding (a short sequence's tile: decode rows), or none of whose
    // rows sees this tile (past the diagonal), only copies.
    if (!warp_active || key0 > warp_last_key) return;
    const unsigned k_tile = shared_address(tile_base);  // bytes from here on
    const unsigned v_tile = k_tile + BLOCK_N * ROW * 2;

    // S = Q K^T: [WARP_ROWS rows x BLOCK_N keys]; each K fragment serves every row tile. Q's
    // fragments come from shared memory, at most two k16 steps unrolled (unrolling all of them
    // hoists every step's fragments at once and spills).
    float s[MF][S_TILES][4];
#pragma unroll
    for (int mf = 0; mf < MF; ++mf)
#pragma unroll
      for (int n = 0; n < S_TILES; ++n)
        s[mf][n][0] = s[mf][n][1] = s[mf][n][2] = s[mf][n][3] = 0.0f;
#pragma unroll 2
    for (int ks = 0; ks < K_STEPS; ++ks) {
      unsigned int a[MF][4];
#pragma unroll
      for (int mf = 0; mf < MF; ++mf) ldmatrix_x4(a[mf], q_frag + (mf * 16 * ROW + ks * 16) * 2);
#pragma unroll
      for (int pair = 0; pair < S_TILES / 2; ++pair) {
        unsigned int b[4];  // keys pair*16 .. +7 and +8 .. +15, dims ks*16 .. +15
        ldmatrix_x4(b, k_tile + (pair * 16 * ROW + ks * 16) * 2 + k_frag);
#pragma unroll
        for (int mf = 0; mf < MF; ++mf) {
          mma_m16n8k16<DTYPE>(s[mf][2 * pair], a[mf], b[0], b[1]);
          mma_m16n8k16<DTYPE>(s[mf][2 * pair + 1], a[mf], b[2], b[3]);
        }
      }
    }

    // Soft-cap (log2 logits from here on), then the masks where a rule cuts the tile.
    if (SOFT_CAP) {
#pragma unroll
      for (int mf = 0; mf < MF; ++mf)
#pragma unroll
        for (int n = 0; n < S_TILES; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mf][n][e] = p.cap_log2 * tanhf(s[mf][n][e] * score_scale);
    }
    const int key_end = cached ? ctx : kv_len;
    if (EXPLICIT_MASK || key0 < all_lo || key0 + BLOCK_N - 1 > all_hi || key0 + BLOCK_N > key_end) {
#pragma unroll
      for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
        for (int n = 0; n < S_TILES; ++n) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = key0 + n * 8 + 2 * (lane % 4) + (e & 1);
            const int pos = position[mf][e / 2];
            bool visible = key < key_end;
            if (EXPLICIT_MASK) {
              visible = visible && __ldg(p.mask + (unsigned)(mask_row[mf][e / 2] + key)) != 0;
            } else {
              if (p.causal) visible = visible && key <= pos;
              if (p.sliding_window > 0) visible = visible && pos - key < p.sliding_window;
            }
            if (!visible) s[mf][n][e] = kNegInf;
          }
        }
      }
    }

    // Online softmax: new row maxima, P = 2^(scale * s - max), rescale the running state. The
    // output accumulators are rescaled only when some row of the warp has a new maximum (alpha 1
    // leaves them unchanged): after the first tiles a row's maximum seldom moves, and the rescale
    // is as many multiplies per tile as the products have mma instructions.
    float alpha[MF][2];
    bool moved = false;
#pragma unroll
    for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float m = kNegInf;
#pragma unroll
        for (int n = 0; n < S_TILES; ++n) m = fmaxf(m, fmaxf(s[mf][n][2 * h], s[mf][n][2 * h + 1]));
        // The 4 lanes of a quad hold one row.
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
        const float new_max = fmaxf(row_max[mf][h], m);
        // No visible key yet: a finite base, so that -inf - -inf never happens.
        const float base = new_max == kNegInf ? 0.0f : new_max * scale;
        // 1 exactly while the maximum stays (the sum and the accumulators then agree without a
        // rescale); 0 while the row had no key.
        const bool row_moved = new_max != row_max[mf][h];
        alpha[mf][h] = row_moved ? exp2_ftz(row_max[mf][h] * scale - base) : 1.0f;
        moved = moved || row_moved;
        row_max[mf][h] = new_max;
        float sum = 0.0f;
#pragma unroll
        for (int n = 0; n < S_TILES; ++n) {
          s[mf][n][2 * h] = exp2_ftz(fmaf(s[mf][n][2 * h], scale, -base));
          s[mf][n][2 * h + 1] = exp2_ftz(fmaf(s[mf][n][2 * h + 1], scale, -base));
          sum += s[mf][n][2 * h] + s[mf][n][2 * h + 1];
        }
        row_sum[mf][h] = fmaf(row_sum[mf][h], alpha[mf][h], sum);
      }
    }
    if (__any_sync(0xffffffffu, moved)) {
#pragma unroll
      for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
        for (int n = 0; n < D_TILES; ++n) {
          o[mf][n][0] *= alpha[mf][0];
          o[mf][n][1] *= alpha[mf][0];
          o[mf][n][2] *= alpha[mf][1];
          o[mf][n][3] *= alpha[mf][1];
        }
      }
    }

    // O += P V; two n8 tiles of P make one k16 A fragment.
#pragma unroll
    for (int kc = 0; kc < S_TILES / 2; ++kc) {
      unsigned int a[MF][4];
#pragma unroll
      for (int mf = 0; mf < MF; ++mf) {
        a[mf][0] = pack2<DTYPE>(s[mf][2 * kc][0], s[mf][2 * kc][1]);
        a[mf][1] = pack2<DTYPE>(s[mf][2 * kc][2], s[mf][2 * kc][3]);
        a[mf][2] = pack2<DTYPE>(s[mf][2 * kc + 1][0], s[mf][2 * kc + 1][1]);
        a[mf][3] = pack2<DTYPE>(s[mf][2 * kc + 1][2], s[mf][2 * kc + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < D_TILES / 2; ++dp) {
        unsigned int b[4];  // keys kc*16 .. +15, dims dp*16 .. +7 and +8 .. +15
        if (V_DIM_MAJOR) {
          ldmatrix_x4(b, v_tile + (dp * 16 * VT_ROW + kc * 16) * 2 + v_frag);
        } else {
          ldmatrix_x4_trans(b, v_tile + (kc * 16 * V_ROW + dp * 16) * 2 + v_frag);
        }
#pragma unroll
        for (int mf = 0; mf < MF; ++mf) {
          mma_m16n8k16<DTYPE>(o[mf][2 * dp], a[mf], b[0], b[1]);
          mma_m16n8k16<DTYPE>(o[mf][2 * dp + 1], a[mf], b[2], b[3]);
        }
      }
    }
  };

  // One KV tile: wait for it, refill the freed stage, (dequantise,) S = Q K^T, mask, online
  // softmax, O += P V.
  auto step = [&](int j) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile j landed for every thread; tile j - 1 consumed by every warp
    if (j + STAGES - 1 < n_tiles) load_tile(j + STAGES - 1, (j + STAGES - 1) % STAGES);
    cp_async_commit();
    // Tile j + STAGES's page numbers: read now, written into its row sources after the products.
    const bool ahead = j + STAGES < n_tiles;
    int ahead_page[SOURCE_ROWS];
#pragma unroll
    for (int r = 0; r < SOURCE_ROWS; ++r)
      ahead_page[r] = ahead ? page_number(j + STAGES, tid + r * THREADS) : 0;
    compute(j);
    if (ahead) {
#pragma unroll
      for (int r = 0; r < SOURCE_ROWS; ++r)
        write_row_source(j + STAGES, tid + r * THREADS, ahead_page[r]);
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
  // rows in its own rows of the Q tile (V_HEAD_DIM <= HEAD_DIM), then write them out 16 bytes at a
  // time.
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
          const float top = row_max[mf][h] * scale;
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
  constexpr int O_CHUNKS = V_HEAD_DIM / 8;
  char* out = static_cast<char*>(p.out);
  for (int c = lane; c < WARP_ROWS * O_CHUNKS; c += 32) {
    const int r = warp * WARP_ROWS + c / O_CHUNKS, col = (c % O_CHUNKS) * 8;
    if (r >= rows) continue;
    const long long token = info.q_start + t0 + r / p.group;
    const long long offset =
        ((token * p.num_q_heads + kv_head * p.group + r % p.group) * V_HEAD_DIM + col) * 2;
    *reinterpret_cast<uint4*>(out + offset) =
        *reinterpret_cast<const uint4*>(q_tile + r * ROW + col);
  }
}

}  // namespace attn
