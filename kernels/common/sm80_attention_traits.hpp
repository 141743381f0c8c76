// Traits of the sm_80-class attention loop (device side: kernels/common/sm80_attention.cuh) that
// flash_fwd.sm80_mma and blocksparse.sm80_mma run: threads and per-warp tile shapes, the
// shared-memory row layout with its ldmatrix and cp.async addresses, shared memory, the register
// model that decides whether Q stays in registers, and where the row sums run. Included by the host
// (the families' rules in their own traits build on these) and by the device template, so the two
// cannot disagree.
#pragma once

#include "base/host_device.hpp"

namespace attn {
namespace sm80_attention {

// Rows of one mma.sync m16n8k16 tile: a warp owns 16 or 32 query rows of the CTA's tile_m.
constexpr int kMmaRows = 16;

ATTN_HOST_DEVICE constexpr int threads(int warps) {
  return warps * 32;
}
ATTN_HOST_DEVICE constexpr int warp_rows(int tile_m, int warps) {
  return tile_m / warps;
}
// m16 fragments per warp: two reuse every K and V fragment read from shared memory twice.
ATTN_HOST_DEVICE constexpr int m_frags(int tile_m, int warps) {
  return warp_rows(tile_m, warps) / kMmaRows;
}
// Shared-memory rows of Q, K and V, two layouts; either way the 8 rows one ldmatrix reads (the
// same logical 16-byte chunk) start in 8 different 16-byte bank groups (no conflicts):
// - head_dim 128 and 256: unpadded rows whose 16-byte chunks are XOR-swizzled within their
//   128-byte group by the row's index mod 8 (swizzled_chunk), so the chunks a warp copies from one
//   128-byte line of global memory fill one aligned 128-byte line of shared memory. With padded
//   rows every copied line straddled two: ncu counted 2.6 times the ideal shared-memory
//   wavefronts and 1.5 times the L2 sectors for the copies (H200, head_dim 256), and the
//   swizzle took d256 16x1024 from 522.29 to 477.39 us (BENCHMARKS.md, issue 8).
// - head_dim 64: rows padded by 16 bytes. A build with the swizzle there too (and another change
//   not separated from it) was 0.1% to 6.6% slower at head_dim 64: the swizzle costs an XOR per
//   ldmatrix where the padded layout folds each step into the instruction's offset.
// - head_dim 192 (24 chunks, three 128-byte groups) is swizzled as 128 and 256 are: the XOR stays
//   inside a chunk's group. head_dim 80 and 96 (10 and 12 chunks: no whole 128-byte groups) are
//   padded by 16 bytes as 64 is: a row of 11 or 13 chunks (odd) puts the same chunk of 8
//   consecutive rows in 8 different bank groups too.
// Q and K use head_dim's layout, V (and the staged output) v_head_dim's.
ATTN_HOST_DEVICE constexpr bool swizzled(int head_dim) {
  return head_dim >= 128 && head_dim % 64 == 0;
}
// Whether whole rows of head_dim are a power of two of 16-byte chunks (64, 128, 256): the layouts
// the loop was measured and tuned on; the others (80, 96, 192) take the general forms below.
ATTN_HOST_DEVICE constexpr bool power_of_two_chunks(int head_dim) {
  return ((head_dim / 8) & (head_dim / 8 - 1)) == 0;
}
// Threads that copy one row's 16-byte chunks (a power of two: the copy pattern walks rows in
// passes of threads / copy_slots rows): a row's chunks rounded up; the slots past the row's chunks
// idle (head_dim 80: 10 of 16 copy, 96: 12 of 16, 192: 24 of 32).
ATTN_HOST_DEVICE constexpr int copy_slots(int head_dim) {
  int slots = 1;
  while (slots < head_dim / 8) slots *= 2;
  return slots;
}
ATTN_HOST_DEVICE constexpr int row_elements(int head_dim) {
  return swizzled(head_dim) ? head_dim : head_dim + 8;
}
// Where 16-byte chunk `chunk` of row `row` lies in its row.
ATTN_HOST_DEVICE constexpr int swizzled_chunk(int head_dim, int row, int chunk) {
  return swizzled(head_dim) ? chunk ^ (row & 7) : chunk;
}
// Where ldmatrix reads a fragment of `tile`: `rows` elements (whole rows: a multiple of
// row_elements) past the row offset `frag` whose chunk swizzled_chunk placed, and `step` elements
// along the row (whole chunk pairs, below the row's length: a k16 step). An XOR in the swizzled
// layout; in the padded one three pointer steps, which the compiler folds into the instruction's
// immediate offset (an int sum first cost 16 registers and spilled at head_dim 64). Whole rows
// leave the bits the step XORs alone, so the XOR goes on `frag` before the rows are added: one
// XOR per fragment and step, and every fragment rows further on is an immediate offset from it
// (with the XOR after the sum, ncu counted three integer instructions per ldmatrix at head dim
// 256: 168.6M instructions against FlashAttention-2's 127.5M, BENCHMARKS.md).
// At head_dim 192 a row is three 128-byte groups: the step's part within its group (below 64
// elements) is XORed and whole groups are added (the row offset's bits 3 to 5 are zero there, as
// a fragment's chunk lies in the row's first group). Steps are constants of unrolled loops.
template <int HEAD_DIM, class T>
ATTN_HOST_DEVICE constexpr T* fragment_address(T* tile, int frag, int rows, int step) {
  if constexpr (swizzled(HEAD_DIM) && power_of_two_chunks(HEAD_DIM)) {
    return tile + (frag ^ step) + rows;
  } else if constexpr (swizzled(HEAD_DIM)) {
    return tile + (frag ^ (step & 63)) + (step & ~63) + rows;
  } else {
    return tile + frag + rows + step;
  }
}

// Where a copying thread writes pass `pass` of a tile: its first row's chunk is at `first`
// (row_elements x its row + swizzled_chunk x 8), and each pass is rows_per_pass rows further.
// rows_per_pass is a power of two and the thread's first row is below it, so a pass's rows
// differ from the first in their index mod 8 by exactly (pass x rows_per_pass) mod 8, an XOR of
// the chunk (no carry).
template <int HEAD_DIM, class T>
ATTN_HOST_DEVICE constexpr T* copy_address(T* tile, int first, int pass, int rows_per_pass) {
  const int swizzle = swizzled(HEAD_DIM) ? ((pass * rows_per_pass) & 7) * 8 : 0;
  return fragment_address<HEAD_DIM>(tile, first, pass * rows_per_pass * row_elements(HEAD_DIM),
                                    swizzle);
}

// Q [tile_m rows] and STAGES buffers of K and V [tile_n rows each] (stages 1, the split
// pipeline: one K and one V buffer); the output tile is staged through the Q rows of each warp at
// the end. Q and K rows are head_dim wide, V rows v_head_dim (not wider: the output's rows, v_head
// dim wide, are staged in Q's).
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int v_head_dim, int tile_m, int tile_n,
                                            int stages) {
  return ((tile_m + stages * tile_n) * row_elements(head_dim) +
          stages * tile_n * row_elements(v_head_dim)) *
         2;
}
// With an fp8 cache (attend's KV_FP8): Q, STAGES buffers of K and V codes as copied (plain rows,
// one byte a code), and the one K and V buffer of 16-bit values they are converted into.
ATTN_HOST_DEVICE constexpr int shared_bytes_kv_fp8(int head_dim, int v_head_dim, int tile_m,
                                                   int tile_n, int stages) {
  return tile_m * row_elements(head_dim) * 2 + stages * tile_n * (head_dim + v_head_dim) +
         tile_n * (row_elements(head_dim) + row_elements(v_head_dim)) * 2;
}
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int tile_m, int tile_n, int stages) {
  return (tile_m + stages * 2 * tile_n) * row_elements(head_dim) * 2;
}

// Per-thread 32-bit registers the live arrays need: the output accumulator (warp rows x v_head_dim
// floats over 32 lanes), the scores (warp rows x tile_n floats), when Q stays in registers its A
// fragments (warp rows x head_dim 16-bit values), and the row offsets of the K/V copies (one per
// two 16-byte chunks a thread copies per tile: the compiler keeps them across the key loop); plus
// an allowance for addresses, row statistics and the fragments in flight. The allowance is what
// ptxas (CUDA 13.0, sm_90a) showed: 192 accumulator registers spilled (head_dim 128 x 32 rows x
// 64 keys; head_dim 64 x 32 rows x 128 keys), 160 did not; 2 warps copying 128 keys of head_dim
// 128 (32 chunks each) spilled with Q in registers.
// Each family limits the estimate in its own rule (its traits' kMaxRegisterEstimate):
// flash_fwd.sm80_mma admits a few spilled loop invariants where they measured fastest,
// blocksparse.sm80_mma none.
constexpr int kRegisterOverhead = 64;
constexpr int kMaxQInRegisters = 226;
// With a V narrower than K (v_head_dim < head_dim) the accumulator is v_head_dim wide and V's
// copies have offsets of their own (their copy slots); at head dims 80, 96 and 192 a copy pass is
// copy_slots threads per row (idle slots included).
ATTN_HOST_DEVICE constexpr int accumulator_registers(int v_head_dim, int tile_m, int tile_n,
                                                     int warps) {
  return warp_rows(tile_m, warps) * (v_head_dim + tile_n) / 32;
}
ATTN_HOST_DEVICE constexpr int q_fragment_registers(int head_dim, int tile_m, int warps) {
  return warp_rows(tile_m, warps) * head_dim / 64;
}
ATTN_HOST_DEVICE constexpr int copy_registers(int head_dim, int v_head_dim, int tile_n, int warps) {
  return tile_n * (copy_slots(head_dim) + (v_head_dim != head_dim ? copy_slots(v_head_dim) : 0)) /
         threads(warps) / 2;
}
ATTN_HOST_DEVICE constexpr int base_registers(int head_dim, int v_head_dim, int tile_m, int tile_n,
                                              int warps) {
  return accumulator_registers(v_head_dim, tile_m, tile_n, warps) +
         copy_registers(head_dim, v_head_dim, tile_n, warps) + kRegisterOverhead;
}
// Q's fragments stay in registers for the whole key loop when they fit beside the rest (saves one
// ldmatrix per k16 step and m16 fragment); otherwise they are re-read from shared memory for every
// key tile, as FlashAttention-2 does at head_dim 128 with 32 rows per warp.
ATTN_HOST_DEVICE constexpr bool q_in_registers(int head_dim, int v_head_dim, int tile_m, int tile_n,
                                               int warps) {
  return base_registers(head_dim, v_head_dim, tile_m, tile_n, warps) +
             q_fragment_registers(head_dim, tile_m, warps) <=
         kMaxQInRegisters;
}
ATTN_HOST_DEVICE constexpr int register_estimate(int head_dim, int v_head_dim, int tile_m,
                                                 int tile_n, int warps) {
  return base_registers(head_dim, v_head_dim, tile_m, tile_n, warps) +
         (q_in_registers(head_dim, v_head_dim, tile_m, tile_n, warps)
              ? q_fragment_registers(head_dim, tile_m, warps)
              : 0);
}
// V as wide as Q and K.
ATTN_HOST_DEVICE constexpr bool q_in_registers(int head_dim, int tile_m, int tile_n, int warps) {
  return q_in_registers(head_dim, head_dim, tile_m, tile_n, warps);
}
ATTN_HOST_DEVICE constexpr int register_estimate(int head_dim, int tile_m, int tile_n, int warps) {
  return register_estimate(head_dim, head_dim, tile_m, tile_n, warps);
}

// Row sums of P on the tensor cores: one more mma m16n8k16 per k16 step of P V (B a tile of ones,
// constant registers) instead of one FADD per score in the softmax, at head dims 128 and 256 over
// 4 warps. Measured on H100s against the FADDs (BENCHMARKS.md, flash_fwd, "row sums on the tensor
// cores"), default configs, two rounds each, us: 128 x 64 over 4 warps at d128 16x1024 422.67 /
// 414.75 -> 403.33 / 406.96 and 4x4096 1534.51 / 1535.73 -> 1459.01 / 1459.87; 64 x 64 over 4
// warps level to 1.6% faster (d256 4x4096 1670.75 / 1692.29 -> 1662.75 / 1646.94). Over 8 warps
// slower: d256 1x16384 6594.22 / 6594.26 -> 6837.97 / 6892.53, d128 1x16384 causal 3360.16 /
// 3307.12 -> 3432.56 / 3396.16; and at head dim 64, where the extra mma is an eighth more P V
// work rather than a 16th or a 32nd, d64 4x4096 1616.88 / 1618.26 -> 1667.14 / 1639.33. The
// head dim that counts is P V's: v_head_dim (192 and a V of 128 or more take them, unmeasured).
ATTN_HOST_DEVICE constexpr bool tensor_row_sums(int v_head_dim, int warps) {
  return v_head_dim >= 128 && warps == 4;
}

}  // namespace sm80_attention
}  // namespace attn
