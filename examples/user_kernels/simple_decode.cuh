// simple_decode: a paged-attention decode kernel written for the attn-bench user-kernel example
// (docs/user-kernels.md). Plain CUDA, no libraries, meant to be read top to bottom.
//
// What it computes: for every sequence s and query head h, the one query row of s attends to the
// kv_lens[s] keys of its kv head (h / group), read from the paged K/V pools through the page
// table; with a sliding window it sees only the last `sliding_window` keys, with a soft-cap the
// logits are cap * tanh(logits / cap), with sinks the head's sink logit joins the denominator.
//
// How: one CTA per (sequence, kv head), grid (num_seqs, num_kv_heads). Its WARPS warps split the
// keys: warp w takes keys [w * KEYS, w * KEYS + KEYS), then jumps WARPS * KEYS ahead. A warp scores
// one key with all 32 lanes (lane l holds dims l, l + 32, ...; a butterfly sum gives the dot
// product), keeps a running max and sum (online softmax) and its share of the output in fp32.
// The warps' partial results meet in shared memory at the end. The GQA group's query heads are
// handled one after another by the same CTA, so K and V of a kv head are read once per q head
// (simple, not fast: the point is a correct baseline to tune).
//
// Why the axes:
//   WARPS  more warps split a long sequence further (more loads in flight), fewer waste less
//          at the end of a short one.
//   KEYS   keys a warp scores before it updates its softmax state: the KEYS loads of K are
//          independent, so they overlap in memory instead of waiting one by one.
// Layouts: the pools are read through the strides of the parameter block, so NHD and HND both run.
#include "attn_bench/user_kernel.h"

static_assert(ATTN_USER_KERNEL_VERSION == 1, "written for version 1 of the parameter block");

namespace simple_decode {

__device__ __forceinline__ float bf16_to_float(unsigned short bits) {
  return __uint_as_float(static_cast<unsigned int>(bits) << 16);
}

__device__ __forceinline__ unsigned short float_to_bf16(float value) {
  unsigned int bits = __float_as_uint(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN stays NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);                  // round to nearest even
  return static_cast<unsigned short>(bits >> 16);
}

__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  }
  return value;
}

}  // namespace simple_decode

template <int WARPS, int KEYS, int HEAD_DIM>
__global__ void __launch_bounds__(WARPS * 32) simple_paged_decode(const AttnUserParams p) {
  static_assert(HEAD_DIM % 32 == 0, "each lane holds HEAD_DIM / 32 dims");
  constexpr int kDims = HEAD_DIM / 32;  // dims per lane
  using namespace simple_decode;

  __shared__ float shared_max[WARPS];
  __shared__ float shared_sum[WARPS];
  __shared__ float shared_acc[WARPS][HEAD_DIM];

  const float kNegInf = __int_as_float(0xff800000);  // NVRTC has no <math.h> INFINITY
  const int seq = blockIdx.x;
  const int kv_head = blockIdx.y;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;

  const int kv_len = p.kv_lens[seq];
  const int first_key =
      p.sliding_window > 0 && kv_len > p.sliding_window ? kv_len - p.sliding_window : 0;
  const unsigned short* q = static_cast<const unsigned short*>(p.q);
  const unsigned short* k_pool = static_cast<const unsigned short*>(p.k_pool);
  const unsigned short* v_pool = static_cast<const unsigned short*>(p.v_pool);
  unsigned short* out = static_cast<unsigned short*>(p.out);
  const int* pages = p.block_table + seq * p.block_table_stride;
  const long long query_row = p.cu_seqlens_q[seq];  // decode: one query row per sequence

  for (int g = 0; g < p.group_size; ++g) {
    const int q_head = kv_head * p.group_size + g;

    float q_reg[kDims];  // [kDims]: this lane's dims of the query, scaled
    const unsigned short* q_row = q + query_row * p.q_token_stride + q_head * p.q_head_stride;
    for (int i = 0; i < kDims; ++i)
      q_reg[i] = bf16_to_float(q_row[lane + 32 * i]) * p.softmax_scale;

    float running_max = kNegInf;
    float running_sum = 0.0f;
    float acc[kDims];
    for (int i = 0; i < kDims; ++i) acc[i] = 0.0f;

    for (int base = first_key + warp * KEYS; base < kv_len; base += WARPS * KEYS) {
      float scores[KEYS];
      long long offsets[KEYS];  // element offset of each key's row in the pools
      // The KEYS dot products are independent: their loads overlap.
      for (int j = 0; j < KEYS; ++j) {
        const int key = base + j;
        scores[j] = kNegInf;
        offsets[j] = 0;
        if (key < kv_len) {
          const int page = pages[key / p.page_size];
          offsets[j] = page * p.kv_page_stride + (key % p.page_size) * p.kv_token_stride +
                       kv_head * p.kv_head_stride;
          float dot = 0.0f;
          for (int i = 0; i < kDims; ++i) {
            dot += q_reg[i] * bf16_to_float(k_pool[offsets[j] + lane + 32 * i]);
          }
          dot = warp_sum(dot);
          if (p.soft_cap > 0.0f) dot = p.soft_cap * tanhf(dot / p.soft_cap);
          scores[j] = dot;
        }
      }
      float block_max = running_max;
      for (int j = 0; j < KEYS; ++j) block_max = fmaxf(block_max, scores[j]);
      if (block_max == kNegInf) continue;                     // no key of this step is visible
      const float rescale = __expf(running_max - block_max);  // 0 on the first visible key
      running_sum *= rescale;
      for (int i = 0; i < kDims; ++i) acc[i] *= rescale;
      for (int j = 0; j < KEYS; ++j) {
        if (scores[j] == kNegInf) continue;
        const float weight = __expf(scores[j] - block_max);
        running_sum += weight;
        for (int i = 0; i < kDims; ++i) {
          acc[i] += weight * bf16_to_float(v_pool[offsets[j] + lane + 32 * i]);
        }
      }
      running_max = block_max;
    }

    // Combine the warps: every warp's state goes to shared memory, then each thread finishes
    // some output dims.
    if (lane == 0) {
      shared_max[warp] = running_max;
      shared_sum[warp] = running_sum;
    }
    for (int i = 0; i < kDims; ++i) shared_acc[warp][lane + 32 * i] = acc[i];
    __syncthreads();

    float total_max = p.has_sinks ? p.sink_logits[q_head] : kNegInf;
    for (int w = 0; w < WARPS; ++w) total_max = fmaxf(total_max, shared_max[w]);
    float total_sum = p.has_sinks ? __expf(p.sink_logits[q_head] - total_max) : 0.0f;
    for (int w = 0; w < WARPS; ++w) {
      if (shared_max[w] != kNegInf) total_sum += shared_sum[w] * __expf(shared_max[w] - total_max);
    }
    unsigned short* out_row = out + query_row * p.out_token_stride + q_head * p.out_head_stride;
    for (int d = threadIdx.x; d < HEAD_DIM; d += WARPS * 32) {
      float value = 0.0f;
      for (int w = 0; w < WARPS; ++w) {
        if (shared_max[w] != kNegInf) value += shared_acc[w][d] * __expf(shared_max[w] - total_max);
      }
      // A row that sees no key (and has no sink) outputs zeros.
      out_row[d] = float_to_bf16(total_sum > 0.0f ? value / total_sum : 0.0f);
    }
    __syncthreads();  // shared memory is reused by the next q head
  }
}
