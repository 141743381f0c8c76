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

uint64_t hash_shard(const std::string& variant, const std::string& config_key, uint64_t n) {
  return fnv1a64(variant + "|" + config_key) % n;
}

bool Shard::owns(const std::string& workload_hash, const std::string& variant,
                 const std::string& config_key) const {
  if (count <= 1) return true;
  if (map) {
    if (const std::optional<uint64_t> s = map->shard_of(workload_hash, variant, config_key))
      return *s == index;
  }
  return hash_shard(variant, config_key, count) == index;
}

bool Shard::mapped(const std::string& workload_hash, const std::string& variant,
                   const std::string& config_key) const {
  return map && map->shard_of(workload_hash, variant, config_key).has_value();
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

void use_shard_map(Shard& shard, const std::string& path) {
  auto map = std::make_shared<const ShardMap>(ShardMap::read(path));
  if (map->shards() != shard.count) {
    throw UsageError("--shard-map " + path + " splits the sweep into " +
                     std::to_string(map->shards()) + " shards, but --shard " + shard.label() +
                     " asks for shard " + std::to_string(shard.index) + " of " +
                     std::to_string(shard.count));
  }
  shard.map = std::move(map);
}

}  // namespace attn
