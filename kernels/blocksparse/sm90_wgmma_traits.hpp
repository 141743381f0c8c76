// Traits of blocksparse.sm90_wgmma: shared-memory layout, register split and validity derived from
// one config (head_dim, tile_n, stages, ctas_per_sm) and, once a batch is known, its layout's
// block size. The tile shapes, index maps and tile rules are those of the FA3-style Hopper kernels
// (kernels/common/sm90_attention_traits.hpp); the walk over a query tile's kept key tiles is
// blocksparse.mma's (mma_traits.hpp). Included by the host (to refuse a config, with a reason,
// before compiling it) and by the device template (which static_asserts the same rules).
#pragma once

#include "base/host_device.hpp"
#include "kernels/common/sm90_attention_traits.hpp"

namespace attn {
namespace blocksparse_sm90 {

using sm90_attn::kOk;

// One consumer warpgroup per CTA: its 64 query rows (one wgmma M) lie in one block row of the
// layout whenever 64 divides the block size, so the CTA walks one CSR row.
constexpr int kTileM = sm90_attn::kConsumerRows;
constexpr int kConsumers = 1;

ATTN_HOST_DEVICE constexpr int threads() {
  return sm90_attn::threads(kConsumers);  // 256: the producer warpgroup and the consumer
}

// mbarriers: Q's, and full + empty for K and for V in every stage.
ATTN_HOST_DEVICE constexpr int barrier_bytes(int stages) {
  return (1 + 4 * stages) * 8;
}
ATTN_HOST_DEVICE constexpr int shared_bytes(int head_dim, int tile_n, int stages) {
  return sm90_attn::tile_bytes(head_dim, kTileM, tile_n, stages) + barrier_bytes(stages);
}

// Hopper's shared memory per SM (228 KiB), of which the driver reserves 1 KiB per resident CTA.
constexpr int kSharedPerSm = 228 * 1024;
constexpr int kReservedSharedPerCta = 1024;
constexpr int kRegisterFile = 65536;  // 32-bit registers per SM

// setmaxnreg budgets. The register file is split among the resident CTAs at launch; a CTA's
// setmaxnreg.inc takes what its own producer gave back with setmaxnreg.dec.
// - One CTA per SM: prefix_prefill.sm90_wgmma's one-consumer split (56 / 240; 256 threads leave
//   room to spare).
// - Two CTAs per SM: __launch_bounds__(256, 2) gives each thread 128 registers at launch
//   (65536 / 512), i.e. 32768 per CTA; the producer drops to 24 so the consumer can rise to 232
//   (128 x 24 + 128 x 232 = 32768), CUTLASS's cooperative-GEMM consumer budget.
ATTN_HOST_DEVICE constexpr int producer_registers(int ctas_per_sm) {
  return ctas_per_sm == 2 ? 24 : 56;
}
ATTN_HOST_DEVICE constexpr int consumer_registers(int ctas_per_sm) {
  return ctas_per_sm == 2 ? 232 : sm90_attn::kConsumerRegisters;
}
// Registers per thread at launch: the register file split among the resident CTAs (256 or 128,
// multiples of the allocation granularity of 8). The split above must fit a CTA's share.
ATTN_HOST_DEVICE constexpr int launch_registers(int ctas_per_sm) {
  return kRegisterFile / (ctas_per_sm * threads());
}
ATTN_HOST_DEVICE constexpr bool register_split_fits(int ctas_per_sm) {
  return 128 * (producer_registers(ctas_per_sm) + consumer_registers(ctas_per_sm)) <=
         threads() * launch_registers(ctas_per_sm);
}

enum Rule : int {
  // sm90_attn::Rule's kOk .. kRegisters (kConsumers and kTileM never fire: one consumer, 64 rows),
  // then:
  kCtasPerSm = sm90_attn::kRuleCount,  // ctas_per_sm must be 1 or 2
  kTwoCtaShared,                       // two CTAs' shared memory exceeds the SM's
  kTwoCtaRegisters,                    // the consumer's registers exceed its two-CTA budget
  kBlockSize,                          // 64 and tile_n must divide the layout's block size
};

// block_size 0: not known yet (the config alone); checked when it is.
ATTN_HOST_DEVICE constexpr int check(int head_dim, int tile_n, int stages, int ctas_per_sm,
                                     int block_size = 0) {
  // blocksparse.mma's head dims (the 64 and 128); 256 would fit one CTA per SM only.
  if (head_dim != 64 && head_dim != 128) return sm90_attn::kHeadDim;
  const int tiles = sm90_attn::check_tiles(head_dim, kTileM, tile_n, stages, kConsumers,
                                           shared_bytes(head_dim, tile_n, stages));
  if (tiles != kOk) return tiles;
  if (ctas_per_sm != 1 && ctas_per_sm != 2) return kCtasPerSm;
  if (ctas_per_sm * (shared_bytes(head_dim, tile_n, stages) + kReservedSharedPerCta) > kSharedPerSm)
    return kTwoCtaShared;
  if (sm90_attn::register_estimate(head_dim, tile_n) > consumer_registers(ctas_per_sm))
    return kTwoCtaRegisters;
  if (block_size != 0 && (block_size % kTileM != 0 || block_size % tile_n != 0)) return kBlockSize;
  return kOk;
}

}  // namespace blocksparse_sm90
}  // namespace attn
