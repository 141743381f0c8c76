// Counter-based random numbers for deterministic data: the value of element `index` of stream
// `stream` under `seed` is a pure function of the three, so the host generator, a GPU fill kernel
// and any launch configuration produce the same bytes.
//
// Plain C++ compiled by both g++ (host) and NVRTC (device): no standard headers here.
#pragma once

#include "base/host_device.hpp"

namespace attn {

// The splitmix64 finaliser: a bijective 64-bit mix with full avalanche.
ATTN_HOST_DEVICE inline unsigned long long mix64(unsigned long long x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// A key for one stream (one tensor) of one seed; computed once, then used with every index.
ATTN_HOST_DEVICE inline unsigned long long stream_key(unsigned long long seed,
                                                      unsigned int stream) {
  return mix64(seed ^ (0x9e3779b97f4a7c15ull * (stream + 1ull)));
}

ATTN_HOST_DEVICE inline unsigned long long counter_bits(unsigned long long key,
                                                        unsigned long long index) {
  return mix64(key + index * 0xd1b54a32d192ed03ull);
}

// Uniform in [-1, 1) with 24 random bits: exactly representable in float.
ATTN_HOST_DEVICE inline float counter_uniform_pm1(unsigned long long key,
                                                  unsigned long long index) {
  return float(counter_bits(key, index) >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

}  // namespace attn
