#include "workloads/workload_spec.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/bounded_file.hpp"
#include "base/errors.hpp"
#include "base/sha256.hpp"
#include "workloads/json_field_reader.hpp"
#include "workloads/model_reader.hpp"
#include "workloads/referenced_file.hpp"
#include "workloads/strict_json.hpp"
#include "workloads/trace_file.hpp"
#include "workloads/workload_validation.hpp"

namespace attn {

using nlohmann::json;

namespace {

constexpr int64_t kMaxBlockSize = 4096;      // block_sparse.block_size
constexpr int64_t kMaxBlockCount = 1 << 20;  // local_blocks, vertical_stride, head_sliding_step
constexpr int64_t kMaxTreeNodes = 4096;      // explicit.parents and branches
constexpr size_t kMaxColumnNameChars = 256;  // trace.columns

std::string format_count(int64_t value) {
  return value == kInt64Max ? "at least " + std::to_string(value) : std::to_string(value);
}

// Reads a WorkloadSpec out of a JSON document, collecting every problem instead of stopping at
// the first. Each check reads one field; a field that is missing or wrong leaves its default in
// the spec and marks its section invalid, so the whole-batch limits are only computed from
// fields that passed.
class SpecReader : public JsonFieldReader {
 public:
  // `base_dir`: where relative file references resolve. `loaded`: when validating a spec that
  // was parsed already, the spec whose files (trace rows, hashes) are reused instead of re-read.
  SpecReader(std::string base_dir, const WorkloadSpec* loaded)
      : JsonFieldReader(kWorkloadSchemaVersion), base_dir_(std::move(base_dir)), loaded_(loaded) {}

  WorkloadSpec read(const json& root) {
    WorkloadSpec spec;
    if (!root.is_object()) {
      problems.push_back("(top level): expected an object, got " + json_type_name(root));
      return spec;
    }
    // A newer schema may mean anything; listing its keys as unknown would only be noise.
    if (!read_schema_version(root, spec)) return spec;
    check_keys(
        root, "",
        {"schema_version", "name", "description", "model", "kv_cache", "sequences", "mask", "seed"},
        {"mask"});
    read_name(root, spec);
    read_description(root, spec);
    bool model_ok = read_model(root, spec.model);
    bool kv_ok = read_kv_cache(root, spec.kv_cache, spec.model, model_ok);
    bool sequences_ok = read_sequences(root, spec.sequences);
    bool mask_ok = read_mask(root, spec.mask, spec.model);
    read_seed(root, spec);
    if (sequences_ok) check_limits(spec, model_ok, kv_ok, mask_ok);
    return spec;
  }

 private:
  std::string base_dir_;
  const WorkloadSpec* loaded_ = nullptr;

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
    if (version) spec.schema_version = version_ = int(*version);
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

  // The model section has its reader (workloads/model_reader.hpp); its problems join these.
  bool read_model(const json& root, ModelShape& model) {
    ModelReader reader(version_);
    const bool ok = reader.read(root, model);
    take_problems(reader);
    return ok;
  }

  bool read_kv_cache(const json& root, KvCacheSpec& kv, const ModelShape& model, bool model_ok) {
    bool ok = true;
    const json* object = object_member(root, "", "kv_cache", false, ok);
    if (object == nullptr) return ok;
    const std::string p = "/kv_cache";
    check_keys(*object, p, {"page_size", "layout", "allocation", "num_pages", "shared_prefix"},
               {"num_pages", "shared_prefix"});
    auto page_size = integer(*object, p, "page_size", false, 1, kMaxPageSize, ok);
    if (page_size) kv.page_size = int(*page_size);
    enum_member<KvLayout>(*object, p, "layout", kv_layout_from_string, "\"NHD\", \"HND\", \"vllm\"",
                          kv.layout, ok);
    enum_member<PageAllocation>(*object, p, "allocation", page_allocation_from_string,
                                "\"sequential\", \"shuffled\", \"fragmented\", \"shared_prefix\"",
                                kv.allocation, ok);
    if (model.latent() && kv.layout != KvLayout::nhd) {
      add(p + "/layout", "must be \"NHD\" for attention \"mla\" (one latent row per token: " +
                             std::string("[pages, page_size, kv_lora_rank + qk_rope_head_dim])"));
      ok = false;
    }
    if (kv.layout == KvLayout::vllm && model_ok) {
      // vLLM packs 16 bytes of the head dimension together in K.
      const int x = 16 / int(size_of(model.effective_kv_dtype()));
      if (model.head_dim % x != 0) {
        add(p + "/layout", "\"vllm\" needs head_dim to be a multiple of " + std::to_string(x) +
                               " (16 bytes of " + to_string(model.effective_kv_dtype()) +
                               "), got " + std::to_string(model.head_dim));
        ok = false;
      }
    }
    if (auto v = integer(*object, p, "num_pages", false, 1, kPageLimit - 2, ok)) kv.num_pages = v;

    const json* shared = object_member(*object, p, "shared_prefix", false, ok);
    const bool wants_shared = kv.allocation == PageAllocation::shared_prefix;
    if (shared == nullptr && wants_shared && !object->contains("shared_prefix")) {
      add(p + "/shared_prefix", "missing required key (allocation \"shared_prefix\" needs it)");
      ok = false;
    } else if (shared != nullptr && !wants_shared) {
      add(p + "/shared_prefix", "only applies with allocation \"shared_prefix\"");
      ok = false;
    } else if (shared != nullptr) {
      const std::string sp = p + "/shared_prefix";
      check_keys(*shared, sp, {"tokens", "group_size"});
      SharedPrefixSpec prefix;
      if (auto v = integer(*shared, sp, "tokens", true, 1, kInt64Max, ok)) prefix.tokens = *v;
      if (auto v = integer(*shared, sp, "group_size", false, 2, kMaxSequences, ok)) {
        prefix.group_size = int(*v);
      }
      kv.shared_prefix = prefix;
    }
    return ok;
  }

  // context_len or query_len of a sequence entry: an integer, or a distribution object.
  std::optional<LengthSpec> read_length(const json& entry, const std::string& p, const char* key,
                                        bool required, int64_t lowest, bool& ok) {
    const json* value = member(entry, p, key, required);
    if (value == nullptr) {
      if (required) ok = false;
      return std::nullopt;
    }
    if (!value->is_object()) {
      if (!value->is_number_integer()) {
        add(p + "/" + key,
            "expected an integer or a distribution object, got " + describe_wrong_type(*value));
        ok = false;
        return std::nullopt;
      }
      auto v = integer(entry, p, key, required, lowest, kInt64Max, ok);
      return v ? std::optional<LengthSpec>(LengthSpec(*v)) : std::nullopt;
    }
    const std::string where = p + "/" + key;
    const std::string* name = string_member(*value, where, "distribution", true, ok);
    if (name == nullptr) return std::nullopt;
    LengthSpec length;
    bool valid = true;
    // The range of a drawn length; `keys` are the distribution's own parameters.
    auto bounds = [&](std::vector<std::string> keys) {
      keys.insert(keys.end(), {"distribution", "min", "max"});
      check_keys(*value, where, keys);
      length.min = integer(*value, where, "min", false, lowest, kInt64Max, valid).value_or(lowest);
      auto max = integer(*value, where, "max", true, lowest, kInt64Max, valid);
      if (max) length.max = *max;
      if (max && length.min > length.max) {
        add(where, "min (" + std::to_string(length.min) + ") must not exceed max (" +
                       std::to_string(length.max) + ")");
        valid = false;
      }
    };
    if (*name == "fixed") {
      check_keys(*value, where, {"distribution", "value"});
      auto v = integer(*value, where, "value", true, lowest, kInt64Max, valid);
      if (v) length = LengthSpec(*v);
    } else if (*name == "uniform") {
      length.distribution = LengthDistribution::uniform;
      bounds({});
    } else if (*name == "normal") {
      length.distribution = LengthDistribution::normal;
      bounds({"mean", "stddev"});
      length.mean = number(*value, where, "mean", true, -1e300, true, valid).value_or(0);
      length.stddev = number(*value, where, "stddev", true, 0.0, true, valid).value_or(0);
    } else if (*name == "lognormal") {
      length.distribution = LengthDistribution::lognormal;
      bounds({"median", "sigma"});
      length.median = number(*value, where, "median", true, 0.0, false, valid).value_or(1);
      length.sigma = number(*value, where, "sigma", true, 0.0, true, valid).value_or(0);
    } else if (*name == "zipf") {
      length.distribution = LengthDistribution::zipf;
      bounds({"exponent"});
      length.exponent = number(*value, where, "exponent", true, 0.0, false, valid).value_or(1);
    } else {
      add(where + "/distribution",
          "must be one of \"fixed\", \"uniform\", \"normal\", \"lognormal\", \"zipf\", got " +
              show(json(*name)));
      valid = false;
    }
    if (!valid) {
      ok = false;
      return std::nullopt;
    }
    return length;
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
      SequenceSpec seq;
      if (entry.contains("trace")) {
        check_keys(entry, p, {"trace"}, {"trace"});
        seq.trace = read_trace(entry, p, i, ok);
        if (!seq.trace) seq.trace = TraceSpec{};
      } else {
        check_keys(entry, p, {"context_len", "query_len", "count"});
        if (auto v = read_length(entry, p, "context_len", true, 0, ok)) seq.context_len = *v;
        if (auto v = read_length(entry, p, "query_len", false, 1, ok)) seq.query_len = *v;
        if (auto v = integer(entry, p, "count", false, 1, kMaxSequenceCount, ok))
          seq.count = int(*v);
      }
      sequences.push_back(seq);
    }
    return ok;
  }

  // Reads `file` (and the optional `sha256` pin) of a file-reference object. In validation of a
  // spec that was parsed already (`known_sha256` set), the file is not read again.
  std::optional<ReferencedFile> file_reference(const json& object, const std::string& p,
                                               bool required, const std::string* known_path,
                                               const std::string* known_sha256, bool need_bytes,
                                               std::string& file_out, bool& ok) {
    const std::string* file = string_member(object, p, "file", required, ok);
    const std::string* pin = string_member(object, p, "sha256", false, ok);
    if (file == nullptr) return std::nullopt;
    file_out = *file;
    if (file->empty()) {
      add(p + "/file", "must not be empty");
      ok = false;
      return std::nullopt;
    }
    // A path is cut at a NUL byte by every system call: refused, never shortened.
    if (const size_t nul = file->find('\0'); nul != std::string::npos) {
      add(p + "/file", "must not contain a NUL byte (\\u0000 at byte " + std::to_string(nul) +
                           " of \"" + printable_path(*file) + "\")");
      ok = false;
      return std::nullopt;
    }
    if (!need_bytes && known_sha256 && !known_sha256->empty() && known_path) {
      return ReferencedFile{*known_path, "", *known_sha256};
    }
    std::string problem;
    const std::string& path = known_path && !known_path->empty() ? *known_path : *file;
    std::optional<ReferencedFile> loaded =
        read_referenced_file(path, known_path && !known_path->empty() ? "" : base_dir_, problem);
    if (!loaded) {
      add(p + "/file", problem);
      ok = false;
      return std::nullopt;
    }
    if (pin && *pin != loaded->sha256) {
      add(p + "/sha256", "the file's SHA-256 is " + loaded->sha256 + ", not " + show(json(*pin)));
      ok = false;
      return std::nullopt;
    }
    return loaded;
  }

  std::optional<TraceSpec> read_trace(const json& entry, const std::string& p, size_t index,
                                      bool& ok) {
    bool valid = true;
    const json* object = object_member(entry, p, "trace", true, valid);
    if (object == nullptr) {
      ok = false;
      return std::nullopt;
    }
    const std::string tp = p + "/trace";
    check_keys(*object, tp,
               {"file", "sha256", "format", "columns", "phase", "first", "count", "chunk"});
    TraceSpec trace;
    const TraceSpec* known = nullptr;
    if (loaded_ && index < loaded_->sequences.size() && loaded_->sequences[index].trace) {
      known = &*loaded_->sequences[index].trace;
    }
    enum_member<TracePhase>(*object, tp, "phase", trace_phase_from_string,
                            "\"prefill\", \"decode\", \"chunked_prefill\"", trace.phase, valid);
    if (auto v = integer(*object, tp, "first", false, 0, kMaxTraceRows, valid)) trace.first = *v;
    if (auto v = integer(*object, tp, "count", false, 1, kMaxTraceRows, valid)) trace.count = v;
    const bool chunked = trace.phase == TracePhase::chunked_prefill;
    if (object->contains("chunk") && !chunked) {
      add(tp + "/chunk", "only applies to phase \"chunked_prefill\"");
      valid = false;
    } else if (chunked && !object->contains("chunk")) {
      add(tp + "/chunk", "missing required key (phase \"chunked_prefill\" needs it)");
      valid = false;
    } else if (auto v = integer(*object, tp, "chunk", false, 1, kMaxTraceLength, valid)) {
      trace.chunk = *v;
    }

    if (object->contains("format")) {
      TraceFormat format = TraceFormat::csv;
      enum_member<TraceFormat>(*object, tp, "format", trace_format_from_string,
                               "\"csv\", \"jsonl\", \"json\"", format, valid);
      if (valid) trace.format = format;
    }
    read_trace_columns(*object, tp, trace, valid);

    const bool have_rows = known && !known->rows.empty() && !known->sha256.empty();
    std::optional<ReferencedFile> file =
        file_reference(*object, tp, true, known ? &known->resolved_path : nullptr,
                       known ? &known->sha256 : nullptr, !have_rows, trace.file, valid);
    if (!file) {
      ok = false;
      return std::nullopt;
    }
    trace.resolved_path = file->resolved_path;
    trace.sha256 = file->sha256;
    if (have_rows) {
      trace.rows = known->rows;
    } else {
      if (!valid) {  // a wrong format or mapping: the file's rows would only repeat it
        ok = false;
        return std::nullopt;
      }
      const TraceFormat format = trace.format.value_or(trace_format_for(file->file_name));
      TraceRows parsed = parse_trace(file->bytes, format, trace.columns.value_or(TraceColumns{}));
      for (const std::string& problem : parsed.problems) {
        add(tp + "/file", "\"" + trace.file + "\" (" + to_string(format) + ") " + problem);
      }
      if (!parsed.problems.empty()) {
        ok = false;
        return std::nullopt;
      }
      trace.rows = std::move(parsed.rows);
    }
    const int64_t rows = int64_t(trace.rows.size());
    if (trace.first >= rows) {
      add(tp + "/first", "must be below the trace's " + std::to_string(rows) + " rows, got " +
                             std::to_string(trace.first));
      valid = false;
    } else if (trace.count && trace.first + *trace.count > rows) {
      add(tp + "/count", "first (" + std::to_string(trace.first) + ") + count (" +
                             std::to_string(*trace.count) + ") exceeds the trace's " +
                             std::to_string(rows) + " rows");
      valid = false;
    }
    if (!valid) {
      ok = false;
      return std::nullopt;
    }
    return trace;
  }

  // "columns": {"context": NAME, "query": NAME}: the trace's columns of prompt and output
  // lengths, two different names.
  void read_trace_columns(const json& object, const std::string& tp, TraceSpec& trace,
                          bool& valid) {
    const json* columns = object_member(object, tp, "columns", false, valid);
    if (columns == nullptr) return;
    const std::string cp = tp + "/columns";
    check_keys(*columns, cp, {"context", "query"});
    TraceColumns mapping;
    bool complete = true;
    const size_t problems_before = problems.size() + omitted_problems;
    for (const char* key : {"context", "query"}) {
      const std::string* name = string_member(*columns, cp, key, true, complete);
      if (name == nullptr) continue;
      check_text(*name, cp + "/" + key, 1, kMaxColumnNameChars, /*allow_control=*/false);
      (std::string(key) == "context" ? mapping.context : mapping.query) = *name;
    }
    if (!complete || problems.size() + omitted_problems != problems_before) {
      valid = false;
      return;
    }
    if (mapping.context == mapping.query) {
      add(cp, "context and query must name different columns, got \"" + mapping.context +
                  "\" for both");
      valid = false;
      return;
    }
    trace.columns = mapping;
  }

  bool read_mask(const json& root, MaskSpec& mask, const ModelShape& model) {
    bool ok = true;
    const json* object = object_member(root, "", "mask", false, ok);
    if (object == nullptr) return ok;
    const std::string p = "/mask";
    check_keys(*object, p, {"causal", "block_sparse", "explicit"});
    if (const json* causal = boolean_member(*object, p, "causal", ok))
      mask.causal = causal->get<bool>();
    if (model.latent()) {
      bool refused = false;
      for (const char* key : {"block_sparse", "explicit"}) {
        if (object->contains(key)) {
          add(p + "/" + key, "is not supported for attention \"mla\" (causal or not only)");
          refused = true;
        }
      }
      if (refused) return false;
    }

    if (const json* sparse = object_member(*object, p, "block_sparse", false, ok)) {
      const std::string bp = p + "/block_sparse";
      check_keys(*sparse, bp,
                 {"block_size", "local_blocks", "vertical_stride", "head_sliding_step", "homo_head",
                  "file", "sha256"});
      BlockSparseSpec spec;
      if (auto v = integer(*sparse, bp, "block_size", false, 1, kMaxBlockSize, ok)) {
        spec.block_size = int(*v);
      }
      if (sparse->contains("file")) {
        for (const char* key :
             {"local_blocks", "vertical_stride", "head_sliding_step", "homo_head"}) {
          if (sparse->contains(key)) {
            add(bp + "/" + key, "not allowed with file (the layout file gives the layout)");
            ok = false;
          }
        }
        const BlockSparseSpec* known =
            loaded_ && loaded_->mask.block_sparse ? &*loaded_->mask.block_sparse : nullptr;
        if (auto file = file_reference(*sparse, bp, true, known ? &known->resolved_path : nullptr,
                                       known ? &known->sha256 : nullptr, false, spec.file, ok)) {
          spec.resolved_path = file->resolved_path;
          spec.sha256 = file->sha256;
        }
      } else {
        if (auto v = integer(*sparse, bp, "local_blocks", true, 1, kMaxBlockCount, ok)) {
          spec.local_blocks = int(*v);
        }
        if (auto v = integer(*sparse, bp, "vertical_stride", true, 1, kMaxBlockCount, ok)) {
          spec.vertical_stride = int(*v);
        }
        if (auto v = integer(*sparse, bp, "head_sliding_step", false, 0, kMaxBlockCount, ok)) {
          spec.head_sliding_step = int(*v);
        }
        if (const json* homo = boolean_member(*sparse, bp, "homo_head", ok)) {
          spec.homo_head = homo->get<bool>();
        }
      }
      if (!mask.causal) {
        add(bp,
            "needs causal masking (/mask/causal true): the layout keeps blocks at or below "
            "the diagonal");
        ok = false;
      }
      mask.block_sparse = spec;
    }

    if (const json* explicit_mask = object_member(*object, p, "explicit", false, ok)) {
      const std::string ep = p + "/explicit";
      check_keys(*explicit_mask, ep, {"kind", "parents", "branches", "density", "file", "sha256"});
      ExplicitMaskSpec spec;
      const std::string* kind = string_member(*explicit_mask, ep, "kind", true, ok);
      std::optional<ExplicitMaskKind> parsed =
          kind ? explicit_mask_kind_from_string(*kind) : std::nullopt;
      if (kind && !parsed) {
        add(ep + "/kind",
            "must be one of \"causal\", \"tree\", \"branches\", \"random\", "
            "\"file\", got " +
                show(json(*kind)));
        ok = false;
      }
      if (parsed) spec.kind = *parsed;
      auto only_for = [&](const char* key, ExplicitMaskKind owner) {
        if (parsed && *parsed != owner && explicit_mask->contains(key)) {
          add(ep + "/" + key, "only applies to kind \"" + to_string(owner) + "\"");
          ok = false;
          return false;
        }
        return parsed == owner;
      };
      if (only_for("parents", ExplicitMaskKind::tree))
        read_tree_parents(*explicit_mask, ep, spec, ok);
      if (only_for("branches", ExplicitMaskKind::branches)) {
        if (auto v = integer(*explicit_mask, ep, "branches", true, 1, kMaxTreeNodes, ok)) {
          spec.branches = int(*v);
        }
      }
      if (only_for("density", ExplicitMaskKind::random)) {
        if (auto v = number(*explicit_mask, ep, "density", true, 0.0, false, ok)) {
          if (*v > 1.0) {
            add(ep + "/density", "must be at most 1, got " + show(json(*v)));
            ok = false;
          }
          spec.density = *v;
        }
      }
      only_for("sha256", ExplicitMaskKind::file);
      if (only_for("file", ExplicitMaskKind::file)) {
        const ExplicitMaskSpec* known =
            loaded_ && loaded_->mask.explicit_mask ? &*loaded_->mask.explicit_mask : nullptr;
        if (auto file =
                file_reference(*explicit_mask, ep, true, known ? &known->resolved_path : nullptr,
                               known ? &known->sha256 : nullptr, false, spec.file, ok)) {
          spec.resolved_path = file->resolved_path;
          spec.sha256 = file->sha256;
        }
      }
      if (object->contains("block_sparse")) {
        add(ep, "cannot be combined with /mask/block_sparse");
        ok = false;
      }
      if (model.sliding_window) {
        add(ep, "cannot be combined with /model/sliding_window");
        ok = false;
      }
      mask.explicit_mask = spec;
    }
    return ok;
  }

  void read_tree_parents(const json& object, const std::string& ep, ExplicitMaskSpec& spec,
                         bool& ok) {
    const json* parents =
        typed_member(object, ep, "parents", true, ok, &json::is_array, "an array");
    if (parents == nullptr) return;
    if (parents->empty() || parents->size() > size_t(kMaxTreeNodes)) {
      add(ep + "/parents", "must list 1.." + std::to_string(kMaxTreeNodes) + " nodes, got " +
                               std::to_string(parents->size()));
      ok = false;
      return;
    }
    for (size_t i = 0; i < parents->size(); ++i) {
      const json& parent = (*parents)[i];
      const int64_t highest = int64_t(i) - 1;
      if (!parent.is_number_integer() || parent.get<int64_t>() < -1 ||
          parent.get<int64_t>() > highest) {
        add(ep + "/parents/" + std::to_string(i),
            "must be an integer in -1.." + std::to_string(highest) +
                " (-1: the context; otherwise an earlier node), got " +
                describe_wrong_type(parent));
        ok = false;
        continue;
      }
      spec.tree_parents.push_back(int(parent.get<int64_t>()));
    }
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

  void check_limits(const WorkloadSpec& spec, bool model_ok, bool kv_ok, bool mask_ok) {
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
    if (mask_ok && t.num_seqs <= kMaxSequences) check_mask_fits(spec);
    if (!kv_ok) return;
    if (t.num_pages >= kPageLimit) {
      over("the number of pages (sum of count * ceil(kv_len / page_size), plus the poison page)",
           t.num_pages, "< 2^31 (" + std::to_string(kPageLimit) + ")");
    }
    if (spec.kv_cache.num_pages && t.used_pages > *spec.kv_cache.num_pages) {
      add("/kv_cache/num_pages", "the batch does not fit: it needs " + format_count(t.used_pages) +
                                     " pages (plus the poison page), the pool has " +
                                     std::to_string(*spec.kv_cache.num_pages));
    }
    if (t.block_table_entries >= kBlockTableLimit) {
      over("the padded block table (sequences * max pages per sequence = " +
               format_count(t.num_seqs) + " * " + format_count(t.max_pages_per_seq) + ")",
           t.block_table_entries, "< 2^31 (" + std::to_string(kBlockTableLimit) + ") entries");
    }
    if (!model_ok) return;
    const size_t kv_size = size_of(spec.model.effective_kv_dtype());
    const size_t q_size = size_of(spec.model.dtype);
    if (t.kv_pool_bytes > kMaxKvPoolBytes) {
      // K and V rows of one width, or K's and V's widths added (v_head_dim); mla: one latent row.
      const int head_dim = spec.model.head_dim, v_head_dim = spec.model.effective_v_head_dim();
      const bool latent = spec.model.latent();
      const bool same = latent || head_dim == v_head_dim;
      const std::string dims =
          same ? std::to_string(head_dim)
               : "(" + std::to_string(head_dim) + " + " + std::to_string(v_head_dim) + ")";
      const std::string pools =
          latent ? "the latent pool size in bytes (1 * "
                 : std::string("the K+V pool size in bytes (") + (same ? "2 * " : "");
      over(pools + format_count(t.num_pages) + " pages * " +
               std::to_string(sized.kv_cache.page_size) + " tokens * " +
               std::to_string(spec.model.num_kv_heads) + " kv heads * " + dims + " dims * " +
               std::to_string(kv_size) + " bytes)",
           t.kv_pool_bytes, "64 GiB (" + std::to_string(kMaxKvPoolBytes) + ")");
    }
    if (t.query_bytes > kMaxQueryBytes) {
      over("the Q size in bytes (" + format_count(t.total_q) + " tokens * " +
               std::to_string(spec.model.num_q_heads) + " heads * " +
               std::to_string(spec.model.head_dim) + " dims * " + std::to_string(q_size) +
               " bytes)",
           t.query_bytes, "16 GiB (" + std::to_string(kMaxQueryBytes) + ")");
    }
  }

  // An explicit tree or branch mask is laid over every sequence's new tokens: their number must
  // fit. Reports the first sequence that does not.
  void check_mask_fits(const WorkloadSpec& spec) {
    if (!spec.mask.explicit_mask) return;
    const ExplicitMaskSpec& mask = *spec.mask.explicit_mask;
    if (mask.kind != ExplicitMaskKind::tree && mask.kind != ExplicitMaskKind::branches) return;
    int64_t seq = 0;
    bool reported = false;
    for_each_sequence(spec, [&](const SequenceLengths& lengths) {
      if (!reported && mask.kind == ExplicitMaskKind::tree &&
          lengths.query_len != int64_t(mask.tree_parents.size()) && !mask.tree_parents.empty()) {
        add("/mask/explicit/parents", "the tree has " + std::to_string(mask.tree_parents.size()) +
                                          " nodes but sequence " + std::to_string(seq) +
                                          " has query_len " + std::to_string(lengths.query_len));
        reported = true;
      }
      if (!reported && mask.kind == ExplicitMaskKind::branches &&
          lengths.query_len % mask.branches != 0) {
        add("/mask/explicit/branches", "sequence " + std::to_string(seq) + "'s query_len (" +
                                           std::to_string(lengths.query_len) +
                                           ") is not a multiple of " +
                                           std::to_string(mask.branches));
        reported = true;
      }
      ++seq;
    });
  }
};

}  // namespace

double WorkloadSpec::effective_softmax_scale() const {
  if (model.softmax_scale) return *model.softmax_scale;
  if (model.latent()) {
    return 1.0 / std::sqrt(double(model.qk_nope_head_dim.value_or(kDefaultQkNopeHeadDim) +
                                  model.qk_rope_head_dim));
  }
  return 1.0 / std::sqrt(double(model.head_dim));
}

std::vector<std::string> validate_workload(const WorkloadSpec& spec, size_t* omitted) {
  SpecReader reader("", &spec);
  reader.read(to_json(spec));
  if (omitted != nullptr) *omitted = reader.omitted_problems;
  return reader.problems;
}

WorkloadSpec parse_workload(std::string_view text, const std::string& source,
                            const std::string& base_dir) {
  StrictJsonResult parsed = parse_strict_json(text);
  if (!parsed.complete) throw InputError(source, parsed.problems, parsed.omitted_problems);
  SpecReader reader(base_dir, nullptr);
  WorkloadSpec spec = reader.read(parsed.value);
  std::vector<std::string> problems = std::move(parsed.problems);  // duplicate keys
  problems.insert(problems.end(), reader.problems.begin(), reader.problems.end());
  const size_t omitted = parsed.omitted_problems + reader.omitted_problems;
  if (!problems.empty() || omitted > 0) throw InputError(source, problems, omitted);
  return spec;
}

WorkloadSpec load_workload_file(const std::string& path) {
  const size_t max_bytes = StrictJsonLimits{}.max_bytes;
  BoundedReadFailure failure;
  const std::optional<std::string> text = read_bounded_file(path, max_bytes, failure);
  if (!text) {
    if (failure.kind == BoundedReadFailure::Kind::too_large) {
      throw InputError(path, {"(top level): the file is larger than the limit of " +
                              std::to_string(max_bytes) + " bytes"});
    }
    throw InputError(path, {describe_failure(failure, max_bytes)});
  }
  return parse_workload(*text, path, directory_of(path));
}

}  // namespace attn
