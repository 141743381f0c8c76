#include "tuner/shard.hpp"

#include "base/errors.hpp"

namespace attn {

uint64_t fnv1a64(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

bool Shard::owns(const std::string& variant, const std::string& config_key) const {
  return count <= 1 || fnv1a64(variant + "|" + config_key) % count == index;
}

Shard parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  auto number = [&](const std::string& part, uint64_t& out) {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
        part.size() > 9) {
      return false;
    }
    out = std::stoull(part);
    return true;
  };
  Shard s;
  if (slash == std::string::npos || !number(text.substr(0, slash), s.index) ||
      !number(text.substr(slash + 1), s.count) || s.count == 0 || s.index >= s.count) {
    throw UsageError("--shard '" + text + "': expected i/n with 0 <= i < n, e.g. 0/4");
  }
  return s;
}

}  // namespace attn
