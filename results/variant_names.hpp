// What a stored variant name says: whether it is one of our kernels or a peer library's, and (for
// names written by older versions) the name it goes by today.
#pragma once

#include <string>

namespace attn {

inline constexpr const char* kPeerPrefix = "peer.";

// True for a variant name of a peer ("peer.torch.sdpa_flash"): not one of our kernels.
bool is_peer_variant(const std::string& variant);

// True for a peer a user's Python module declares ("peer.user.<module>.<name>", --peer-module):
// the user's own kernel, whose best configs export like ours; other libraries' peers are never
// exported into a dispatch table.
bool is_user_module_peer(const std::string& variant);

}  // namespace attn
