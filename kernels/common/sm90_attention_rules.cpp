#include "kernels/common/sm90_attention_rules.hpp"

#include "kernels/common/sm90_attention_traits.hpp"

namespace attn {
namespace sm90_attention {

std::string describe_tile_rule(int rule, int head_dim, int tile_n, int consumers, int shared_bytes,
                               bool any_tile_n, int max_consumers, int registers, int v_head_dim) {
  const int v = value_dim(head_dim, v_head_dim);
  switch (rule) {
    case kHeadDim:
      return "head_dim " + std::to_string(head_dim) +
             (v != head_dim ? " with V head dim " + std::to_string(v) : std::string()) +
             " is not one of 64, 80, 96, 128, 192 and 256 with V as wide, nor 192 with a V of 128";
    case kConsumers:
      return max_consumers == 2 ? "consumers must be 1 or 2 (consumer warpgroups)"
                                : "consumers must be 1 to " + std::to_string(max_consumers) +
                                      " (consumer warpgroups)";
    case kTileM:
      return "tile_m must be " + std::to_string(kConsumerRows * consumers) + " with " +
             std::to_string(consumers) + " consumer warpgroup(s) (64 query rows per warpgroup)";
    case kTileN:
      return any_tile_n ? "tile_n must be a multiple of 16 from 64 to 256"
                        : "tile_n must be 64 or 128";
    case kStages:
      return "stages must be 2, 3 or 4";
    case kSharedMemory:
      return "needs " + std::to_string(shared_bytes) + " bytes of shared memory (limit " +
             std::to_string(kMaxSharedBytes) + "): lower stages, tile_n or tile_m";
    case kRegisters:
      return "too many registers per consumer thread (estimate " +
             std::to_string(register_estimate(head_dim, tile_n, v)) + ", setmaxnreg " +
             std::to_string(registers) + "): lower tile_n" + (consumers > 2 ? " or consumers" : "");
    default:
      return "";
  }
}

std::vector<ConfigAxis> tile_axes(const std::string& rows_help, std::vector<int64_t> tile_n,
                                  int max_consumers) {
  std::vector<int64_t> tile_m, consumers;
  for (int c = 1; c <= max_consumers; ++c) {
    tile_m.push_back(kConsumerRows * c);
    consumers.push_back(c);
  }
  return {
      {"tile_m", std::move(tile_m), rows_help + " per CTA: 64 per consumer warpgroup"},
      {"tile_n", std::move(tile_n),
       "keys per pipeline stage (the wider only where registers allow)"},
      {"stages", {2, 3}, "TMA buffers of K and of V in flight"},
      {"consumers", std::move(consumers), "consumer warpgroups (tile_m / 64), beside one producer"},
  };
}

}  // namespace sm90_attention
}  // namespace attn
