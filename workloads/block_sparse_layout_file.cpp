// A block-sparse layout read from a JSON file (docs/masks.md, "Layout files"): for layouts that
// no parameter set describes, e.g. one exported from a trained sparse model. Two spellings of the
// same thing: CSR per head ("crow"/"col", what the kernels read) or dense rows of '0'/'1' (what a
// person writes by hand). Everything is checked before the layout is built, and every problem
// names its JSON pointer.
#include <algorithm>
#include <set>

#include "base/errors.hpp"
#include "workloads/block_sparse_layout.hpp"
#include "workloads/mask_input_file.hpp"
#include "workloads/strict_json.hpp"

namespace attn {

using nlohmann::json;

namespace {

constexpr int64_t kMaxLayoutBlockSize = int64_t(1) << 20;
constexpr int64_t kMaxLayoutHeads = 256;

std::string show(const json& value) {
  return value.is_number() ? json_type_name(value) + " " + value.dump() : json_type_name(value);
}

// nlohmann counts unsigned numbers as integers too; one above INT64_MAX reads back negative, so
// the range checks below refuse it.
bool is_int(const json& value) {
  return value.is_number_integer();
}

// A required integer member in [lo, hi]; records a problem and returns -1 otherwise.
int64_t integer_member(const json& doc, const char* key, int64_t lo, int64_t hi,
                       ProblemList& problems) {
  const std::string at = std::string("/") + key;
  if (!doc.contains(key)) {
    problems.add(at + ": missing (required)");
    return -1;
  }
  const json& value = doc.at(key);
  if (!is_int(value) || value.get<int64_t>() < lo || value.get<int64_t>() > hi) {
    problems.add(at + ": expected an integer in [" + std::to_string(lo) + ", " +
                 std::to_string(hi) + "], got " + show(value));
    return -1;
  }
  return value.get<int64_t>();
}

// An array of `count` elements at `at`, or a problem.
bool array_of(const json& value, const std::string& at, int64_t count, const char* what,
              ProblemList& problems) {
  if (!value.is_array()) {
    problems.add(at + ": expected an array of " + what + ", got " + show(value));
    return false;
  }
  if (int64_t(value.size()) != count) {
    problems.add(at + ": expected " + std::to_string(count) + " " + what + ", got " +
                 std::to_string(value.size()));
    return false;
  }
  return true;
}

struct LayoutHeader {
  int64_t block_size = 0;
  int64_t num_heads = 0;
  int64_t num_blocks = 0;
};

// Per-head rows as (crow, col) of one head, validated, appended to `crow_out` / `cols_out`.
void read_csr_head(const json& crow, const json& col, int64_t h, int64_t num_blocks,
                   std::vector<int32_t>& crow_out, std::vector<int32_t>& cols_out,
                   ProblemList& problems) {
  const std::string crow_at = "/crow/" + std::to_string(h);
  const std::string col_at = "/col/" + std::to_string(h);
  if (!array_of(crow, crow_at, num_blocks + 1, "offsets (num_blocks + 1)", problems)) return;
  std::vector<int64_t> offsets;
  bool offsets_ok = true;
  for (int64_t i = 0; i <= num_blocks; ++i) {
    const json& v = crow[size_t(i)];
    const std::string at = crow_at + "/" + std::to_string(i);
    if (!is_int(v) || v.get<int64_t>() < 0) {
      problems.add(at + ": expected a non-negative integer, got " + show(v));
      offsets_ok = false;
      continue;
    }
    const int64_t value = v.get<int64_t>();
    if (i == 0 && value != 0) {
      problems.add(at + ": the first offset must be 0, got " + std::to_string(value));
      offsets_ok = false;
    }
    if (!offsets.empty() && value < offsets.back()) {
      problems.add(at + ": offset " + std::to_string(value) + " is less than the previous one (" +
                   std::to_string(offsets.back()) + "); crow must not decrease");
      offsets_ok = false;
    }
    offsets.push_back(value);
  }
  if (!offsets_ok) return;
  if (!col.is_array()) {
    problems.add(col_at + ": expected an array of block columns, got " + show(col));
    return;
  }
  if (int64_t(col.size()) != offsets.back()) {
    problems.add(col_at + ": has " + std::to_string(col.size()) + " columns, but " + crow_at +
                 " ends at " + std::to_string(offsets.back()));
    return;
  }
  for (int64_t i = 0; i < num_blocks; ++i) {
    int64_t previous = -1;
    for (int64_t n = offsets[size_t(i)]; n < offsets[size_t(i) + 1]; ++n) {
      const json& v = col[size_t(n)];
      const std::string at = col_at + "/" + std::to_string(n);
      if (!is_int(v) || v.get<int64_t>() < 0 || v.get<int64_t>() >= num_blocks) {
        problems.add(at + ": expected a block column in [0, " + std::to_string(num_blocks) +
                     "), got " + show(v));
        continue;
      }
      const int64_t j = v.get<int64_t>();
      if (j > i) {
        problems.add(at + ": block column " + std::to_string(j) +
                     " is right of the diagonal of row " + std::to_string(i) +
                     " (layouts are lower-triangular: column <= row)");
      }
      if (j <= previous) {
        problems.add(at + ": block column " + std::to_string(j) + " does not follow " +
                     std::to_string(previous) + " in row " + std::to_string(i) +
                     " (columns must be strictly increasing within a row)");
      }
      previous = j;
      cols_out.push_back(int32_t(j));
    }
  }
  for (int64_t value : offsets) crow_out.push_back(int32_t(value));
}

// One head's dense rows: row i is a string of num_blocks characters, '1' = kept.
void read_dense_head(const json& rows, int64_t h, int64_t num_blocks,
                     std::vector<int32_t>& crow_out, std::vector<int32_t>& cols_out,
                     ProblemList& problems) {
  const std::string head_at = "/dense/" + std::to_string(h);
  if (!array_of(rows, head_at, num_blocks, "row strings (num_blocks)", problems)) return;
  const size_t head_base = cols_out.size();
  crow_out.push_back(0);
  for (int64_t i = 0; i < num_blocks; ++i) {
    const json& row = rows[size_t(i)];
    const std::string at = head_at + "/" + std::to_string(i);
    if (!row.is_string()) {
      problems.add(at + ": expected a string of '0' and '1', got " + show(row));
    } else {
      const std::string& text = row.get_ref<const std::string&>();
      if (int64_t(text.size()) != num_blocks) {
        problems.add(at + ": has " + std::to_string(text.size()) + " characters, expected " +
                     std::to_string(num_blocks) + " (num_blocks)");
      } else {
        for (int64_t j = 0; j < num_blocks; ++j) {
          const char c = text[size_t(j)];
          if (c != '0' && c != '1') {
            problems.add(at + ": character " + std::to_string(j) + " is not '0' or '1'");
            break;
          }
          if (c == '1' && j > i) {
            problems.add(at + ": block column " + std::to_string(j) +
                         " is right of the diagonal (layouts are lower-triangular: column <= "
                         "row)");
            break;
          }
          if (c == '1') cols_out.push_back(int32_t(j));
        }
      }
    }
    crow_out.push_back(int32_t(cols_out.size() - head_base));
  }
}

// The file's heads, read and checked against the workload; nothing of the workload's size built.
struct LayoutFileHeads {
  LayoutHeader header;
  std::vector<std::vector<int32_t>> crows, cols;  // [file heads]
  BlockSparseLayoutSize size;                     // of the layout built for num_q_heads heads
};

LayoutFileHeads read_layout_file_heads(const std::string& path, const std::string& expected_sha256,
                                       int num_q_heads, int64_t max_kv_len) {
  const json doc = read_mask_json_file(path, expected_sha256);
  ProblemList problems;
  static const std::set<std::string> kKnownKeys = {"block_size", "num_heads", "num_blocks",
                                                   "crow",       "col",       "dense"};
  for (const auto& item : doc.items()) {
    if (!kKnownKeys.count(item.key())) {
      problems.add("/" + json_pointer_token(item.key()) +
                   ": unknown key (expected block_size, num_heads, num_blocks, and crow + col or "
                   "dense)");
    }
  }
  LayoutHeader header;
  header.block_size = integer_member(doc, "block_size", 1, kMaxLayoutBlockSize, problems);
  header.num_heads = integer_member(doc, "num_heads", 1, kMaxLayoutHeads, problems);
  header.num_blocks = integer_member(doc, "num_blocks", 0, kMaxBlockSparseEntries, problems);
  const bool has_csr = doc.contains("crow") || doc.contains("col");
  const bool has_dense = doc.contains("dense");
  if (has_csr && has_dense) {
    problems.add("/dense: give either crow + col or dense, not both");
  } else if (!has_csr && !has_dense) {
    problems.add("(top level): missing the layout: crow + col, or dense");
  } else if (has_csr && !(doc.contains("crow") && doc.contains("col"))) {
    problems.add(doc.contains("crow") ? "/col: missing (required with crow)"
                                      : "/crow: missing (required with col)");
  }
  problems.throw_if_any(path);

  // The file against the workload it serves, before the per-block contents. A one-head file is
  // repeated for every q head: the layout built holds num_q_heads rows of offsets, whatever the
  // file declares, and that is what the limit bounds.
  if (header.num_heads != num_q_heads && header.num_heads != 1) {
    problems.add("/num_heads: the layout has " + std::to_string(header.num_heads) +
                 " heads, but the model has " + std::to_string(num_q_heads) +
                 " q heads (give one layout per q head, or 1 for all)");
  }
  if (header.num_blocks * header.block_size < max_kv_len) {
    problems.add("/num_blocks: " + std::to_string(header.num_blocks) + " blocks of " +
                 std::to_string(header.block_size) + " tokens cover " +
                 std::to_string(header.num_blocks * header.block_size) +
                 " tokens, but the longest sequence has " + std::to_string(max_kv_len));
  }
  const int64_t built_heads = std::max<int64_t>(header.num_heads, num_q_heads);
  if (built_heads * (header.num_blocks + 1) > kMaxBlockSparseEntries) {
    problems.add("/num_blocks: " + std::to_string(built_heads) + " q heads of " +
                 std::to_string(header.num_blocks) + " blocks exceed the limit of " +
                 std::to_string(kMaxBlockSparseEntries) + " layout entries");
  }
  problems.throw_if_any(path);

  const json* heads_csr_crow = has_csr ? &doc.at("crow") : nullptr;
  const json* heads_csr_col = has_csr ? &doc.at("col") : nullptr;
  const json* heads_dense = has_dense ? &doc.at("dense") : nullptr;
  bool shape_ok = true;
  if (has_csr) {
    shape_ok = array_of(*heads_csr_crow, "/crow", header.num_heads, "heads (num_heads)", problems);
    shape_ok = array_of(*heads_csr_col, "/col", header.num_heads, "heads (num_heads)", problems) &&
               shape_ok;
  } else {
    shape_ok = array_of(*heads_dense, "/dense", header.num_heads, "heads (num_heads)", problems);
  }
  problems.throw_if_any(path);

  // Heads are read one after another into per-head vectors (the file's heads, not the model's).
  LayoutFileHeads out;
  out.header = header;
  out.crows.resize(size_t(header.num_heads));
  out.cols.resize(size_t(header.num_heads));
  for (int64_t h = 0; h < header.num_heads && shape_ok; ++h) {
    if (has_csr) {
      read_csr_head((*heads_csr_crow)[size_t(h)], (*heads_csr_col)[size_t(h)], h, header.num_blocks,
                    out.crows[size_t(h)], out.cols[size_t(h)], problems);
    } else {
      read_dense_head((*heads_dense)[size_t(h)], h, header.num_blocks, out.crows[size_t(h)],
                      out.cols[size_t(h)], problems);
    }
  }
  problems.throw_if_any(path);

  size_t max_nnz = 0;
  for (const auto& c : out.cols) max_nnz = std::max(max_nnz, c.size());
  if (int64_t(max_nnz) * num_q_heads > kMaxBlockSparseEntries) {
    throw InputError(path, {"/col: " + std::to_string(max_nnz) + " kept blocks per head over " +
                            std::to_string(num_q_heads) + " q heads exceed the limit of " +
                            std::to_string(kMaxBlockSparseEntries) + " layout entries"});
  }
  out.size = {num_q_heads, header.num_blocks, int64_t(max_nnz)};
  return out;
}

}  // namespace

BlockSparseLayoutSize check_block_sparse_layout_file(const std::string& path,
                                                     const std::string& expected_sha256,
                                                     int num_q_heads, int64_t max_kv_len) {
  return read_layout_file_heads(path, expected_sha256, num_q_heads, max_kv_len).size;
}

BlockSparseLayout read_block_sparse_layout_file(const std::string& path,
                                                const std::string& expected_sha256, int num_q_heads,
                                                int64_t max_kv_len) {
  const LayoutFileHeads file =
      read_layout_file_heads(path, expected_sha256, num_q_heads, max_kv_len);

  // One head in the file: every q head uses it.
  BlockSparseLayout layout;
  layout.block_size = int(file.header.block_size);
  layout.num_heads = num_q_heads;
  layout.num_blocks = int(file.header.num_blocks);
  const size_t max_nnz = size_t(file.size.max_nnz);
  layout.max_nnz = int(max_nnz);
  layout.crow.reserve(size_t(num_q_heads) * size_t(file.header.num_blocks + 1));
  layout.col.assign(size_t(num_q_heads) * max_nnz, -1);
  for (int h = 0; h < num_q_heads; ++h) {
    const size_t source_head = file.header.num_heads == 1 ? 0 : size_t(h);
    const auto& c = file.crows[source_head];
    layout.crow.insert(layout.crow.end(), c.begin(), c.end());
    std::copy(file.cols[source_head].begin(), file.cols[source_head].end(),
              layout.col.begin() + ptrdiff_t(size_t(h) * max_nnz));
  }
  return layout;
}

}  // namespace attn
