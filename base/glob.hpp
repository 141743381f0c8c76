// Shell-style glob matching of names (variant names, device names): '*' any run, '?' one character.
#pragma once

#include <string>

namespace attn {

bool glob_match(const std::string& pattern, const std::string& text);

}  // namespace attn
