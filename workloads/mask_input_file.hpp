// Reading the JSON files that masks are made from (block-sparse layouts, explicit masks): the bytes
// as the workload saw them, then the strict JSON reader, then a bounded list of problems, so that
// a malformed file of a million rows reports a screenful, not a million lines.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"

namespace attn {

// Mask files are larger than workload files: a dense layout or an explicit mask is a grid of
// characters. Larger inputs are refused before parsing.
inline constexpr size_t kMaxMaskFileBytes = size_t(256) << 20;

// Reads and parses `path` (the file's resolved path). When `expected_sha256` is not empty the
// bytes must hash to it: the workload's content hash named those bytes, and a file edited since
// would make the benchmark run a different mask than the one recorded. Throws InputError, with
// the path as source, when the file is unreadable, changed, too large or not JSON.
nlohmann::json read_mask_json_file(const std::string& path, const std::string& expected_sha256);

// Problems found in one input, each "<JSON pointer>: <rule>". Stops recording after `limit` and
// counts the rest, so that the message stays readable.
class ProblemList {
 public:
  explicit ProblemList(size_t limit = kMaxListedProblems) : limit_(limit) {}
  void add(std::string problem);
  bool empty() const { return recorded_.empty(); }
  // Throws InputError(source, problems) when there are any, its last line saying how many more
  // were found.
  void throw_if_any(const std::string& source) const;

 private:
  size_t limit_;
  size_t omitted_ = 0;
  std::vector<std::string> recorded_;
};

}  // namespace attn
