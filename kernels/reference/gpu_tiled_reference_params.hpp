// Parameters and shape of the tiled GPU reference (gpu_tiled_reference.cuh): one CTA per (tile of
// up to kGpuTiledRows query tokens of one sequence, q head); kGpuTiledThreadsPerRow threads per
// query row, each holding the dims gpu_tiled_dim() gives it; K and V staged in shared memory a
// tile of keys at a time, as floats. Shared with the host (g++), which plans the tiles
// (gpu_tiled_reference.hpp) and whose CPU tests check these rules. No standard headers: NVRTC
// compiles this.
#pragma once

#include "base/host_device.hpp"
#include "kernels/reference/gpu_reference_params.hpp"

namespace attn {

// Query rows (tokens of one sequence, one q head) per CTA: 256 threads, so that a thread may use
// up to 255 registers and q and the accumulator never spill (ptxas: about 180 used).
constexpr int kGpuTiledRows = 32;
// Threads that share one query row: each owns every kGpuTiledThreadsPerRow-th dim.
constexpr int kGpuTiledThreadsPerRow = 8;
constexpr int kGpuTiledThreads = kGpuTiledRows * kGpuTiledThreadsPerRow;
// Dims one thread holds, of q and of its output accumulator: 32 covers head_dim (and v_head_dim)
// 256.
constexpr int kGpuTiledDimsPerThread = 32;
constexpr int kGpuTiledMaxHeadDim = kGpuTiledThreadsPerRow * kGpuTiledDimsPerThread;
// Floats of one staged K (or V) tile: 16 KB each, so both fit the 48 KB of static shared memory.
constexpr int kGpuTiledTileFloats = 4096;

struct GpuTiledReferenceParams {
  GpuReferenceParams p;               // the naive reference's parameters (seq_of_token unused)
  const int* tile_seq;                // [num_tiles] the sequence of each query tile
  const long long* tile_first_query;  // [num_tiles] its first query's index in the sequence
};

// Keys per staged tile: as many as kGpuTiledTileFloats holds of the wider of K's rows (head_dim)
// and V's (v_head_dim): 16 at 256, 21 at 192, 42 at 96, 51 at 80.
ATTN_HOST_DEVICE inline int gpu_tiled_keys_per_tile(int head_dim, int v_head_dim) {
  return kGpuTiledTileFloats / (head_dim > v_head_dim ? head_dim : v_head_dim);
}

// The dim that thread `part` (0..kGpuTiledThreadsPerRow-1) of a row holds in its slot `i`: the
// threads of a row read neighbouring floats of a staged key, which rows of a warp share (no bank
// conflict).
ATTN_HOST_DEVICE inline int gpu_tiled_dim(int part, int i) {
  return part + kGpuTiledThreadsPerRow * i;
}

}  // namespace attn
