// The value of every element of a batch's Q, K and V: one rule for the host generator
// (workloads/batch_data.cpp) and a GPU fill kernel, so both produce the same numbers.
//
// An element's value depends only on the seed, its stream and its logical index, never on the
// page size, layout or page allocation (docs/workload.md, "Tensor contents"):
//   Q (token t of the batch, q head h, dim d):   index (t * num_q_heads + h) * head_dim + d
//   K/V (kv token k, kv head h, dim d):          index (k * num_kv_heads + h) * head_dim + d
// where the kv token of (sequence s, position p) is cu_seqlens_kv[s] + p, or, inside a shared
// prefix (p < shared_prefix_len[s]), that of the same position of the prefix's source sequence.
//
// Plain C++ compiled by both g++ (host) and NVRTC (device): no standard headers here.
#pragma once

#include "base/host_device.hpp"
#include "workloads/counter_rng.hpp"

namespace attn {

// Counter streams of the tensors (stream_key(seed, stream)); the page allocators use 16 and up.
enum class DataStream : unsigned { query = 1, key = 2, value = 3 };

// Q is uniform in [-kQueryAmplitude, kQueryAmplitude) so that attention is peaked rather than
// flat (flat attention averages V and hides indexing bugs).
constexpr float kQueryAmplitude = 3.0f;

// The largest finite fp8 e4m3 magnitude: an fp8 scale maps a head's amplitude onto it.
constexpr float kFp8E4m3Max = 448.0f;

ATTN_HOST_DEVICE inline unsigned long long query_data_index(long long token, int head, int dim,
                                                            int num_q_heads, int head_dim) {
  return (unsigned long long)((token * num_q_heads + head) * head_dim + dim);
}

// The kv token whose data (sequence `seq`, `position`) holds: prefix sharing makes a sequence's
// first shared_prefix_len[seq] tokens those of its prefix source.
ATTN_HOST_DEVICE inline long long kv_data_token(const long long* cu_seqlens_kv,
                                                const int* prefix_source,
                                                const long long* shared_prefix_len, int seq,
                                                long long position) {
  const int source = position < shared_prefix_len[seq] ? prefix_source[seq] : seq;
  return cu_seqlens_kv[source] + position;
}

ATTN_HOST_DEVICE inline unsigned long long kv_data_index(long long kv_token, int head, int dim,
                                                         int num_kv_heads, int head_dim) {
  return (unsigned long long)((kv_token * num_kv_heads + head) * head_dim + dim);
}

// Amplitude of K or V of kv head `head`. 1 for bf16/fp16 caches. For an fp8 cache the heads get
// different powers of two (K: 2^((h % 4) - 1), V: 2^(((h + 1) % 4) - 1), i.e. 0.5, 1, 2, 4), so
// per-head scales genuinely differ from each other and from the per-tensor one, and K's scales
// differ from V's: a kernel that applies the wrong head's or the wrong tensor's scale is wrong by
// a factor of 2 or more.
ATTN_HOST_DEVICE inline float kv_amplitude(DataStream stream, int head, bool fp8_cache) {
  if (!fp8_cache) return 1.0f;
  const int step = (stream == DataStream::value ? head + 1 : head) % 4;
  return step == 0 ? 0.5f : step == 1 ? 1.0f : step == 2 ? 2.0f : 4.0f;
}

// The dequantisation scale that maps amplitude `amplitude` onto the fp8 range: the codes of
// value / scale span about -448..448. A per-tensor scale uses the largest amplitude of the heads.
ATTN_HOST_DEVICE inline float fp8_scale_for(float amplitude) {
  return amplitude / kFp8E4m3Max;
}

// Values before rounding to the element type.
ATTN_HOST_DEVICE inline float query_element(unsigned long long query_key,
                                            unsigned long long index) {
  return kQueryAmplitude * counter_uniform_pm1(query_key, index);
}

ATTN_HOST_DEVICE inline float kv_element(unsigned long long stream_key_value,
                                         unsigned long long index, float amplitude) {
  return amplitude * counter_uniform_pm1(stream_key_value, index);
}

}  // namespace attn
