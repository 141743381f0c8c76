#include "results/export_render.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <sstream>

#include "base/errors.hpp"
#include "results/device_json.hpp"

namespace attn {

namespace {

// ordered_json keeps keys in the order written: format and tool first, as a reader expects.
using json = nlohmann::ordered_json;

std::string dtypes_text(const std::string& dtype, const std::string& kv_dtype) {
  return dtype == kv_dtype ? dtype : dtype + " (KV " + kv_dtype + ")";
}

std::string class_text(const BucketKey& k) {
  return "gqa " + std::to_string(k.gqa_ratio) + ", head_dim " + std::to_string(k.head_dim) + ", " +
         dtypes_text(k.dtype, k.kv_dtype) + ", page " + std::to_string(k.page_size);
}

std::string bucket_text(const BucketKey& k) {
  return k.family + ": batch " + to_string(batch_bucket_range(k.batch_bucket)) + ", context " +
         to_string(context_bucket_range(k.context_bucket)) + ", " + class_text(k);
}

json range_json(const BucketRange& r) {
  return json::array({r.lo, r.hi});
}

json bucket_json(const BucketKey& k) {
  return {{"family", k.family},
          {"batch_size", range_json(batch_bucket_range(k.batch_bucket))},
          {"context_len", range_json(context_bucket_range(k.context_bucket))},
          {"gqa_ratio", k.gqa_ratio},
          {"head_dim", k.head_dim},
          {"dtype", k.dtype},
          {"kv_dtype", k.kv_dtype},
          {"page_size", k.page_size}};
}

json shape_json(const WorkloadShape& s) {
  return {{"batch_size", s.batch_size},
          {"context_len", s.context_len},
          {"max_context_len", s.max_context_len},
          {"query_tokens", s.query_tokens},
          {"gqa_ratio", s.gqa_ratio},
          {"head_dim", s.head_dim},
          {"dtype", s.dtype},
          {"kv_dtype", s.kv_dtype},
          {"page_size", s.page_size}};
}

json optional_json(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

json case_json(const CaseTime& c) {
  return {{"variant", c.variant},
          {"config_key", c.config_key},
          {"median_us", c.median_us},
          {"p10_us", optional_json(c.p10_us)},
          {"p90_us", optional_json(c.p90_us)},
          {"policy", c.policy},
          {"sample_count", c.sample_count},
          {"unstable", c.unstable},
          {"measurement_id", c.measurement_id},
          {"measurement_uid", c.measurement_uid},
          {"run_id", c.run_id}};
}

json coverage_json(const FamilyCoverage& c) {
  json batch = json::array(), context = json::array(), dtypes = json::array();
  for (int b : c.batch_buckets) batch.push_back(range_json(batch_bucket_range(b)));
  for (int b : c.context_buckets) context.push_back(range_json(context_bucket_range(b)));
  for (const auto& [dtype, kv] : c.dtypes) dtypes.push_back({{"dtype", dtype}, {"kv_dtype", kv}});
  json missing = json::array();
  for (const CoverageCell& cell : c.cells) {
    if (cell.status == CellStatus::exported) continue;
    json m = bucket_json(cell.bucket);
    m["status"] = to_string(cell.status);
    if (cell.status == CellStatus::no_passed) m["workloads"] = cell.workloads;
    missing.push_back(std::move(m));
  }
  return {{"family", c.family},
          {"axes",
           {{"batch_size", batch},
            {"context_len", context},
            {"gqa_ratio", c.gqa_ratios},
            {"head_dim", c.head_dims},
            {"dtypes", dtypes},
            {"page_size", c.page_sizes}}},
          {"buckets", c.cells.size()},
          {"exported", c.count(CellStatus::exported)},
          {"no_passed", c.count(CellStatus::no_passed)},
          {"no_data", c.count(CellStatus::no_data)},
          {"missing", missing}};
}

// ------------------------------------------------------------------------------- C++ text

// A C++ string literal. Octal escapes (at most three digits) cannot swallow a following digit
// the way \x does; '?' is escaped so that no trigraph can form.
std::string lit(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\' || c == '?') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c == 0x7f) {
      char octal[8];
      std::snprintf(octal, sizeof octal, "\\%03o", unsigned(c));
      out += octal;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

// Text safe in a // comment: control characters become spaces, and a line never ends in a
// backslash (which would continue the comment onto the next line).
std::string comment(const std::string& text) {
  std::string out;
  for (unsigned char c : text) out += (c < 0x20 || c == 0x7f) ? ' ' : char(c);
  while (!out.empty() && (out.back() == ' ' || out.back() == '\\')) {
    if (out.back() == '\\') {
      out += " (end)";
      break;
    }
    out.pop_back();
  }
  return out;
}

std::string number(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  std::string out = text;
  // A literal that reads as a double in the source: 12 -> 12.0.
  if (out.find_first_of(".eE") == std::string::npos) out += ".0";
  return out;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100 * fraction);
  return text;
}

// The fixed part of the header: types and the selection logic. Written out as it is; only the
// namespace name and kMaxConfigValues vary.
const char* const kHeaderTypes = R"header(
// One query: the workload a kernel is about to run. See docs/export.md for each field.
struct Query {
  std::string_view family;   // "paged_decode", "prefix_prefill", ...
  std::int64_t batch_size;   // sequences in the batch
  std::int64_t context_len;  // cached tokens per sequence (before this step's new ones), mean
                             // rounded up: a decode step over 4096 cached tokens is 4096
  int gqa_ratio;             // query heads per KV head
  int head_dim;
  std::string_view dtype;     // "bf16", "fp16", ...: Q and output
  std::string_view kv_dtype;  // the K/V cache's dtype; empty: the same as dtype
  int page_size;              // tokens per KV page
};

struct ConfigValue {
  std::string_view axis;
  std::int64_t value;
};

// The choice for one bucket, and the workloads it was judged on (measured[first_measured ..
// first_measured + measured_count) of the device).
struct Entry {
  // The bucket: batch size and context length in [min, max], the rest exact.
  std::string_view family;
  std::int64_t batch_min, batch_max;
  std::int64_t context_min, context_max;
  int gqa_ratio;
  int head_dim;
  std::string_view dtype, kv_dtype;
  int page_size;
  // The choice.
  std::string_view variant;
  std::string_view config_key;
  std::array<ConfigValue, kMaxConfigValues> config;
  std::size_t config_count;
  // How good it is: chosen time / best time - 1 over the bucket's workloads it was measured on.
  double max_regret, mean_regret;
  int workloads;          // workloads measured in the bucket
  int covered_workloads;  // of those, measured with this config (fewer only when partial)
  bool partial;           // no config was measured on every workload of the bucket
  std::size_t first_measured, measured_count;

  constexpr const ConfigValue* find(std::string_view axis) const {
    for (std::size_t i = 0; i < config_count; ++i) {
      if (config[i].axis == axis) return &config[i];
    }
    return nullptr;
  }
};

// A workload of a bucket, with provenance: where the chosen config's time and the workload's own
// best time come from.
struct Measured {
  std::string_view workload, workload_hash;
  std::int64_t batch_size, context_len;  // the workload's own values
  bool chosen_measured;                  // false: the entry's config was not measured here
  double chosen_median_us;  // the entry's config on this workload (0 if not measured)
  double slowdown;          // chosen_median_us / best_median_us - 1 (0 if not measured)
  std::int64_t chosen_run_id;
  std::string_view chosen_run_uid, chosen_measurement_uid;
  double best_median_us;  // the fastest (variant, config) measured on it
  std::string_view best_variant, best_config_key;
  std::int64_t best_run_id;
  std::string_view best_measurement_uid;
};

struct Device {
  std::string_view name, uuid, fingerprint;
  // The NVIDIA driver ("580.159.04"; empty: unknown), the CUDA version it supports ("13.0"), the
  // toolkit attn-bench was built with and NVRTC.
  std::string_view driver_version, cuda_driver_version, cuda_version, nvrtc_version;
  int sm_count;
  const Entry* entries;
  std::size_t entry_count;
  const Measured* measured;
  std::size_t measured_count;
};

namespace detail {

// Bucket of a batch size or context length: k holds 2^(k-1) + 1 .. 2^k, 0 holds 0 and 1.
constexpr int pow2_bucket(std::int64_t value) {
  int k = 0;
  for (std::int64_t p = 1; p < value && k < 62; p *= 2) ++k;
  return k;
}

constexpr int distance(int a, int b) {
  return a < b ? b - a : a - b;
}

constexpr bool same_class(const Entry& e, const Query& q) {
  const std::string_view kv = q.kv_dtype.empty() ? q.dtype : q.kv_dtype;
  return e.family == q.family && e.gqa_ratio == q.gqa_ratio && e.head_dim == q.head_dim &&
         e.dtype == q.dtype && e.kv_dtype == kv && e.page_size == q.page_size;
}

}  // namespace detail

// The entry whose bucket holds the query; nullptr when there is none.
constexpr const Entry* select_exact(const Device& device, const Query& q) {
  const int b = detail::pow2_bucket(q.batch_size), c = detail::pow2_bucket(q.context_len);
  for (std::size_t i = 0; i < device.entry_count; ++i) {
    const Entry& e = device.entries[i];
    if (detail::same_class(e, q) && detail::pow2_bucket(e.batch_max) == b &&
        detail::pow2_bucket(e.context_max) == c) {
      return &e;
    }
  }
  return nullptr;
}

// The entry whose bucket holds the query, else the nearest bucket of the same family, GQA ratio,
// head dim, dtypes and page size: fewest power-of-two steps of batch size plus context length,
// the larger bucket on a tie. nullptr when no entry has that family, GQA ratio, head dim, dtypes
// and page size (a config tuned for another of those may not even run).
constexpr const Entry* select(const Device& device, const Query& q) {
  const int b = detail::pow2_bucket(q.batch_size), c = detail::pow2_bucket(q.context_len);
  const Entry* nearest = nullptr;
  int nearest_distance = 0;
  for (std::size_t i = 0; i < device.entry_count; ++i) {
    const Entry& e = device.entries[i];
    if (!detail::same_class(e, q)) continue;
    const int d = detail::distance(detail::pow2_bucket(e.batch_max), b) +
                  detail::distance(detail::pow2_bucket(e.context_max), c);
    if (d == 0) return &e;
    const bool larger =
        nearest != nullptr &&
        (e.batch_max > nearest->batch_max ||
         (e.batch_max == nearest->batch_max && e.context_max > nearest->context_max));
    if (nearest == nullptr || d < nearest_distance || (d == nearest_distance && larger)) {
      nearest = &e;
      nearest_distance = d;
    }
  }
  return nearest;
}
)header";

const char* const kHeaderDeviceLookup = R"header(
// The device whose fingerprint or UUID is `key`; nullptr when no table is for it.
constexpr const Device* find_device(std::string_view key) {
  for (const Device& d : kDevices) {
    if (d.fingerprint == key || d.uuid == key) return &d;
  }
  return nullptr;
}

// select() on the table of the device whose fingerprint or UUID is `key`.
constexpr const Entry* select(std::string_view device_key, const Query& q) {
  const Device* d = find_device(device_key);
  return d == nullptr ? nullptr : select(*d, q);
}

constexpr const Entry* select_exact(std::string_view device_key, const Query& q) {
  const Device* d = find_device(device_key);
  return d == nullptr ? nullptr : select_exact(*d, q);
}
)header";

}  // namespace

std::string describe_export_device(const StoredDevice& d) {
  const DeviceRecord& r = d.record;
  auto version = [](const std::string& v) { return v.empty() ? std::string("-") : v; };
  return r.name + ", uuid " + r.uuid + ", fingerprint " + d.fingerprint + ", " +
         std::to_string(r.sm_count) + (r.kind == "gpu" ? " SMs" : " hardware threads") +
         ", driver " + r.driver_text() + ", CUDA " + version(r.cuda_version) + ", NVRTC " +
         version(r.nvrtc_version);
}

std::vector<std::string> coverage_lines(const ExportDeviceTable& table) {
  std::vector<std::string> lines;
  for (const FamilyCoverage& c : table.coverage) {
    lines.push_back(c.family + ": " + std::to_string(c.count(CellStatus::exported)) + " of " +
                    std::to_string(c.cells.size()) + " buckets exported, " +
                    std::to_string(c.count(CellStatus::no_passed)) +
                    " measured with nothing passed, " +
                    std::to_string(c.count(CellStatus::no_data)) +
                    " with no data (the cross product of the measured axis values)");
    // One grid per class (gqa, head_dim, dtypes, page); cells are stored class by class with
    // batch outermost, context innermost.
    const size_t per_class = c.batch_buckets.size() * c.context_buckets.size();
    for (size_t start = 0; start < c.cells.size(); start += per_class) {
      const BucketKey& first = c.cells[start].bucket;
      size_t present = 0;
      for (size_t i = start; i < start + per_class; ++i) {
        present += c.cells[i].status != CellStatus::no_data;
      }
      if (present == 0) {
        lines.push_back("  " + class_text(first) + ": no data");
        continue;
      }
      lines.push_back("  " + class_text(first) + " (rows batch size, columns context length):");
      size_t width = 0;
      for (int b : c.batch_buckets) {
        width = std::max(width, to_string(batch_bucket_range(b)).size());
      }
      std::string header(4 + width, ' ');
      std::vector<size_t> column_width;
      for (int ctx : c.context_buckets) {
        const std::string h = to_string(context_bucket_range(ctx));
        column_width.push_back(h.size());
        header += "  " + h;
      }
      lines.push_back(header);
      size_t i = start;
      for (int b : c.batch_buckets) {
        std::string row = "    " + to_string(batch_bucket_range(b));
        row.resize(4 + width, ' ');
        for (size_t col = 0; col < c.context_buckets.size(); ++col, ++i) {
          const CellStatus s = c.cells[i].status;
          std::string mark = s == CellStatus::exported    ? "x"
                             : s == CellStatus::no_passed ? "!"
                                                          : ".";
          mark.resize(column_width[col], ' ');
          row += "  " + mark;
        }
        while (!row.empty() && row.back() == ' ') row.pop_back();
        lines.push_back(row);
      }
    }
    for (const CoverageCell& cell : c.cells) {
      if (cell.status != CellStatus::no_passed) continue;
      std::string names;
      for (const std::string& w : cell.workloads) names += (names.empty() ? "" : ", ") + w;
      lines.push_back("  ! " + bucket_text(cell.bucket) + ": nothing usable passed on " + names);
    }
  }
  if (!table.coverage.empty()) {
    lines.push_back(
        "  (x exported, ! measured but no usable passed result, . no data; batch size and "
        "context length in power-of-two buckets)");
  }
  return lines;
}

nlohmann::ordered_json export_json(const ExportResult& result, const ExportProvenance& provenance) {
  json devices = json::array();
  for (const ExportDeviceTable& table : result.tables) {
    json entries = json::array();
    for (const ExportEntry& e : table.entries) {
      json config = json::object();
      for (const auto& [axis, value] : e.config) config[axis] = value;
      json members = json::array();
      for (const BucketMember& m : e.members) {
        members.push_back({{"workload", m.name},
                           {"hash", m.hash},
                           {"shape", shape_json(m.shape)},
                           {"cases", m.cases},
                           {"best", case_json(m.best)},
                           {"chosen", m.chosen ? case_json(*m.chosen) : json(nullptr)},
                           {"slowdown", optional_json(m.slowdown)}});
      }
      entries.push_back({{"bucket", bucket_json(e.bucket)},
                         {"variant", e.variant},
                         {"config_key", e.config_key},
                         {"config", config},
                         {"regret", {{"max", e.max_regret}, {"mean", e.mean_regret}}},
                         {"workloads", e.members.size()},
                         {"covered_workloads", e.covered},
                         {"partial", e.partial},
                         {"candidates", e.candidates},
                         {"measured", members}});
    }
    json coverage = json::array();
    for (const FamilyCoverage& c : table.coverage) coverage.push_back(coverage_json(c));
    devices.push_back({{"device", device_json(table.device)},
                       {"measurements_used", table.measurements_used},
                       {"unstable_left_out", table.unstable_left_out},
                       {"entries", entries},
                       {"coverage", coverage}});
  }
  json runs = json::array();
  for (const auto& entry : result.runs) runs.push_back(run_json(entry.second));
  json skipped = json::array();
  for (const SkippedWorkload& w : result.skipped) {
    skipped.push_back({{"workload", w.name}, {"hash", w.hash}, {"reason", w.reason}});
  }
  const ExportOptions& o = result.options;
  return {{"format", "attn-tune export"},
          {"format_version", 1},
          {"generated_at", provenance.generated_at},
          {"tool",
           {{"name", "attn-tune export"},
            {"version", provenance.tool_version},
            {"git_commit", provenance.git_commit},
            {"command_line", provenance.command_line}}},
          {"database", {{"path", result.database_path}, {"schema_version", result.schema_version}}},
          {"selection",
           {{"devices", o.all_devices ? json("all") : json(o.devices)},
            {"families", o.families},
            {"variant", o.variant_glob.empty() ? json(nullptr) : json(o.variant_glob)},
            {"unstable", o.include_unstable ? "included" : "left out"}}},
          {"rules",
           {{"batch_size", "power-of-two buckets: 2^(k-1)+1 .. 2^k, and 1"},
            {"context_len",
             "cached tokens per sequence (the keys in the KV cache before this step's new tokens; "
             "a decode step over 4096 cached tokens is 4096, a prefill without a prefix 0), mean "
             "over the batch rounded up; power-of-two buckets: 2^(k-1)+1 .. 2^k, and [0, 1]"},
            {"exact", {"family", "gqa_ratio", "head_dim", "dtype", "kv_dtype", "page_size"}},
            {"case_time",
             "per (workload, variant, config): the latest passed measurement under the most "
             "thorough policy (confirm, then others, then screen)"},
            {"choice",
             "per bucket: among the configs measured on the most workloads of the bucket (all, "
             "unless partial), the lowest worst-case slowdown against each workload's best, then "
             "the lowest mean"},
            {"regret", "chosen median / best median - 1 over the bucket's workloads"}}},
          {"devices", devices},
          {"runs", runs},
          {"skipped", skipped}};
}

bool valid_cpp_namespace(const std::string& name) {
  if (name.empty()) return false;
  size_t i = 0;
  while (i <= name.size()) {
    const size_t end = std::min(name.find("::", i), name.size());
    if (end == i) return false;
    if (std::isdigit(static_cast<unsigned char>(name[i]))) return false;
    for (size_t k = i; k < end; ++k) {
      const unsigned char c = static_cast<unsigned char>(name[k]);
      if (!std::isalnum(c) && c != '_') return false;
    }
    if (end == name.size()) return true;
    i = end + 2;
  }
  return false;
}

std::string export_cpp_header(const ExportResult& result, const ExportProvenance& provenance,
                              const std::string& namespace_name) {
  ATTN_ASSERT(valid_cpp_namespace(namespace_name), "checked by the caller: " + namespace_name);
  size_t max_config = 1;
  for (const ExportDeviceTable& t : result.tables) {
    for (const ExportEntry& e : t.entries) max_config = std::max(max_config, e.config.size());
  }
  std::ostringstream out;
  out << "// Best kernel configs per workload bucket, exported by attn-tune export.\n"
      << "// Generated " << comment(provenance.generated_at) << " by attn-tune "
      << comment(provenance.tool_version) << " (commit " << comment(provenance.git_commit) << ")\n"
      << "// from " << comment(result.database_path) << " (schema version " << result.schema_version
      << ") with:\n"
      << "//   " << comment(provenance.command_line) << "\n"
      << "// Do not edit: rerun the command. Self-contained C++17; docs/export.md explains the\n"
      << "// buckets, the choice and the regret.\n"
      << "//\n"
      << "// Batch size and context length fall in power-of-two buckets (2^(k-1)+1 .. 2^k, and\n"
      << "// [1, 1] for a batch, [0, 1] for a context); family, GQA ratio, head dim, dtypes and\n"
      << "// page size must match exactly. The context length is the cached tokens per sequence:\n"
      << "// the keys in the KV cache before this step's new tokens (mean over the batch, rounded\n"
      << "// up), so a decode step over 4096 cached tokens asks with context_len 4096. Each entry\n"
      << "// is the (variant, config) with the lowest worst-case slowdown over the workloads\n"
      << "// measured in its bucket; its regret is chosen time / best time - 1 there.\n"
      << "#pragma once\n\n"
      << "#include <array>\n#include <cstddef>\n#include <cstdint>\n#include <string_view>\n\n"
      << "namespace " << namespace_name << " {\n\n"
      << "inline constexpr std::string_view kToolVersion = " << lit(provenance.tool_version)
      << ";\n"
      << "inline constexpr std::string_view kGitCommit = " << lit(provenance.git_commit) << ";\n"
      << "inline constexpr std::string_view kCommandLine = " << lit(provenance.command_line)
      << ";\n"
      << "inline constexpr std::string_view kGeneratedAt = " << lit(provenance.generated_at)
      << ";\n"
      << "inline constexpr std::size_t kMaxConfigValues = " << max_config << ";\n"
      << kHeaderTypes;

  for (size_t t = 0; t < result.tables.size(); ++t) {
    const ExportDeviceTable& table = result.tables[t];
    const StoredDevice& d = table.device;
    const DeviceRecord& r = d.record;
    const std::string suffix = std::to_string(t);
    auto version = [](const std::string& v) { return v.empty() ? std::string("-") : comment(v); };
    out << "\n// ---------------------------------------------------------------------------\n"
        << "// Device " << t << ": " << comment(r.name) << "\n"
        << "//   uuid " << comment(r.uuid) << "\n"
        << "//   fingerprint " << d.fingerprint << "\n";
    if (r.kind == "gpu") {
      out << "//   gpu, compute " << r.cc_major << "." << r.cc_minor << ", " << r.sm_count
          << " SMs, " << r.memory_bytes << " bytes of memory, SM clock " << r.sm_clock_khz / 1000
          << " MHz, memory clock " << r.memory_clock_khz / 1000 << " MHz\n";
    } else {
      out << "//   " << comment(r.kind) << ", " << r.sm_count << " hardware threads, "
          << r.memory_bytes << " bytes of memory\n";
    }
    out << "//   driver " << comment(r.driver_text()) << ", CUDA " << version(r.cuda_version)
        << ", NVRTC " << version(r.nvrtc_version) << "\n";
    for (const auto& [metric, c] : d.ceilings.by_metric) {
      out << "//   ceiling " << comment(metric) << " " << c.value << " (" << comment(c.measured_at)
          << ")\n";
    }
    out << "//   " << table.entries.size() << " buckets from " << table.measurements_used
        << " measurements";
    if (table.unstable_left_out > 0) {
      out << " (" << table.unstable_left_out << " unstable ones left out)";
    }
    out << "; the runs they come from:\n";
    std::set<int64_t> runs;
    for (const ExportEntry& e : table.entries) {
      for (const BucketMember& m : e.members) {
        runs.insert(m.best.run_id);
        if (m.chosen) runs.insert(m.chosen->run_id);
      }
    }
    for (int64_t id : runs) {
      const StoredRun& run = result.runs.at(id);
      out << "//   run " << id << " (" << run.uid << "): " << comment(run.record.tool) << " "
          << comment(run.record.tool_version) << " (commit " << comment(run.record.git_commit)
          << "), " << comment(run.record.started_at) << ", " << comment(run.status) << "\n"
          << "//     " << comment(run.record.command_line) << "\n";
    }
    out << "// Coverage:\n";
    for (const std::string& line : coverage_lines(table)) out << "//   " << comment(line) << "\n";

    out << "\ninline constexpr Measured kMeasured" << suffix << "[] = {\n";
    size_t measured_index = 0;
    std::vector<size_t> first_measured;
    for (const ExportEntry& e : table.entries) {
      first_measured.push_back(measured_index);
      for (const BucketMember& m : e.members) {
        const bool chosen = m.chosen.has_value();
        out << "    {" << lit(m.name) << ", " << lit(m.hash) << ", " << m.shape.batch_size << ", "
            << m.shape.context_len << ", " << (chosen ? "true" : "false") << ", "
            << number(chosen ? m.chosen->median_us : 0) << ", " << number(m.slowdown.value_or(0))
            << ", " << (chosen ? m.chosen->run_id : 0) << ", "
            << lit(chosen ? result.runs.at(m.chosen->run_id).uid : "") << ", "
            << lit(chosen ? m.chosen->measurement_uid : "") << ", " << number(m.best.median_us)
            << ", " << lit(m.best.variant) << ", " << lit(m.best.config_key) << ", "
            << m.best.run_id << ", " << lit(m.best.measurement_uid) << "},\n";
        ++measured_index;
      }
    }
    out << "};\n\ninline constexpr Entry kEntries" << suffix << "[] = {\n";
    for (size_t i = 0; i < table.entries.size(); ++i) {
      const ExportEntry& e = table.entries[i];
      const BucketRange b = batch_bucket_range(e.bucket.batch_bucket);
      const BucketRange c = context_bucket_range(e.bucket.context_bucket);
      out << "    // " << comment(bucket_text(e.bucket)) << ": regret max " << percent(e.max_regret)
          << ", mean " << percent(e.mean_regret) << " over " << e.covered << " of "
          << e.members.size() << " workloads"
          << (e.partial ? " (partial: no config was measured on all of them)" : "") << "\n"
          << "    {" << lit(e.bucket.family) << ", " << b.lo << ", " << b.hi << ", " << c.lo << ", "
          << c.hi << ", " << e.bucket.gqa_ratio << ", " << e.bucket.head_dim << ", "
          << lit(e.bucket.dtype) << ", " << lit(e.bucket.kv_dtype) << ", " << e.bucket.page_size
          << ",\n     " << lit(e.variant) << ", " << lit(e.config_key) << ", {{";
      for (size_t k = 0; k < e.config.size(); ++k) {
        out << (k ? ", " : "") << "{" << lit(e.config[k].first) << ", " << e.config[k].second
            << "}";
      }
      out << "}}, " << e.config.size() << ",\n     " << number(e.max_regret) << ", "
          << number(e.mean_regret) << ", " << e.members.size() << ", " << e.covered << ", "
          << (e.partial ? "true" : "false") << ", " << first_measured[i] << ", " << e.members.size()
          << "},\n";
    }
    out << "};\n";
  }

  out << "\ninline constexpr Device kDevices[] = {\n";
  for (size_t t = 0; t < result.tables.size(); ++t) {
    const StoredDevice& d = result.tables[t].device;
    const std::string suffix = std::to_string(t);
    out << "    {" << lit(d.record.name) << ", " << lit(d.record.uuid) << ", " << lit(d.fingerprint)
        << ", " << lit(d.record.driver_version) << ", " << lit(d.record.cuda_driver_version) << ", "
        << lit(d.record.cuda_version) << ", " << lit(d.record.nvrtc_version) << ", "
        << d.record.sm_count << ", kEntries" << suffix << ", sizeof(kEntries" << suffix
        << ") / sizeof(Entry), kMeasured" << suffix << ", sizeof(kMeasured" << suffix
        << ") / sizeof(Measured)},\n";
  }
  out << "};\n" << kHeaderDeviceLookup;
  if (result.tables.size() == 1) {
    out << "\n// This export holds one device's table (kDevices[0]): select() without a device.\n"
        << "constexpr const Entry* select(const Query& q) { return select(kDevices[0], q); }\n"
        << "constexpr const Entry* select_exact(const Query& q) {\n"
        << "  return select_exact(kDevices[0], q);\n}\n";
  }
  out << "\n}  // namespace " << namespace_name << "\n";
  return out.str();
}

}  // namespace attn
