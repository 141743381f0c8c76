// Traits of the calibration GEMMs: tile shapes, threads, shared memory and validity from a config,
// shared by the host (calibration.cpp rejects a bad config before compiling) and the kernels.
//
// gemm_sm90_wgmma.cuh  CONSUMERS warpgroups of 64 rows each (BM = 64 * CONSUMERS) by BN columns,
//                      BK = 64 (one 128-byte swizzle row of bf16), STAGES TMA buffers in flight,
//                      plus one producer warpgroup.
// gemm_mma_sync.cuh    128 x 128 x 32 tiles, 8 warps of 64 x 32, STAGES cp.async buffers.
#pragma once

#include "base/host_device.hpp"

namespace attn {
namespace gemm {

constexpr int kOk = 0, kTileN = 1, kConsumers = 2, kStages = 3, kSharedMemory = 4, kShape = 5;
constexpr int kMaxSharedBytes = 227 * 1024;  // Hopper's opt-in limit per block

// --- sm90 wgmma ---
constexpr int kSm90BK = 64;
ATTN_HOST_DEVICE constexpr int sm90_bm(int consumers) {
  return 64 * consumers;
}
ATTN_HOST_DEVICE constexpr int sm90_threads(int consumers) {
  return 128 * (consumers + 1);
}
ATTN_HOST_DEVICE constexpr int sm90_stage_bytes(int bn, int consumers) {
  return (sm90_bm(consumers) + bn) * kSm90BK * 2;
}
// Stages, the full/empty barriers, and 1 KiB to align the buffers for the 128-byte swizzle.
ATTN_HOST_DEVICE constexpr int sm90_shared_bytes(int bn, int consumers, int stages) {
  return stages * sm90_stage_bytes(bn, consumers) + 2 * stages * 8 + 1024;
}
ATTN_HOST_DEVICE constexpr int sm90_check(int bn, int consumers, int stages) {
  return (bn != 128 && bn != 256)                                     ? kTileN
         : (consumers != 1 && consumers != 2)                         ? kConsumers
         : (stages < 2 || stages > 8)                                 ? kStages
         : sm90_shared_bytes(bn, consumers, stages) > kMaxSharedBytes ? kSharedMemory
                                                                      : kOk;
}

// --- sm80 mma.sync ---
constexpr int kMmaBM = 128, kMmaBN = 128, kMmaBK = 32, kMmaThreads = 256;
constexpr int kMmaRowHalfs = kMmaBK + 8;  // padded shared row: conflict-free ldmatrix
ATTN_HOST_DEVICE constexpr int mma_shared_bytes(int stages) {
  return stages * (kMmaBM + kMmaBN) * kMmaRowHalfs * 2;
}
ATTN_HOST_DEVICE constexpr int mma_check(int stages) {
  return (stages < 2 || stages > 6)                   ? kStages
         : mma_shared_bytes(stages) > kMaxSharedBytes ? kSharedMemory
                                                      : kOk;
}

}  // namespace gemm
}  // namespace attn
