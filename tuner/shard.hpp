// --shard i/n: which configs one job of a job array takes. A config belongs to shard
// fnv1a64("<variant>|<config key>") mod n: the same on every machine and independent of the order
// or the overrides a space was built with, so the n shards cover every space exactly once.
#pragma once

#include <cstdint>
#include <string>

namespace attn {

struct Shard {
  uint64_t index = 0, count = 1;
  std::string label() const { return std::to_string(index) + "/" + std::to_string(count); }
  bool owns(const std::string& variant, const std::string& config_key) const;
};

// Parses "i/n" with 0 <= i < n; throws UsageError otherwise.
Shard parse_shard(const std::string& text);

uint64_t fnv1a64(const std::string& text);

}  // namespace attn
