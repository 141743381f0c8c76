#include "workloads/workload_spec.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "base/errors.hpp"
#include "base/sha256.hpp"
#include "workloads/strict_json.hpp"
#include "workloads/workload_validation.hpp"

namespace attn {

using nlohmann::json;

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int kHeadDims[] = {64, 80, 96, 128, 192, 256};

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t out;
  return __builtin_add_overflow(a, b, &out) ? kInt64Max : out;
}

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t out;
  return __builtin_mul_overflow(a, b, &out) ? kInt64Max : out;
}

std::string format_count(int64_t value) {
  return value == kInt64Max ? "at least " + std::to_string(value) : std::to_string(value);
}

// Levenshtein distance, for "did you mean" suggestions.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A value quoted for a message: short, on one line.
std::string show(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  constexpr size_t kMaxLength = 60;
  if (text.size() > kMaxLength) {
    size_t cut = kMaxLength;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "...";
  }
  return text;
}

// Decodes UTF-8 (already validated by the JSON parser; a stray byte counts as one character).
std::vector<uint32_t> code_points(const std::string& text) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    uint32_t cp = extra == 0 ? c : c & (0x3F >> extra);
    size_t j = 1;
    for (; j <= size_t(extra) && i + j < text.size(); ++j) {
      cp = (cp << 6) | (static_cast<unsigned char>(text[i + j]) & 0x3F);
    }
    out.push_back(cp);
    i += j;
  }
  return out;
}

// Strings from the JSON parser are valid UTF-8 already; a spec built in code may not be, and
// nlohmann refuses to write such a string into the canonical form. Its own check decides.
bool valid_utf8(const std::string& text) {
  try {
    json(text).dump();
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

bool is_control(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
}

std::string hex_code_point(uint32_t cp) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "U+%04X", unsigned(cp));
  return buffer;
}

// Reads a WorkloadSpec out of a JSON document, collecting every problem instead of stopping at
// the first. Each check reads one field; a field that is missing or wrong leaves its default in
// the spec and marks its section invalid, so the whole-batch limits are only computed from
// fields that passed.
class SpecReader {
 public:
  std::vector<std::string> problems;

  WorkloadSpec read(const json& root) {
    WorkloadSpec spec;
    if (!root.is_object()) {
      problems.push_back("(top level): expected an object, got " + json_type_name(root));
      return spec;
    }
    // A newer schema may mean anything; listing its keys as unknown would only be noise.
    if (!read_schema_version(root, spec)) return spec;
    check_keys(root, "",
               {"schema_version", "name", "description", "model", "kv_cache", "sequences", "seed"});
    read_name(root, spec);
    read_description(root, spec);
    bool model_ok = read_model(root, spec.model);
    bool kv_ok = read_kv_cache(root, spec.kv_cache);
    bool sequences_ok = read_sequences(root, spec.sequences);
    read_seed(root, spec);
    if (sequences_ok) check_limits(spec, model_ok, kv_ok);
    return spec;
  }

 private:
  void add(const std::string& pointer, const std::string& message) {
    problems.push_back(pointer + ": " + message);
  }

  void check_keys(const json& object, const std::string& pointer,
                  const std::vector<std::string>& allowed) {
    std::vector<std::string> sorted = allowed;
    std::sort(sorted.begin(), sorted.end());
    std::string expected;
    for (const auto& key : sorted) expected += (expected.empty() ? "" : ", ") + key;
    for (const auto& item : object.items()) {
      const std::string& key = item.key();
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string message = "unknown key (expected one of: " + expected + ")";
      std::string best;
      size_t best_distance = 3;  // suggest only close spellings
      for (const auto& candidate : sorted) {
        size_t distance = edit_distance(key, candidate);
        if (distance < best_distance) {
          best_distance = distance;
          best = candidate;
        }
      }
      if (!best.empty()) message += "; did you mean \"" + best + "\"?";
      add(pointer + "/" + json_pointer_token(key), message);
    }
  }

  // The member `key` of `object`, or nullptr (reported when required).
  const json* member(const json& object, const std::string& pointer, const char* key,
                     bool required) {
    auto it = object.find(key);
    if (it == object.end()) {
      if (required) add(pointer + "/" + key, "missing required key");
      return nullptr;
    }
    return &*it;
  }

  // An integer field in [lo, hi]. Returns nullopt when missing or wrong (reported unless it is
  // an optional key that is absent; `ok` is cleared when something was reported).
  std::optional<int64_t> integer(const json& object, const std::string& pointer, const char* key,
                                 bool required, int64_t lo, int64_t hi, bool& ok) {
    const json* value = member(object, pointer, key, required);
    if (value == nullptr) {
      if (required) ok = false;
      return std::nullopt;
    }
    std::string where = pointer + "/" + key;
    std::string range = lo == hi ? "must be " + std::to_string(lo)
                        : hi == kInt64Max
                            ? "must be >= " + std::to_string(lo)
                            : "must be in " + std::to_string(lo) + ".." + std::to_string(hi);
    if (value->is_number_unsigned()) {
      uint64_t v = value->get<uint64_t>();
      if (v > uint64_t(hi) || int64_t(v) < lo) {
        add(where, range + ", got " + std::to_string(v));
        ok = false;
        return std::nullopt;
      }
      return int64_t(v);
    }
    if (value->is_number_integer()) {
      int64_t v = value->get<int64_t>();
      if (v < lo || v > hi) {
        add(where, range + ", got " + std::to_string(v));
        ok = false;
        return std::nullopt;
      }
      return v;
    }
    add(where, "expected an integer, got " + describe_wrong_type(*value));
    ok = false;
    return std::nullopt;
  }

  static std::string describe_wrong_type(const json& value) {
    // Numbers show their value: "got number 1.5" says more than "got number".
    if (value.is_number()) return json_type_name(value) + " " + show(value);
    return json_type_name(value);
  }

  // The member `key` if it is present and of the JSON type `is` tests for (`kind` names it in the
  // message); null otherwise, with `ok` cleared when it was required or has the wrong type.
  const json* typed_member(const json& object, const std::string& pointer, const char* key,
                           bool required, bool& ok, bool (json::*is)() const noexcept,
                           const char* kind) {
    const json* value = member(object, pointer, key, required);
    if (value == nullptr) {
      if (required) ok = false;
      return nullptr;
    }
    if (!(value->*is)()) {
      add(pointer + "/" + key,
          std::string("expected ") + kind + ", got " + describe_wrong_type(*value));
      ok = false;
      return nullptr;
    }
    return value;
  }

  const json* object_member(const json& object, const std::string& pointer, const char* key,
                            bool required, bool& ok) {
    return typed_member(object, pointer, key, required, ok, &json::is_object, "an object");
  }

  const std::string* string_member(const json& object, const std::string& pointer, const char* key,
                                   bool required, bool& ok) {
    const json* value =
        typed_member(object, pointer, key, required, ok, &json::is_string, "a string");
    return value ? value->get_ptr<const std::string*>() : nullptr;
  }

  bool read_schema_version(const json& root, WorkloadSpec& spec) {
    bool ok = true;
    const json* value = member(root, "", "schema_version", true);
    if (value == nullptr) return true;
    if (value->is_number_unsigned() && value->get<uint64_t>() > uint64_t(kWorkloadSchemaVersion)) {
      add("/schema_version", "this file needs a newer attn-bench: it has schema_version " +
                                 show(*value) + ", and this build reads schema_version " +
                                 std::to_string(kWorkloadSchemaVersion));
      return false;
    }
    auto version = integer(root, "", "schema_version", true, 1, kWorkloadSchemaVersion, ok);
    if (version) spec.schema_version = int(*version);
    return true;
  }

  void read_name(const json& root, WorkloadSpec& spec) {
    bool ok = true;
    const std::string* name = string_member(root, "", "name", true, ok);
    if (name == nullptr) return;
    check_text(*name, "/name", 1, kMaxNameChars, /*allow_control=*/false);
    spec.name = *name;
  }

  void read_description(const json& root, WorkloadSpec& spec) {
    bool ok = true;
    const std::string* description = string_member(root, "", "description", false, ok);
    if (description == nullptr) return;
    check_text(*description, "/description", 0, kMaxDescriptionChars, /*allow_control=*/true);
    spec.description = *description;
  }

  void check_text(const std::string& text, const std::string& pointer, size_t min_chars,
                  size_t max_chars, bool allow_control) {
    if (!valid_utf8(text)) {
      add(pointer, "is not valid UTF-8");
      return;
    }
    std::vector<uint32_t> cps = code_points(text);
    if (cps.size() < min_chars) {
      add(pointer, "must not be empty");
    } else if (cps.size() > max_chars) {
      add(pointer, "is " + std::to_string(cps.size()) + " characters long; the limit is " +
                       std::to_string(max_chars));
    }
    if (allow_control) return;
    for (size_t i = 0; i < cps.size(); ++i) {
      if (is_control(cps[i])) {
        add(pointer, "must not contain control characters (found " + hex_code_point(cps[i]) +
                         " at character " + std::to_string(i + 1) + ")");
        return;
      }
    }
  }

  bool read_model(const json& root, ModelShape& model) {
    bool ok = true;
    const json* object = object_member(root, "", "model", true, ok);
    if (object == nullptr) return false;
    const std::string p = "/model";
    check_keys(*object, p, {"num_q_heads", "num_kv_heads", "head_dim", "dtype", "softmax_scale"});

    auto q_heads = integer(*object, p, "num_q_heads", true, 1, kMaxQueryHeads, ok);
    if (q_heads) model.num_q_heads = int(*q_heads);
    auto kv_heads = integer(*object, p, "num_kv_heads", true, 1, kMaxQueryHeads, ok);
    if (kv_heads) {
      model.num_kv_heads = int(*kv_heads);
      if (q_heads && *q_heads % *kv_heads != 0) {
        add(p + "/num_kv_heads", "must divide num_q_heads (" + std::to_string(*q_heads) +
                                     "), got " + std::to_string(*kv_heads));
        ok = false;
      }
    }

    if (const json* value = member(*object, p, "head_dim", true)) {
      std::string allowed;
      for (int d : kHeadDims) allowed += (allowed.empty() ? "" : ", ") + std::to_string(d);
      bool valid = value->is_number_integer() &&
                   std::find(std::begin(kHeadDims), std::end(kHeadDims), value->get<int64_t>()) !=
                       std::end(kHeadDims);
      if (valid) {
        model.head_dim = int(value->get<int64_t>());
      } else if (value->is_number_integer()) {
        add(p + "/head_dim", "must be one of " + allowed + ", got " + show(*value));
        ok = false;
      } else {
        add(p + "/head_dim", "expected an integer, got " + describe_wrong_type(*value));
        ok = false;
      }
    } else {
      ok = false;
    }

    if (const std::string* dtype = string_member(*object, p, "dtype", true, ok)) {
      auto parsed = dtype_from_string(*dtype);
      if (parsed && (*parsed == DType::bf16 || *parsed == DType::fp16)) {
        model.dtype = *parsed;
      } else {
        add(p + "/dtype", "must be one of \"bf16\", \"fp16\", got " + show(json(*dtype)));
        ok = false;
      }
    }

    if (const json* value = member(*object, p, "softmax_scale", false)) {
      if (!value->is_number()) {
        add(p + "/softmax_scale", "expected a number, got " + describe_wrong_type(*value));
        ok = false;
      } else {
        double scale = value->get<double>();
        if (!std::isfinite(scale) || !(scale > 0.0)) {
          add(p + "/softmax_scale", "must be a finite number > 0, got " + show(*value));
          ok = false;
        } else {
          model.softmax_scale = scale;
        }
      }
    }
    return ok;
  }

  template <typename Enum>
  void enum_member(const json& object, const std::string& pointer, const char* key,
                   std::optional<Enum> (*from_string)(const std::string&), const char* allowed_text,
                   Enum& out, bool& ok) {
    const std::string* text = string_member(object, pointer, key, false, ok);
    if (text == nullptr) return;
    if (auto parsed = from_string(*text)) {
      out = *parsed;
    } else {
      add(pointer + "/" + key,
          std::string("must be one of ") + allowed_text + ", got " + show(json(*text)));
      ok = false;
    }
  }

  bool read_kv_cache(const json& root, KvCacheSpec& kv) {
    bool ok = true;
    const json* object = object_member(root, "", "kv_cache", false, ok);
    if (object == nullptr) return ok;
    const std::string p = "/kv_cache";
    check_keys(*object, p, {"page_size", "layout", "allocation"});
    auto page_size = integer(*object, p, "page_size", false, 1, kMaxPageSize, ok);
    if (page_size) kv.page_size = int(*page_size);
    enum_member<KvLayout>(*object, p, "layout", kv_layout_from_string, "\"NHD\", \"HND\"",
                          kv.layout, ok);
    enum_member<PageAllocation>(*object, p, "allocation", page_allocation_from_string,
                                "\"sequential\", \"shuffled\"", kv.allocation, ok);
    return ok;
  }

  bool read_sequences(const json& root, std::vector<SequenceSpec>& sequences) {
    const json* array = member(root, "", "sequences", true);
    if (array == nullptr) return false;
    if (!array->is_array()) {
      add("/sequences", "expected an array, got " + describe_wrong_type(*array));
      return false;
    }
    if (array->empty()) {
      add("/sequences", "must not be empty");
      return false;
    }
    if (array->size() > kMaxSequenceEntries) {
      add("/sequences", "has " + std::to_string(array->size()) + " entries; the limit is " +
                            std::to_string(kMaxSequenceEntries) + " (an entry's count repeats it)");
      return false;
    }
    bool ok = true;
    sequences.clear();
    for (size_t i = 0; i < array->size(); ++i) {
      const json& entry = (*array)[i];
      const std::string p = "/sequences/" + std::to_string(i);
      if (!entry.is_object()) {
        add(p, "expected an object, got " + describe_wrong_type(entry));
        ok = false;
        continue;
      }
      check_keys(entry, p, {"context_len", "query_len", "count"});
      SequenceSpec seq;
      if (auto v = integer(entry, p, "context_len", true, 0, kInt64Max, ok)) seq.context_len = LengthSpec(*v);
      if (auto v = integer(entry, p, "query_len", false, 1, kInt64Max, ok)) seq.query_len = LengthSpec(*v);
      if (auto v = integer(entry, p, "count", false, 1, kMaxSequenceCount, ok)) seq.count = int(*v);
      sequences.push_back(seq);
    }
    return ok;
  }

  void read_seed(const json& root, WorkloadSpec& spec) {
    const json* value = member(root, "", "seed", false);
    if (value == nullptr) return;
    if (value->is_number_unsigned()) {
      spec.seed = value->get<uint64_t>();
    } else if (value->is_number_integer() && value->get<int64_t>() >= 0) {
      spec.seed = uint64_t(value->get<int64_t>());
    } else {
      add("/seed", "expected an unsigned integer, got " + describe_wrong_type(*value));
    }
  }

  void check_limits(const WorkloadSpec& spec, bool model_ok, bool kv_ok) {
    WorkloadSpec sized = spec;  // with defaults where the model or cache were invalid
    if (!kv_ok) sized.kv_cache = KvCacheSpec{};
    WorkloadTotals t = workload_totals(sized);
    const std::string p = "/sequences";
    auto over = [&](const std::string& what, int64_t value, const std::string& limit) {
      add(p, what + " is " + format_count(value) + "; the limit is " + limit);
    };
    if (t.num_seqs > kMaxSequences) {
      over("the number of sequences (sum of count)", t.num_seqs,
           std::to_string(kMaxSequences) + " (2^20)");
    }
    if (t.total_kv >= kTokenLimit) {
      over("the total of kv tokens (sum of count * (context_len + query_len))", t.total_kv,
           "< 2^31 (" + std::to_string(kTokenLimit) + ")");
    }
    if (t.total_q >= kTokenLimit) {
      over("the total of query tokens (sum of count * query_len)", t.total_q,
           "< 2^31 (" + std::to_string(kTokenLimit) + ")");
    }
    if (!kv_ok) return;
    if (t.num_pages >= kPageLimit) {
      over("the number of pages (sum of count * ceil(kv_len / page_size), plus the poison page)",
           t.num_pages, "< 2^31 (" + std::to_string(kPageLimit) + ")");
    }
    if (t.block_table_entries >= kBlockTableLimit) {
      over("the padded block table (sequences * max pages per sequence = " +
               format_count(t.num_seqs) + " * " + format_count(t.max_pages_per_seq) + ")",
           t.block_table_entries, "< 2^31 (" + std::to_string(kBlockTableLimit) + ") entries");
    }
    if (!model_ok) return;
    const size_t dsize = size_of(spec.model.dtype);
    if (t.kv_pool_bytes > kMaxKvPoolBytes) {
      over("the K+V pool size in bytes (2 * " + format_count(t.num_pages) + " pages * " +
               std::to_string(sized.kv_cache.page_size) + " tokens * " +
               std::to_string(spec.model.num_kv_heads) + " kv heads * " +
               std::to_string(spec.model.head_dim) + " dims * " + std::to_string(dsize) + " bytes)",
           t.kv_pool_bytes, "64 GiB (" + std::to_string(kMaxKvPoolBytes) + ")");
    }
    if (t.query_bytes > kMaxQueryBytes) {
      over("the Q size in bytes (" + format_count(t.total_q) + " tokens * " +
               std::to_string(spec.model.num_q_heads) + " heads * " +
               std::to_string(spec.model.head_dim) + " dims * " + std::to_string(dsize) + " bytes)",
           t.query_bytes, "16 GiB (" + std::to_string(kMaxQueryBytes) + ")");
    }
  }
};

}  // namespace

std::vector<SequenceLengths> expand_sequences(const WorkloadSpec& spec) {
  std::vector<SequenceLengths> out;
  for (const SequenceSpec& seq : spec.sequences) {
    for (int c = 0; c < seq.count; ++c) out.push_back({seq.context_len.value, seq.query_len.value});
  }
  return out;
}

double WorkloadSpec::effective_softmax_scale() const {
  if (model.softmax_scale) return *model.softmax_scale;
  return 1.0 / std::sqrt(double(model.head_dim));
}

WorkloadTotals workload_totals(const WorkloadSpec& spec) {
  WorkloadTotals t;
  const int64_t page_size = std::max(1, spec.kv_cache.page_size);
  for (const SequenceSpec& seq : spec.sequences) {
    const int64_t count = seq.count;
    const int64_t kv_len = saturating_add(seq.context_len.value, seq.query_len.value);
    const int64_t pages = kv_len / page_size + (kv_len % page_size != 0 ? 1 : 0);
    t.num_seqs = saturating_add(t.num_seqs, count);
    t.total_kv = saturating_add(t.total_kv, saturating_mul(count, kv_len));
    t.total_q = saturating_add(t.total_q, saturating_mul(count, seq.query_len.value));
    t.used_pages = saturating_add(t.used_pages, saturating_mul(count, pages));
    t.max_pages_per_seq = std::max(t.max_pages_per_seq, pages);
  }
  t.num_pages = saturating_add(t.used_pages, 1);
  t.block_table_entries = saturating_mul(t.num_seqs, t.max_pages_per_seq);
  const int64_t dsize = int64_t(size_of(spec.model.dtype));
  const int64_t kv_row = saturating_mul(
      saturating_mul(int64_t(spec.model.num_kv_heads), int64_t(spec.model.head_dim)), dsize);
  t.kv_pool_bytes =
      saturating_mul(2, saturating_mul(saturating_mul(t.num_pages, page_size), kv_row));
  const int64_t q_row = saturating_mul(
      saturating_mul(int64_t(spec.model.num_q_heads), int64_t(spec.model.head_dim)), dsize);
  t.query_bytes = saturating_mul(t.total_q, q_row);
  return t;
}

std::vector<std::string> validate_workload(const WorkloadSpec& spec) {
  SpecReader reader;
  reader.read(to_json(spec));
  return reader.problems;
}

WorkloadSpec parse_workload(std::string_view text, const std::string& source,
                            const std::string& base_dir) {
  StrictJsonResult parsed = parse_strict_json(text);
  if (!parsed.complete) throw InputError(source, parsed.problems);
  SpecReader reader;
  WorkloadSpec spec = reader.read(parsed.value);
  std::vector<std::string> problems = std::move(parsed.problems);  // duplicate keys
  problems.insert(problems.end(), reader.problems.begin(), reader.problems.end());
  if (!problems.empty()) throw InputError(source, problems);
  return spec;
}

WorkloadSpec load_workload_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    int error = errno;
    throw InputError(path, {"cannot open the file: " + std::string(std::strerror(error))});
  }
  const size_t max_bytes = StrictJsonLimits{}.max_bytes;
  std::string text;
  char buffer[1 << 16];
  int read_error = 0;
  for (;;) {
    size_t n = std::fread(buffer, 1, sizeof buffer, file);
    text.append(buffer, n);
    if (text.size() > max_bytes) break;  // no need to read the rest of a huge file
    if (n < sizeof buffer) {
      if (std::ferror(file)) read_error = errno;
      break;
    }
  }
  std::fclose(file);
  if (read_error != 0) {
    throw InputError(path, {"cannot read the file: " + std::string(std::strerror(read_error))});
  }
  if (text.size() > max_bytes) {
    throw InputError(path, {"(top level): the file is larger than the limit of " +
                            std::to_string(max_bytes) + " bytes"});
  }
  return parse_workload(text, path);
}

json to_json(const WorkloadSpec& spec) {
  json model = json::object();
  model["num_q_heads"] = spec.model.num_q_heads;
  model["num_kv_heads"] = spec.model.num_kv_heads;
  model["head_dim"] = spec.model.head_dim;
  model["dtype"] = to_string(spec.model.dtype);
  if (spec.model.softmax_scale) model["softmax_scale"] = *spec.model.softmax_scale;

  json kv = json::object();
  kv["page_size"] = spec.kv_cache.page_size;
  kv["layout"] = to_string(spec.kv_cache.layout);
  kv["allocation"] = to_string(spec.kv_cache.allocation);

  json sequences = json::array();
  for (const SequenceSpec& seq : spec.sequences) {
    json entry = json::object();
    entry["context_len"] = seq.context_len.value;
    entry["query_len"] = seq.query_len.value;
    entry["count"] = seq.count;
    sequences.push_back(std::move(entry));
  }

  json out = json::object();
  out["schema_version"] = spec.schema_version;
  out["name"] = spec.name;
  out["description"] = spec.description;
  out["model"] = std::move(model);
  out["kv_cache"] = std::move(kv);
  out["sequences"] = std::move(sequences);
  out["seed"] = spec.seed;
  return out;
}

std::string canonical_json(const WorkloadSpec& spec) {
  return to_json(spec).dump();
}

std::string content_hash(const WorkloadSpec& spec) {
  return sha256_hex(canonical_json(spec));
}

}  // namespace attn
