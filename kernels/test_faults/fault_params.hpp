// Kernel parameters of the test-only faulting kernels (fault.cuh), shared by host and device.
#pragma once

namespace attn::test_faults {

// What a faulting kernel does (its template argument).
enum FaultKind : int {
  kOobWrite = 0,  // writes far out of bounds: CUDA_ERROR_ILLEGAL_ADDRESS, a sticky error
  kHang = 1,      // never terminates
  kSmem = 2,      // asks for more dynamic shared memory than any GPU has: the launch is refused
  kNan = 3,       // writes NaN into every output element: verification fails
  kBadPage = 4,   // reads the K pool through a page number far outside the pool: illegal
                  // address, a sticky error
};

// The page number kBadPage reads through: above any pool (the workload limits keep pools under
// 2^31 - 1 pages), and at least 256 GiB past the pool's start (2^31 - 16 pages of at least 128
// bytes: page_size 1, one kv head, head_dim 64, 2-byte elements), where nothing is mapped.
constexpr int kBadPageNumber = 0x7ffffff0;

struct FaultParams {
  void* out;                // [num_seqs, num_q_heads, head_dim], bf16 or fp16
  long long elements;       // of out
  unsigned short nan_bits;  // a NaN in the output dtype: 0x7fc0 (bf16), 0x7e00 (fp16)
  // kBadPage only:
  const unsigned short* k_pool;  // the batch's K pool, [num_pages, <one page>] in any layout
  const int* block_table;        // [num_seqs, max_pages_per_seq]
  long long page_elements;       // elements of one page of the K pool
};

}  // namespace attn::test_faults
