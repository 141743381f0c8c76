// Kernel parameters of the test-only faulting kernels (fault.cuh), shared by host and device.
#pragma once

namespace attn::test_faults {

// What a faulting kernel does (its template argument).
enum FaultKind : int {
  kOobWrite = 0,  // writes far out of bounds: CUDA_ERROR_ILLEGAL_ADDRESS, a sticky error
  kHang = 1,      // never terminates
  kSmem = 2,      // asks for more dynamic shared memory than any GPU has: the launch is refused
  kNan = 3,       // writes NaN into every output element: verification fails
};

struct FaultParams {
  void* out;                // [num_seqs, num_q_heads, head_dim], bf16 or fp16
  long long elements;       // of out
  unsigned short nan_bits;  // a NaN in the output dtype: 0x7fc0 (bf16), 0x7e00 (fp16)
};

}  // namespace attn::test_faults
