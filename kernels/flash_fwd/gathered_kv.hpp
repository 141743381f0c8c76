// Host side of the CUDA kernels that read K/V gathered into contiguous buffers
// (flash_fwd.sm80_mma, flash_fwd.sm90_wgmma, blocksparse.sm80_mma, blocksparse.sm80_mma_decode,
// blocksparse.sm90_wgmma):
// the gather, run once in prepare() (outside any timing) with flash_fwd_gather_kv
// (gather_kv.cuh).
#pragma once

#include <vector>

#include "kernels/common/fp8_dequantize_params.hpp"
#include "kernels/variant.hpp"

namespace attn {

// K as [total_kv, num_kv_heads, head_dim], V as [total_kv, num_kv_heads, v_head_dim] (V no wider
// than K) in the cache's dtype (an fp8 cache's codes as they are) and cu_seqlens_kv as int32, in
// this order;
// `gather` is flash_fwd_gather_kv from the variant's program. Synchronises the stream.
std::vector<DeviceBuffer> gather_kv_contiguous(Problem& problem, ExecContext& context,
                                               CUfunction gather);

// What a Hopper kernel's tensor maps read of the gathered K and V (gather_kv_contiguous's first
// two buffers). Over an fp8 cache: 16-bit copies of the codes, which `pass` (run before the kernel
// by DequantThenAttend) fills, and each kv head's K and V scales; the copies and the scales join
// `buffers`. Over a 16-bit cache: the gathered buffers themselves, no pass, no scales.
struct GatheredKvRows {
  const void* k_rows = nullptr;
  const void* v_rows = nullptr;
  Fp8DequantParams pass{};
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
};
GatheredKvRows dequantised_gathered_kv(const Batch& batch, ExecContext& context,
                                       std::vector<DeviceBuffer>& buffers);

// The gather's name expression in a program.
inline constexpr const char* kGatherKvKernel = "attn::flash_fwd_gather_kv";

// The one JIT program of a prefill variant over gathered K/V: `header` (which includes
// gather_kv.cuh), its attention kernel's name expression `attention` and the gather, named
// <variant>.<config>.d<head_dim>[.dv<v_head_dim> where V is narrower].<dtype>[.causal].
JitProgram gathered_kv_program(const Variant& variant, const Batch& batch,
                               const KernelConfig& config, const Target& target,
                               const std::string& header, std::string attention);

}  // namespace attn
