// Kernel parameters of the pass that dequantises an fp8 cache's codes before a Hopper kernel reads
// them as 16-bit tiles (fp8_dequantize.cuh): flash_fwd.sm90_wgmma's and blocksparse.sm90_wgmma's
// gathered K and V rows. Shared by the host (which fills them) and the device code.
#pragma once

#include "base/host_device.hpp"

namespace attn {

struct Fp8DequantParams {
  // CTA c converts bytes [c * kChunkBytes, (c + 1) * kChunkBytes) of the contiguous codes (K's
  // k_bytes, V's v_bytes) into k_out and v_out (16-bit values).
  const unsigned char* k_codes;
  const unsigned char* v_codes;
  long long k_bytes;
  long long v_bytes;
  unsigned short* k_out;
  unsigned short* v_out;
};

namespace fp8_dequantize {

constexpr int kThreads = 256;
constexpr long long kChunkBytes = 16384;  // codes per CTA

// CTAs of the pass: one per chunk of the wider of K and V.
ATTN_HOST_DEVICE constexpr long long ctas(long long k_bytes, long long v_bytes) {
  const long long widest = k_bytes > v_bytes ? k_bytes : v_bytes;
  return (widest + kChunkBytes - 1) / kChunkBytes;
}

}  // namespace fp8_dequantize

}  // namespace attn
