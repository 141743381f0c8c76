// Support: a variant's answer to "can you run this?": yes, or no with a reason a user can act on.
#pragma once

#include <string>
#include <utility>

namespace attn {

struct Support {
  bool ok = true;
  std::string reason;
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
  explicit operator bool() const { return ok; }
};

}  // namespace attn
