// The shard map of a planned sweep (`attn-tune plan`, tuner/sweep_plan.hpp): which of the n shards
// of a job array evaluates each config of each workload and variant, and what the plan estimated
// it to cost. `attn-tune tune --shard i/n --shard-map FILE` takes the configs the map gives shard
// i. A config the map does not list (a space pruned differently on the machine that runs it than
// on the one that planned it) goes by the hash rule of `--shard` alone (tuner/shard.hpp), so the n
// shards still cover every space exactly once. The map is a file, so a task that is requeued reads
// the same assignment and takes the same configs.
//
// The file is text, tab-separated, one config a line after a header:
//   # attn-tune shard map: ...        (comment lines start with '#')
//   shards  4
//   workload  <workload hash>          (each workload planned, some of whose spaces may be empty)
//   <workload hash> <variant> <config key> <shard> <estimated seconds>
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace attn {

struct ShardMapEntry {
  std::string workload_hash, variant, config_key;
  uint64_t shard = 0;
  double estimated_seconds = 0;
};

class ShardMap {
 public:
  explicit ShardMap(uint64_t shards);

  uint64_t shards() const { return shards_; }
  // A workload the plan covers (its configs are added with add(); it may have none).
  void add_workload(const std::string& workload_hash);
  // Throws UsageError for a shard out of range or a config listed twice.
  void add(ShardMapEntry entry);
  const std::vector<ShardMapEntry>& entries() const { return entries_; }
  std::optional<uint64_t> shard_of(const std::string& workload_hash, const std::string& variant,
                                   const std::string& config_key) const;
  // Whether the plan covered the workload (a map planned for other workloads did not).
  bool lists_workload(const std::string& workload_hash) const;
  // The estimated seconds of each shard, summed over its entries.
  std::vector<double> shard_seconds() const;

  // The file's text, `comment` as its first lines (each prefixed with "# ").
  std::string text(const std::string& comment) const;
  // Parses the file's text; throws InputError naming `source` and each bad line.
  static ShardMap parse(const std::string& text, const std::string& source);
  // Reads and parses a file (InputError when it cannot be read or is malformed).
  static ShardMap read(const std::string& path);

 private:
  uint64_t shards_ = 1;
  std::vector<ShardMapEntry> entries_;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> index_;
  std::vector<std::string> workload_order_;
  std::set<std::string> workloads_;
};

}  // namespace attn
