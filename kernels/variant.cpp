#include "kernels/variant.hpp"

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
  }
  return "?";
}

}  // namespace attn
