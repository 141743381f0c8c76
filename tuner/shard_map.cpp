#include "tuner/shard_map.hpp"

#include <cstdio>
#include <sstream>

#include "base/bounded_file.hpp"
#include "base/errors.hpp"

namespace attn {

namespace {

// A map lists every config of a sweep: a million-config space is some 100 MB of text.
constexpr size_t kMaxShardMapBytes = size_t(256) << 20;

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    fields.push_back(
        line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

std::optional<uint64_t> parse_count(const std::string& text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoull(text);
}

std::optional<double> parse_seconds(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !(value >= 0) || value > 1e12) return std::nullopt;
  return value;
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", seconds);
  return text;
}

}  // namespace

ShardMap::ShardMap(uint64_t shards) : shards_(shards) {
  if (shards == 0) throw UsageError("a shard map needs at least one shard");
}

void ShardMap::add_workload(const std::string& workload_hash) {
  if (workloads_.insert(workload_hash).second) workload_order_.push_back(workload_hash);
}

void ShardMap::add(ShardMapEntry entry) {
  if (entry.shard >= shards_) {
    throw UsageError("shard " + std::to_string(entry.shard) + " of a map of " +
                     std::to_string(shards_) + " shards");
  }
  auto key = std::make_tuple(entry.workload_hash, entry.variant, entry.config_key);
  if (!index_.emplace(key, entries_.size()).second) {
    throw UsageError("the shard map lists " + entry.variant + " {" + entry.config_key +
                     "} of workload " + entry.workload_hash.substr(0, 12) + " twice");
  }
  add_workload(entry.workload_hash);
  entries_.push_back(std::move(entry));
}

std::optional<uint64_t> ShardMap::shard_of(const std::string& workload_hash,
                                           const std::string& variant,
                                           const std::string& config_key) const {
  const auto it = index_.find(std::make_tuple(workload_hash, variant, config_key));
  if (it == index_.end()) return std::nullopt;
  return entries_[it->second].shard;
}

bool ShardMap::lists_workload(const std::string& workload_hash) const {
  return workloads_.count(workload_hash) > 0;
}

std::vector<double> ShardMap::shard_seconds() const {
  std::vector<double> seconds(shards_, 0.0);
  for (const ShardMapEntry& e : entries_) seconds[e.shard] += e.estimated_seconds;
  return seconds;
}

std::string ShardMap::text(const std::string& comment) const {
  std::ostringstream out;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) out << "# " << line << "\n";
  out << "# workload hash\tvariant\tconfig\tshard\testimated seconds\n";
  out << "shards\t" << shards_ << "\n";
  for (const std::string& w : workload_order_) out << "workload\t" << w << "\n";
  for (const ShardMapEntry& e : entries_) {
    out << e.workload_hash << "\t" << e.variant << "\t" << e.config_key << "\t" << e.shard << "\t"
        << seconds_text(e.estimated_seconds) << "\n";
  }
  return out.str();
}

ShardMap ShardMap::parse(const std::string& text, const std::string& source) {
  std::vector<std::string> problems;
  std::optional<ShardMap> map;
  std::istringstream lines(text);
  size_t number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const std::string where = "line " + std::to_string(number) + ": ";
    const std::vector<std::string> fields = split_tabs(line);
    if (!map) {
      const std::optional<uint64_t> shards =
          fields.size() == 2 && fields[0] == "shards" ? parse_count(fields[1]) : std::nullopt;
      if (!shards || *shards == 0) {
        problems.push_back(where + "expected 'shards<TAB>N' (N at least 1) before any config");
        break;
      }
      map.emplace(*shards);
      continue;
    }
    if (fields.size() == 2 && fields[0] == "workload") {
      if (fields[1].empty()) {
        problems.push_back(where + "the workload hash must not be empty");
      } else {
        map->add_workload(fields[1]);
      }
      continue;
    }
    if (fields.size() != 5) {
      problems.push_back(where +
                         "expected 5 tab-separated fields (workload hash, variant, "
                         "config, shard, estimated seconds), found " +
                         std::to_string(fields.size()));
      continue;
    }
    const std::optional<uint64_t> shard = parse_count(fields[3]);
    const std::optional<double> seconds = parse_seconds(fields[4]);
    if (fields[0].empty() || fields[1].empty()) {
      problems.push_back(where + "the workload hash and the variant must not be empty");
    } else if (!shard || *shard >= map->shards()) {
      problems.push_back(where + "shard '" + fields[3] + "' is not a number below " +
                         std::to_string(map->shards()));
    } else if (!seconds) {
      problems.push_back(where + "estimated seconds '" + fields[4] +
                         "' is not a number of seconds");
    } else {
      try {
        map->add({fields[0], fields[1], fields[2], *shard, *seconds});
      } catch (const UsageError& e) {
        problems.push_back(where + e.what());
      }
    }
    if (problems.size() >= kMaxListedProblems) break;
  }
  if (!map && problems.empty()) problems.push_back("no 'shards<TAB>N' line: not a shard map");
  if (!problems.empty()) throw InputError(source, problems);
  return std::move(*map);
}

ShardMap ShardMap::read(const std::string& path) {
  BoundedReadFailure failure;
  const std::optional<std::string> text = read_bounded_file(path, kMaxShardMapBytes, failure);
  if (!text) throw InputError(path, {describe_failure(failure, kMaxShardMapBytes)});
  return parse(*text, path);
}

}  // namespace attn
