// --shard i/n: which configs one job of a job array takes. By default a config belongs to shard
// fnv1a64("<variant>|<config key>") mod n: the same on every machine and independent of the order
// or the overrides a space was built with, so the n shards cover every space exactly once. With a
// shard map (`--shard-map`, written by `attn-tune plan`: tuner/shard_map.hpp) a config the map
// lists belongs to the shard the map gives it, balanced by estimated cost; one it does not list
// still goes by the hash, so the cover stays exact.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tuner/shard_map.hpp"

namespace attn {

struct Shard {
  uint64_t index = 0, count = 1;
  std::shared_ptr<const ShardMap> map;  // the plan's assignment; none: the hash rule alone

  std::string label() const { return std::to_string(index) + "/" + std::to_string(count); }
  bool owns(const std::string& workload_hash, const std::string& variant,
            const std::string& config_key) const;
  // Whether the map lists the config (false without a map): a config it does not list is owned by
  // the hash rule.
  bool mapped(const std::string& workload_hash, const std::string& variant,
              const std::string& config_key) const;
};

// Parses "i/n" with 0 <= i < n; throws UsageError otherwise.
Shard parse_shard(const std::string& text);
// Adds the map read from `path` (InputError when it is malformed); throws UsageError when its
// number of shards is not the shard's n.
void use_shard_map(Shard& shard, const std::string& path);

uint64_t fnv1a64(const std::string& text);
// The shard of n that the hash rule gives a config: fnv1a64("<variant>|<config key>") mod n.
uint64_t hash_shard(const std::string& variant, const std::string& config_key, uint64_t n);

}  // namespace attn
