#include "results/variant_names.hpp"

namespace attn {

bool is_peer_variant(const std::string& variant) {
  return variant.rfind(kPeerPrefix, 0) == 0;
}

bool is_user_module_peer(const std::string& variant) {
  return variant.rfind(std::string(kPeerPrefix) + "user.", 0) == 0;
}

}  // namespace attn
