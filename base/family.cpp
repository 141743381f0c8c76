#include "base/family.hpp"

namespace attn {

std::string to_string(Family family) {
  switch (family) {
    case Family::paged_decode:
      return "paged_decode";
    case Family::prefix_prefill:
      return "prefix_prefill";
    case Family::blocksparse:
      return "blocksparse";
    case Family::flash_fwd:
      return "flash_fwd";
    case Family::mla_decode:
      return "mla_decode";
  }
  return "?";
}

std::optional<Family> family_from_string(const std::string& text) {
  for (Family f : {Family::paged_decode, Family::prefix_prefill, Family::blocksparse,
                   Family::flash_fwd, Family::mla_decode}) {
    if (to_string(f) == text) return f;
  }
  return std::nullopt;
}

}  // namespace attn
