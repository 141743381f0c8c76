// A naive paged-decode kernel for the user-kernel fault tests (tests/apps/user_kernel_gpu_test.cpp)
// with two deliberate mistakes behind template parameters, so that one spec gives a good config
// beside a faulty one:
//   DROP_KEYS > 0    an off-by-one: the last DROP_KEYS keys of each sequence are skipped, so the
//                    result is plausible but wrong (recorded `incorrect`)
//   STRAY_WRITE > 0  thread 0 of the first CTA also writes far outside the output, which loses
//                    the CUDA context (recorded `crashed`, the worker replaced)
// One CTA of one warp per (sequence, q head); lane l holds dims l, l + 32, ...
#include "attn_bench/user_kernel.h"

template <int HEAD_DIM, int DROP_KEYS, int STRAY_WRITE>
__global__ void faulty_paged_decode(const AttnUserParams p) {
  constexpr int kDims = HEAD_DIM / 32;
  const int seq = blockIdx.x;
  const int q_head = blockIdx.y;
  const int kv_head = q_head / p.group_size;
  const int lane = threadIdx.x;
  const unsigned short* q = static_cast<const unsigned short*>(p.q);
  const unsigned short* k_pool = static_cast<const unsigned short*>(p.k_pool);
  const unsigned short* v_pool = static_cast<const unsigned short*>(p.v_pool);
  unsigned short* out = static_cast<unsigned short*>(p.out);
  const long long row = p.cu_seqlens_q[seq];
  const int kv_len = p.kv_lens[seq] - DROP_KEYS;

  float q_reg[kDims], acc[kDims];
  for (int i = 0; i < kDims; ++i) {
    const unsigned short bits =
        q[row * p.q_token_stride + q_head * p.q_head_stride + lane + 32 * i];
    q_reg[i] = __uint_as_float(static_cast<unsigned int>(bits) << 16) * p.softmax_scale;
    acc[i] = 0.0f;
  }
  float running_max = __int_as_float(0xff800000);
  float running_sum = 0.0f;
  for (int key = 0; key < kv_len; ++key) {
    const int page = p.block_table[seq * p.block_table_stride + key / p.page_size];
    const long long at = page * p.kv_page_stride + (key % p.page_size) * p.kv_token_stride +
                         kv_head * p.kv_head_stride;
    float dot = 0.0f;
    for (int i = 0; i < kDims; ++i) {
      dot +=
          q_reg[i] * __uint_as_float(static_cast<unsigned int>(k_pool[at + lane + 32 * i]) << 16);
    }
    for (int offset = 16; offset > 0; offset >>= 1)
      dot += __shfl_xor_sync(0xffffffffu, dot, offset);
    const float new_max = fmaxf(running_max, dot);
    const float rescale = __expf(running_max - new_max);
    const float weight = __expf(dot - new_max);
    running_sum = running_sum * rescale + weight;
    for (int i = 0; i < kDims; ++i) {
      acc[i] =
          acc[i] * rescale +
          weight * __uint_as_float(static_cast<unsigned int>(v_pool[at + lane + 32 * i]) << 16);
    }
    running_max = new_max;
  }
  for (int i = 0; i < kDims; ++i) {
    const float value = running_sum > 0.0f ? acc[i] / running_sum : 0.0f;
    unsigned int bits = __float_as_uint(value);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    out[row * p.out_token_stride + q_head * p.out_head_stride + lane + 32 * i] =
        static_cast<unsigned short>(bits >> 16);
  }
  if (STRAY_WRITE > 0 && seq == 0 && q_head == 0 && lane == 0) out[1ll << 40] = 0;
}
