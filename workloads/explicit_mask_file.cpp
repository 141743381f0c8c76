// An explicit mask read from a JSON file (docs/masks.md, "Explicit mask files"): rows of '0' and
// '1' per sequence, for masks no rule generates (a tree exported from a speculative decoder, a
// pattern from a paper). Shapes are checked against the batch's lengths before the grid is built.
#include <algorithm>
#include <functional>
#include <utility>

#include "base/errors.hpp"
#include "workloads/batch.hpp"
#include "workloads/explicit_mask.hpp"
#include "workloads/mask_input_file.hpp"
#include "workloads/strict_json.hpp"

namespace attn {

using nlohmann::json;

namespace {

std::string shape(int64_t rows, int64_t width) {
  return std::to_string(rows) + " rows of " + std::to_string(width) + " keys";
}

// Checks entry `e` (at `at`) against a (query_len, kv_len) grid; records problems.
void check_entry(const json& entry, const std::string& at, int64_t query_len, int64_t kv_len,
                 const std::string& whose, ProblemList& problems) {
  if (!entry.is_object()) {
    problems.add(at + ": expected an object {\"rows\": [...]}, got " + json_type_name(entry));
    return;
  }
  for (const auto& item : entry.items()) {
    if (item.key() != "rows") {
      problems.add(at + "/" + json_pointer_token(item.key()) + ": unknown key (expected rows)");
    }
  }
  if (!entry.contains("rows")) {
    problems.add(at + "/rows: missing (required)");
    return;
  }
  const json& rows = entry.at("rows");
  if (!rows.is_array()) {
    problems.add(at + "/rows: expected an array of strings, got " + json_type_name(rows));
    return;
  }
  if (int64_t(rows.size()) != query_len) {
    problems.add(at + "/rows: has " + std::to_string(rows.size()) + " rows, but " + whose +
                 " has query_len " + std::to_string(query_len) + " (one row per new token)");
    return;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string row_at = at + "/rows/" + std::to_string(i);
    if (!rows[i].is_string()) {
      problems.add(row_at + ": expected a string of '0' and '1', got " + json_type_name(rows[i]));
      continue;
    }
    const std::string& text = rows[i].get_ref<const std::string&>();
    if (int64_t(text.size()) != kv_len) {
      problems.add(row_at + ": has " + std::to_string(text.size()) + " characters, but " + whose +
                   " has kv_len " + std::to_string(kv_len) + " (one character per key)");
      continue;
    }
    const size_t bad = text.find_first_not_of("01");
    if (bad != std::string::npos) {
      problems.add(row_at + ": character " + std::to_string(bad) + " is not '0' or '1'");
    }
  }
}

// (query_len, kv_len) of sequence s.
using ShapeOf = std::function<std::pair<int64_t, int64_t>(size_t)>;

// Reads the file and checks it against `num_seqs` sequences of the shapes `shape_of` gives; the
// parsed document, each entry's rows of the right shape.
json read_checked_mask_file(size_t num_seqs, const ShapeOf& shape_of, const std::string& path,
                            const std::string& expected_sha256) {
  json doc = read_mask_json_file(path, expected_sha256);

  ProblemList problems;
  for (const auto& item : doc.items()) {
    if (item.key() != "sequences") {
      problems.add("/" + json_pointer_token(item.key()) + ": unknown key (expected sequences)");
    }
  }
  if (!doc.contains("sequences")) problems.add("/sequences: missing (required)");
  problems.throw_if_any(path);
  const json& entries = doc.at("sequences");
  if (!entries.is_array() || (entries.size() != 1 && entries.size() != num_seqs)) {
    problems.add("/sequences: expected an array of " + std::to_string(num_seqs) +
                 " entries (one per sequence) or of 1 (for every sequence), got " +
                 (entries.is_array() ? std::to_string(entries.size()) + " entries"
                                     : json_type_name(entries)));
    problems.throw_if_any(path);
  }

  const bool shared = entries.size() == 1;
  if (shared && num_seqs > 0) {
    // One grid for every sequence: they must all have the first one's shape.
    const auto first = shape_of(0);
    for (size_t s = 1; s < num_seqs; ++s) {
      const auto other = shape_of(s);
      if (other != first) {
        problems.add("/sequences: a single entry serves every sequence, but sequence " +
                     std::to_string(s) + " has " + shape(other.first, other.second) +
                     " and sequence 0 " + shape(first.first, first.second) +
                     " (give one entry per sequence)");
        break;
      }
    }
    check_entry(entries[0], "/sequences/0", first.first, first.second,
                num_seqs == 1 ? "sequence 0" : "every sequence", problems);
  } else if (!shared) {
    for (size_t s = 0; s < num_seqs; ++s) {
      const auto [query_len, kv_len] = shape_of(s);
      check_entry(entries[s], "/sequences/" + std::to_string(s), query_len, kv_len,
                  "sequence " + std::to_string(s), problems);
    }
  }
  problems.throw_if_any(path);
  return doc;
}

}  // namespace

void check_explicit_mask_file(const std::vector<SequenceLengths>& lengths, const std::string& path,
                              const std::string& expected_sha256) {
  read_checked_mask_file(
      lengths.size(),
      [&](size_t s) {
        return std::make_pair(lengths[s].query_len, lengths[s].context_len + lengths[s].query_len);
      },
      path, expected_sha256);
}

ExplicitMask read_explicit_mask_file(const Batch& batch, const std::string& path,
                                     const std::string& expected_sha256) {
  ExplicitMask mask;
  mask.offsets = explicit_mask_offsets(batch);  // bounds the grid before the file is read
  const json doc = read_checked_mask_file(
      size_t(batch.num_seqs),
      [&](size_t s) { return std::make_pair(batch.query_lens[s], batch.kv_lens[s]); }, path,
      expected_sha256);
  const json& entries = doc.at("sequences");
  const bool shared = entries.size() == 1;
  mask.bits.resize(size_t(mask.offsets.back()));
  for (size_t s = 0; s < size_t(batch.num_seqs); ++s) {
    const json& rows = entries[shared ? 0 : s].at("rows");
    uint8_t* out = mask.bits.data() + mask.offsets[s];
    for (const json& row : rows) {
      for (char c : row.get_ref<const std::string&>()) *out++ = uint8_t(c == '1');
    }
  }
  return mask;
}

}  // namespace attn
