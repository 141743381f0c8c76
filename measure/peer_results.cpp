#include "measure/peer_results.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "base/bounded_file.hpp"
#include "base/dtype.hpp"
#include "base/errors.hpp"
#include "base/kernel_config.hpp"
#include "base/sample_statistics.hpp"
#include "base/sha256.hpp"
#include "measure/timing_core.hpp"
#include "measure/verify.hpp"
#include "workloads/strict_json.hpp"

namespace attn {

namespace {

using nlohmann::json;

constexpr size_t kMaxResultsBytes = size_t(256) << 20;
constexpr size_t kMaxSamples = size_t(1) << 20;

// Collects "line N: /pointer: rule" problems while reading one line's object.
class LineReader {
 public:
  LineReader(size_t line, std::vector<std::string>& problems) : line_(line), problems_(problems) {}

  void problem(const std::string& pointer, const std::string& rule) {
    problems_.push_back("line " + std::to_string(line_) + ": " + pointer + ": " + rule);
  }

  // The member `key` of `object` if it has type `type` ("string", "object", "array", "boolean",
  // "number" (integers too), "integer"), else nullptr and a problem. `nullable`: null is fine.
  const json* get(const json& object, const std::string& pointer, const std::string& key,
                  const std::string& type, bool nullable = false) {
    const std::string where = pointer + "/" + json_pointer_token(key);
    const auto it = object.find(key);
    if (it == object.end()) {
      problem(where, "missing");
      return nullptr;
    }
    if (it->is_null() && nullable) return &*it;
    const bool ok =
        (type == "string" && it->is_string()) || (type == "object" && it->is_object()) ||
        (type == "array" && it->is_array()) || (type == "boolean" && it->is_boolean()) ||
        (type == "number" && it->is_number()) || (type == "integer" && it->is_number_integer());
    if (!ok) {
      problem(where, "must be " + std::string(type == "integer" ? "an " : "a ") + type +
                         (nullable ? " or null" : "") + ", got " + json_type_name(*it));
      return nullptr;
    }
    return &*it;
  }

  std::string text(const json& object, const std::string& pointer, const std::string& key) {
    const json* v = get(object, pointer, key, "string");
    return v ? v->get<std::string>() : std::string();
  }

  double number(const json& object, const std::string& pointer, const std::string& key) {
    const json* v = get(object, pointer, key, "number");
    if (!v) return 0;
    const double x = v->get<double>();
    if (!std::isfinite(x)) problem(pointer + "/" + key, "must be finite");
    return x;
  }

  int64_t integer(const json& object, const std::string& pointer, const std::string& key,
                  int64_t min_value) {
    const json* v = get(object, pointer, key, "integer");
    if (!v) return min_value;
    const int64_t x = v->get<int64_t>();
    if (x < min_value) {
      problem(pointer + "/" + key, "must be at least " + std::to_string(min_value));
      return min_value;
    }
    return x;
  }

 private:
  size_t line_;
  std::vector<std::string>& problems_;
};

bool is_hex64(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool is_peer_name(const std::string& name) {
  if (name.size() > 128 || !is_peer_variant(name) || name.size() == std::string(kPeerPrefix).size())
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

PeerResultsHeader read_header(const json& h, LineReader& r) {
  PeerResultsHeader header;
  const std::string kind = r.text(h, "", "kind");
  if (!kind.empty() && kind != "header") r.problem("/kind", "the first line must be the header");
  const std::string format = r.text(h, "", "format");
  if (!format.empty() && format != kPeerResultsFormat) {
    r.problem("/format", "'" + format + "' is not '" + kPeerResultsFormat + "'");
  }
  if (const json* v = r.get(h, "", "format_version", "integer"); v && *v != 1) {
    r.problem("/format_version", std::to_string(v->get<int64_t>()) + ": this attn-bench reads 1");
  }
  header.spec_hash = r.text(h, "", "spec_hash");
  if (!header.spec_hash.empty() && !is_hex64(header.spec_hash)) {
    r.problem("/spec_hash", "must be 64 lower-case hex digits");
  }
  if (const json* v = r.get(h, "", "spec", "object")) header.spec = *v;
  header.workload = r.text(h, "", "workload");
  header.output_dtype = r.text(h, "", "output_dtype");
  if (!header.output_dtype.empty()) {
    const std::optional<DType> dtype = dtype_from_string(header.output_dtype);
    if (!dtype || *dtype == DType::fp8_e4m3) {
      r.problem("/output_dtype", "'" + header.output_dtype + "' is not bf16, fp16 or fp32");
    }
  }
  header.reference = r.text(h, "", "reference");
  if (const json* p = r.get(h, "", "policy", "object")) {
    MeasurePolicy& policy = header.policy;
    policy.name = r.text(*p, "/policy", "name");
    if (const std::optional<MeasurePolicy> named =
            named_policy(policy.name.substr(0, policy.name.find('(')))) {
      policy = *named;
      policy.name = r.text(*p, "/policy", "name");
    }
    policy.min_samples = size_t(r.integer(*p, "/policy", "min_samples", 1));
    policy.max_samples = size_t(r.integer(*p, "/policy", "max_samples", 1));
    policy.noise = r.number(*p, "/policy", "noise");
    if (!(policy.noise > 0)) r.problem("/policy/noise", "must be positive");
    policy.max_seconds = r.number(*p, "/policy", "max_seconds");
    if (const json* v = r.get(*p, "/policy", "flush_l2", "boolean"))
      policy.flush_l2 = v->get<bool>();
  }
  if (const json* d = r.get(h, "", "device", "object")) {
    header.device = *d;
    const std::string kind_text = r.text(*d, "/device", "kind");
    if (kind_text == "gpu") {
      if (r.text(*d, "/device", "uuid").empty()) r.problem("/device/uuid", "a GPU needs its UUID");
    } else if (kind_text != "cpu" && !kind_text.empty()) {
      r.problem("/device/kind", "'" + kind_text + "' is not gpu or cpu");
    }
  }
  if (const auto it = h.find("runner"); it != h.end() && it->is_object()) header.runner = *it;
  return header;
}

Verification read_verification(const json& v, LineReader& r, const PeerResultsHeader& header) {
  const std::string at = "/verification";
  Verification out;
  out.checked = true;
  if (const json* c = r.get(v, at, "checked", "boolean")) out.checked = c->get<bool>();
  out.max_abs_error = r.number(v, at, "max_abs_error");
  // A relative error the runner could not write as a JSON number (an infinite error: a zero
  // reference row with a non-zero output) comes as null and fails.
  if (const json* e = r.get(v, at, "rel_l2_error", "number", true)) {
    out.rel_l2_error = e->is_null() ? INFINITY : e->get<double>();
  }
  out.nonfinite = r.integer(v, at, "nonfinite", 0);
  out.elements = r.integer(v, at, "elements", 0);
  out.reference = header.reference;
  if (const std::optional<DType> dtype = dtype_from_string(header.output_dtype)) {
    out.tolerance = tolerance_for(*dtype);
  }
  return out;
}

PeerRow read_row(const json& row, LineReader& r, const PeerResultsHeader& header) {
  PeerRow out;
  Measurement& m = out.measurement;
  const std::string kind = r.text(row, "", "kind");
  if (!kind.empty() && kind != "peer") r.problem("/kind", "'" + kind + "' where 'peer' belongs");
  m.variant = r.text(row, "", "variant");
  if (!m.variant.empty() && !is_peer_name(m.variant)) {
    r.problem("/variant", "'" + m.variant +
                              "' is not a peer name: 'peer.' then lower-case letters, digits, "
                              "'_', '.', '-' (at most 128 characters)");
  }
  out.library = r.text(row, "", "library");
  m.reason = r.text(row, "", "reason");
  m.backend = header.device_kind() == "gpu" ? "cuda" : "cpu";
  m.policy = header.policy.name;
  // A user module's peer is recorded once per config of its space ("block_n=64,num_warps=4");
  // the built-in peers have none.
  m.config_key = "";
  if (row.contains("config_key")) {
    const std::string key = r.text(row, "", "config_key");
    try {
      if (!key.empty()) m.config_key = KernelConfig::from_key(key).key();
    } catch (const UsageError& e) {
      r.problem("/config_key", e.what());
    }
  }
  json config = json::object();
  if (const json* c = r.get(row, "", "config", "object")) config = *c;
  config["peer_library"] = out.library;
  m.config_json = config.dump();
  const std::string disposition_text = r.text(row, "", "disposition");
  const std::optional<Disposition> disposition = disposition_from_string(disposition_text);
  if (!disposition && !disposition_text.empty()) {
    r.problem("/disposition", "'" + disposition_text + "' is not a disposition");
  }
  m.disposition = disposition.value_or(Disposition::unsupported);
  const json* verification = r.get(row, "", "verification", "object", true);
  const json* timing = r.get(row, "", "timing", "object", true);
  if (verification && verification->is_object()) {
    m.verification = read_verification(*verification, r, header);
  }
  std::vector<double> samples;
  TimingDetails details;
  if (timing && timing->is_object()) {
    details.timer = r.text(*timing, "/timing", "timer");
    if (!details.timer.empty() && details.timer != "events" && details.timer != "cpu") {
      r.problem("/timing/timer", "'" + details.timer + "' is not events or cpu");
    }
    details.stop_reason = r.text(*timing, "/timing", "stop_reason");
    if (!details.stop_reason.empty() && details.stop_reason != "noise" &&
        details.stop_reason != "max_samples" && details.stop_reason != "max_time") {
      r.problem("/timing/stop_reason", "'" + details.stop_reason +
                                           "' is not noise, "
                                           "max_samples or max_time");
    }
    details.warmup_samples = r.integer(*timing, "/timing", "warmup_samples", 0);
    if (const json* s = r.get(*timing, "/timing", "samples_us", "array")) {
      if (s->empty() || s->size() > kMaxSamples) {
        r.problem("/timing/samples_us", "must hold 1 to 2^20 samples");
      }
      for (size_t i = 0; i < s->size() && i < kMaxSamples; ++i) {
        const json& x = (*s)[i];
        if (!x.is_number() || !(x.get<double>() > 0) || !std::isfinite(x.get<double>())) {
          r.problem("/timing/samples_us/" + std::to_string(i), "must be a positive number");
          break;
        }
        samples.push_back(x.get<double>());
      }
    }
  }
  if (m.disposition == Disposition::passed) {
    if (!verification || !verification->is_object()) {
      r.problem("/verification", "a passed peer needs its verification");
    }
    if (!timing || !timing->is_object()) r.problem("/timing", "a passed peer needs its timing");
  }
  if (m.disposition != Disposition::passed) return out;
  // The verdict is ours: the same rule and tolerance as our variants.
  if (!verification_passed(m.verification)) {
    m.disposition = Disposition::incorrect;
    m.reason = "verified by attn-bench: " + describe(m.verification);
    return out;
  }
  m.samples_us = samples;
  m.stats = summarize(samples);
  m.timing = details;
  m.timing.launches_per_sample = 1;
  m.timing.noise = median_relative_noise(samples);
  m.timing.noise_target = header.policy.noise;
  m.timing.outliers = int64_t(count_outliers(samples).total());
  assess_stability(header.policy, m);
  return out;
}

}  // namespace

PeerResults parse_peer_results(std::string_view text, const std::string& source) {
  PeerResults results;
  std::vector<std::string> problems;
  std::set<std::string> names;
  size_t line_number = 0, start = 0;
  bool have_header = false;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    StrictJsonResult parsed = parse_strict_json(line);
    if (!parsed.complete || !parsed.problems.empty() || !parsed.value.is_object()) {
      std::string why = parsed.problems.empty() ? "not a JSON object" : parsed.problems.front();
      problems.push_back("line " + std::to_string(line_number) + ": " + why);
      if (problems.size() >= 20) break;
      continue;
    }
    LineReader reader(line_number, problems);
    if (!have_header) {
      results.header = read_header(parsed.value, reader);
      have_header = true;
      continue;
    }
    PeerRow row = read_row(parsed.value, reader, results.header);
    const std::string name =
        row.measurement.variant +
        (row.measurement.config_key.empty() ? "" : " " + row.measurement.config_key);
    if (!row.measurement.variant.empty() && !names.insert(name).second) {
      reader.problem("/variant", "'" + name + "' appears twice");
    }
    results.rows.push_back(std::move(row));
    if (problems.size() >= 20) break;
  }
  if (!have_header && problems.empty()) problems.push_back("empty: no header line");
  if (!problems.empty()) throw InputError(source, problems);
  return results;
}

PeerResults read_peer_results(const std::string& path) {
  BoundedReadFailure failure;
  const std::optional<std::string> text = read_bounded_file(path, kMaxResultsBytes, failure);
  if (!text) {
    std::string why = failure.kind == BoundedReadFailure::Kind::too_large
                          ? "larger than 256 MiB"
                          : describe_failure(failure, kMaxResultsBytes);
    throw InputError(path, {why});
  }
  return parse_peer_results(*text, path);
}

WorkloadRecord peer_workload_record(const PeerResultsHeader& header, const std::string& source) {
  WorkloadRecord record;
  record.canonical_json = header.spec.dump();
  record.hash = sha256_hex(record.canonical_json);
  record.name = header.spec.value("name", header.workload);
  if (record.hash != header.spec_hash) {
    throw InputError(
        source, {"line 1: /spec: hashes to " + record.hash.substr(0, 12) + ", not to /spec_hash " +
                 header.spec_hash.substr(0, 12) + ": the spec was changed after the dump"});
  }
  return record;
}

Family peer_family(const Batch& batch, const Registry& registry) {
  if (batch.spec.model.latent()) return Family::mla_decode;
  if (batch.block_sparse) return Family::blocksparse;
  if (batch.decode_only()) return Family::paged_decode;
  const bool context = std::any_of(batch.context_lens.begin(), batch.context_lens.end(),
                                   [](int64_t c) { return c > 0; });
  const Variant* flash = registry.find("flash_fwd.cpu_reference");
  if (!context && flash && flash->check(batch, {}, Target::cpu())) return Family::flash_fwd;
  return Family::prefix_prefill;
}

void apply_peer_work(const Batch& batch, const Registry& registry, Measurement& m) {
  const Family family = peer_family(batch, registry);
  m.family = to_string(family);
  const Variant* model = registry.find(m.family + ".cpu_reference");
  ATTN_ASSERT(model != nullptr, "every family has a cpu_reference variant");
  const Work work = model->work(batch);
  m.bytes = work.bytes;
  m.unique_bytes = work.unique_bytes;
  m.flops = work.flops;
}

}  // namespace attn
