// Family: the kernel families attn-bench knows, as an enum every module can name (the store's
// analysis reads a family from a variant's name without knowing the kernels).
#pragma once

#include <optional>
#include <string>

namespace attn {

enum class Family { paged_decode, prefix_prefill, blocksparse, flash_fwd, mla_decode };
std::string to_string(Family family);
// The family whose to_string is `text` ("paged_decode"); nullopt for any other text.
std::optional<Family> family_from_string(const std::string& text);

}  // namespace attn
