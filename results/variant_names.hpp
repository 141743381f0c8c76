// What a stored variant name says: whether it is one of our kernels or a peer library's, and (for
// names written by older versions) the name it goes by today.
#pragma once

#include <string>

namespace attn {

inline constexpr const char* kPeerPrefix = "peer.";

// True for a variant name of a peer ("peer.torch.sdpa_flash"): not one of our kernels, so never
// exported into a dispatch table.
bool is_peer_variant(const std::string& variant);

}  // namespace attn
