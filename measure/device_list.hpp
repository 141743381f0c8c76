// `attn-tune tune --devices 0,1,...`: the GPUs to run one evaluation worker each on.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace attn {

// "0,1,3" -> {0, 1, 3}. Throws UsageError naming the problem for an empty list or entry, an entry
// that is not a non-negative integer, a device listed twice, or (when `present`, the number of
// GPUs on this machine, is known) one this machine does not have.
std::vector<int> parse_device_list(const std::string& text, std::optional<size_t> present);

}  // namespace attn
