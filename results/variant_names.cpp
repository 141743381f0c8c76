#include "results/variant_names.hpp"

namespace attn {

bool is_peer_variant(const std::string& variant) {
  return variant.rfind(kPeerPrefix, 0) == 0;
}

}  // namespace attn
