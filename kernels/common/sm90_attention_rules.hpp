// Host side of the tile rules of the FA3-style Hopper kernels (sm90_attention_traits.hpp): the
// reason a refused config gets, naming what to change. Shared by flash_fwd.sm90_wgmma and
// prefix_prefill.sm90_wgmma, whose own rules come after sm90_attention::kRuleCount.
#pragma once

#include <string>
#include <vector>

#include "base/kernel_config.hpp"
#include "kernels/common/sm90_attention_traits.hpp"

namespace attn {
namespace sm90_attention {

// The reason for `rule` (kHeadDim .. kRegisters); `shared_bytes` is the kernel's footprint for
// this config, `any_tile_n` and `max_consumers` what the kernel passed check_tiles, `registers`
// what setmaxnreg gives a consumer thread of this config, `v_head_dim` V's width (0: head_dim).
// Empty for kOk and for a kernel's own rules.
std::string describe_tile_rule(int rule, int head_dim, int tile_n, int consumers, int shared_bytes,
                               bool any_tile_n = false, int max_consumers = 2,
                               int registers = kConsumerRegisters, int v_head_dim = 0);

// The tunable axes of a kernel with this consumer and 1 to max_consumers consumer warpgroups:
// tile_m (what a row is: `rows_help`), tile_n (the widths a sweep tries), stages, consumers.
std::vector<ConfigAxis> tile_axes(const std::string& rows_help,
                                  std::vector<int64_t> tile_n = {64, 128}, int max_consumers = 2);

}  // namespace sm90_attention
}  // namespace attn
