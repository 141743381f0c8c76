#include "kernels/user/user_kernel_spec.hpp"

#include <algorithm>
#include <optional>
#include <regex>
#include <set>
#include <utility>

#include "base/bounded_file.hpp"
#include "base/errors.hpp"
#include "workloads/batch_features.hpp"
#include "workloads/json_field_reader.hpp"
#include "workloads/referenced_file.hpp"
#include "workloads/strict_json.hpp"

namespace attn {

namespace {

constexpr size_t kMaxSpecBytes = size_t(1) << 20;
constexpr size_t kMaxSourceBytes = size_t(1) << 20;
constexpr size_t kMaxSources = 16;
constexpr size_t kMaxAxes = 8;
constexpr size_t kMaxAxisValues = 64;
constexpr size_t kMaxTemplateArgs = 16;
constexpr size_t kMaxConstraints = 64;
// Combinations of axis values checked at load time (and the most a space may hold).
constexpr size_t kMaxCombinations = 4096;
constexpr int64_t kMaxAxisValue = 2147483647;

// Features every batch reports: a spec that leaves one out would decline every batch.
const std::vector<std::string> kAlwaysReported = {feature::kQueries,  feature::kMask,
                                                  feature::kKvLayout, feature::kDtype,
                                                  feature::kHeadDim,  feature::kPageSize};

// Batch features the parameter block (attn_bench/user_kernel.h) cannot describe, and why: a spec
// may not declare them.
const std::vector<std::pair<std::string, std::string>> kNotInParameterBlock = {
    {feature::kVHeadDim, "it gives V the width and strides of K"},
    {feature::kLatentAttention, "it has no latent cache"},
    {feature::kKvLoraRank, "it has no latent cache"},
    {feature::kQkRopeHeadDim, "it has no latent cache"}};

class UserSpecReader : public JsonFieldReader {
 public:
  explicit UserSpecReader(std::string directory)
      : JsonFieldReader(kUserKernelSpecVersion), directory_(std::move(directory)) {}

  UserKernelSpec read(const json& root) {
    UserKernelSpec spec;
    if (!root.is_object()) {
      add("(top level)", "expected an object, got " + describe_wrong_type(root));
      return spec;
    }
    check_keys(root, "",
               {"schema_version", "name", "family", "summary", "sources", "kernel", "axes",
                "constraints", "features", "launch", "min_compute_capability"});
    bool ok = true;
    integer(root, "", "schema_version", true, kUserKernelSpecVersion, kUserKernelSpecVersion, ok);
    read_name(root, spec);
    read_family(root, spec);
    if (const std::string* summary = string_member(root, "", "summary", false, ok)) {
      check_text(*summary, "/summary", 0, 200, false);
      spec.summary = *summary;
    }
    if (auto cc = integer(root, "", "min_compute_capability", false, 70, 200, ok)) {
      spec.min_compute_capability = int(*cc);
    }
    read_sources(root, spec);
    read_axes(root, spec);  // before the expressions: they may name the axes
    read_kernel(root, spec);
    read_constraints(root, spec);
    read_features(root, spec);
    read_launch(root, spec);
    if (problems.empty() && omitted_problems == 0) check_over_axes(spec);
    return spec;
  }

 private:
  static bool is_identifier(const std::string& text) {
    static const std::regex pattern("[a-z][a-z0-9_]{0,31}");
    return std::regex_match(text, pattern);
  }

  void read_name(const json& root, UserKernelSpec& spec) {
    bool ok = true;
    const std::string* name = string_member(root, "", "name", true, ok);
    if (name == nullptr) return;
    static const std::regex pattern("[a-z0-9][a-z0-9_]{0,47}");
    if (!std::regex_match(*name, pattern)) {
      add("/name",
          "must be 1 to 48 lowercase letters, digits and underscores, starting with a letter or "
          "digit (it becomes the variant name user.<name>), got " +
              show(json(*name)));
      return;
    }
    spec.name = *name;
  }

  void read_family(const json& root, UserKernelSpec& spec) {
    bool ok = true;
    const std::string* family = string_member(root, "", "family", true, ok);
    if (family == nullptr) return;
    // mla_decode is not offered: a user kernel reads the standard-attention parameter block
    // (attn_bench/user_kernel.h), which has no latent cache.
    auto parsed = family_from_string(*family);
    if (parsed && *parsed != Family::mla_decode) {
      spec.family = *parsed;
    } else {
      add("/family",
          "must be one of \"paged_decode\", \"prefix_prefill\", \"blocksparse\", \"flash_fwd\", "
          "got " +
              show(json(*family)));
    }
  }

  void read_sources(const json& root, UserKernelSpec& spec) {
    const json* sources = member(root, "", "sources", true);
    if (sources == nullptr) return;
    if (!sources->is_array() || sources->empty() || sources->size() > kMaxSources) {
      add("/sources", "expected an array of 1 to " + std::to_string(kMaxSources) +
                          " file names, got " + describe_count(*sources));
      return;
    }
    std::set<std::string> seen;
    for (size_t i = 0; i < sources->size(); ++i) {
      const std::string pointer = "/sources/" + std::to_string(i);
      const json& entry = (*sources)[i];
      if (!entry.is_string()) {
        add(pointer, "expected a file name, got " + describe_wrong_type(entry));
        continue;
      }
      const std::string& name = entry.get_ref<const std::string&>();
      static const std::regex pattern("[A-Za-z0-9_./-]{1,200}");
      if (!std::regex_match(name, pattern) || name.front() == '/' ||
          name.find("..") != std::string::npos) {
        add(pointer,
            "must be a path relative to the spec's folder, of letters, digits and _ . / - without "
            "'..', got " +
                show(entry));
        continue;
      }
      if (!seen.insert(name).second) {
        add(pointer, "names " + show(entry) + " a second time");
        continue;
      }
      const std::string path = directory_.empty() ? name : directory_ + "/" + name;
      BoundedReadFailure failure;
      std::optional<std::string> text = read_bounded_file(path, kMaxSourceBytes, failure);
      if (!text) {
        add(pointer, "cannot read " + printable_path(name) + ": " +
                         describe_failure(failure, kMaxSourceBytes));
        continue;
      }
      if (text->find('\0') != std::string::npos) {
        add(pointer, printable_path(name) + " holds a NUL byte: not CUDA source");
        continue;
      }
      spec.sources.push_back({name, std::move(*text)});
    }
  }

  void read_axes(const json& root, UserKernelSpec& spec) {
    bool ok = true;
    const json* axes = object_member(root, "", "axes", true, ok);
    if (axes == nullptr) return;
    if (axes->size() > kMaxAxes) {
      add("/axes", "has " + std::to_string(axes->size()) + " axes; at most " +
                       std::to_string(kMaxAxes) + " are allowed");
      return;
    }
    size_t combinations = 1;
    for (const auto& [name, values] : axes->items()) {
      const std::string pointer = "/axes/" + json_pointer_token(name);
      axis_names_.push_back(name);  // known to expressions even when its values are wrong
      if (!is_identifier(name)) {
        add(pointer,
            "an axis name must be 1 to 32 lowercase letters, digits and underscores, starting "
            "with a letter");
        continue;
      }
      const auto& quantities = batch_quantity_names();
      const auto& functions = Expression::functions();
      if (std::find(quantities.begin(), quantities.end(), name) != quantities.end() ||
          std::find(functions.begin(), functions.end(), name) != functions.end()) {
        add(pointer, "'" + name + "' is a batch quantity or function name; give the axis another");
        continue;
      }
      if (!values.is_array() || values.empty() || values.size() > kMaxAxisValues) {
        add(pointer, "expected an array of 1 to " + std::to_string(kMaxAxisValues) +
                         " integers, got " + describe_count(values));
        continue;
      }
      ConfigAxis axis{name, {}, "from " + spec_label()};
      bool axis_ok = true;
      for (size_t i = 0; i < values.size(); ++i) {
        const json& v = values[i];
        const std::string at = pointer + "/" + std::to_string(i);
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxAxisValue ||
            (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(kMaxAxisValue))) {
          add(at, "expected an integer from 0 to " + std::to_string(kMaxAxisValue) + ", got " +
                      describe_wrong_type(v));
          axis_ok = false;
          continue;
        }
        const int64_t value = v.get<int64_t>();
        if (std::find(axis.values.begin(), axis.values.end(), value) != axis.values.end()) {
          add(at, std::to_string(value) + " is listed twice");
          axis_ok = false;
          continue;
        }
        axis.values.push_back(value);
      }
      if (!axis_ok) continue;
      combinations *= axis.values.size();
      spec.axes.push_back(std::move(axis));
    }
    if (combinations > kMaxCombinations) {
      add("/axes", "spans " + std::to_string(combinations) + " combinations; at most " +
                       std::to_string(kMaxCombinations) + " are allowed");
    }
  }

  // "an empty array", "an array of 70", or the type of anything else.
  static std::string describe_count(const json& value) {
    if (!value.is_array()) return describe_wrong_type(value);
    return value.empty() ? "an empty array" : "an array of " + std::to_string(value.size());
  }

  std::string spec_label() const { return "the kernel spec"; }

  // An expression: a string, or an integer written as one.
  std::optional<SpecExpression> expression(const json& value, const std::string& pointer) {
    std::string text;
    if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_number_integer()) {
      text = value.dump();
    } else {
      add(pointer,
          "expected an expression (a string or an integer), got " + describe_wrong_type(value));
      return std::nullopt;
    }
    try {
      SpecExpression out{pointer, Expression::parse(text)};
      bool names_ok = true;
      for (const auto& [name, column] : out.expression.names()) {
        if (std::find(axis_names_.begin(), axis_names_.end(), name) != axis_names_.end()) continue;
        const auto& quantities = batch_quantity_names();
        if (std::find(quantities.begin(), quantities.end(), name) != quantities.end()) continue;
        std::vector<std::string> known = axis_names_;
        known.insert(known.end(), quantities.begin(), quantities.end());
        const std::string best = closest_spelling(name, known);
        add(pointer, "column " + std::to_string(column) + ": unknown name '" + name +
                         "' (not an axis or a batch quantity)" +
                         (best.empty() ? "" : "; did you mean \"" + best + "\"?"));
        names_ok = false;
      }
      if (!names_ok) return std::nullopt;
      return out;
    } catch (const ExpressionError& e) {
      add(pointer, e.what());
      return std::nullopt;
    }
  }

  void read_kernel(const json& root, UserKernelSpec& spec) {
    bool ok = true;
    const json* kernel = object_member(root, "", "kernel", true, ok);
    if (kernel == nullptr) return;
    check_keys(*kernel, "/kernel", {"name", "template_args"});
    if (const std::string* name = string_member(*kernel, "/kernel", "name", true, ok)) {
      static const std::regex pattern(
          "[A-Za-z_][A-Za-z0-9_]{0,63}(::[A-Za-z_][A-Za-z0-9_]{0,63}){0,7}");
      if (std::regex_match(*name, pattern)) {
        spec.kernel = *name;
      } else {
        add("/kernel/name",
            "must be a C++ name such as \"my_lab::paged_decode\", got " + show(json(*name)));
      }
    }
    const json* args = member(*kernel, "/kernel", "template_args", false);
    if (args == nullptr) return;
    if (!args->is_array() || args->size() > kMaxTemplateArgs) {
      add("/kernel/template_args", "expected an array of at most " +
                                       std::to_string(kMaxTemplateArgs) + " expressions, got " +
                                       describe_wrong_type(*args));
      return;
    }
    for (size_t i = 0; i < args->size(); ++i) {
      if (auto e = expression((*args)[i], "/kernel/template_args/" + std::to_string(i))) {
        spec.template_args.push_back(std::move(*e));
      }
    }
  }

  void read_constraints(const json& root, UserKernelSpec& spec) {
    const json* constraints = member(root, "", "constraints", false);
    if (constraints == nullptr) return;
    if (!constraints->is_array() || constraints->size() > kMaxConstraints) {
      add("/constraints", "expected an array of at most " + std::to_string(kMaxConstraints) +
                              " expressions, got " + describe_wrong_type(*constraints));
      return;
    }
    for (size_t i = 0; i < constraints->size(); ++i) {
      const std::string pointer = "/constraints/" + std::to_string(i);
      if (!(*constraints)[i].is_string()) {
        add(pointer,
            "expected a condition (a string), got " + describe_wrong_type((*constraints)[i]));
        continue;
      }
      if (auto e = expression((*constraints)[i], pointer))
        spec.constraints.push_back(std::move(*e));
    }
  }

  void read_features(const json& root, UserKernelSpec& spec) {
    bool ok = true;
    const json* features = object_member(root, "", "features", true, ok);
    if (features == nullptr) return;
    json declared = *features;
    for (const auto& [name, why] : kNotInParameterBlock) {
      if (!declared.contains(name)) continue;
      add("/features/" + name,
          "not available to user kernels: the parameter block (attn_bench/user_kernel.h) cannot "
          "describe it (" +
              why + ")");
      declared.erase(name);
    }
    check_keys(declared, "/features", declarable_features());
    for (const std::string& required : kAlwaysReported) {
      if (!features->contains(required)) {
        add("/features/" + required, "missing: every batch reports its " +
                                         find_feature(required)->description +
                                         ", so a kernel must say which it implements");
      }
    }
    for (const auto& [name, value] : declared.items()) {
      const FeatureInfo* info = find_feature(name);
      if (info == nullptr) continue;  // reported by check_keys
      const std::string pointer = "/features/" + json_pointer_token(name);
      switch (info->kind) {
        case FeatureKind::flag:
          if (!value.is_boolean()) {
            add(pointer, "expected true (implemented) or false, got " + describe_wrong_type(value));
          } else if (value.get<bool>()) {
            spec.features.with(name);
          }
          break;
        case FeatureKind::choice:
          read_choice(*info, value, pointer, spec);
          break;
        case FeatureKind::number:
          read_numbers(*info, value, pointer, spec);
          break;
      }
    }
  }

  void read_choice(const FeatureInfo& info, const json& value, const std::string& pointer,
                   UserKernelSpec& spec) {
    if (!value.is_array() || value.empty()) {
      add(pointer, "expected a non-empty array of names, got " + describe_wrong_type(value));
      return;
    }
    std::vector<std::string> chosen;
    for (size_t i = 0; i < value.size(); ++i) {
      const std::string at = pointer + "/" + std::to_string(i);
      const json& v = value[i];
      std::string allowed;
      for (const std::string& c : info.choices) allowed += (allowed.empty() ? "" : ", ") + c;
      if (!v.is_string() || std::find(info.choices.begin(), info.choices.end(),
                                      v.get<std::string>()) == info.choices.end()) {
        add(at, "must be one of " + allowed + ", got " + show(v));
        continue;
      }
      if (info.name == feature::kKvLayout && v.get<std::string>() == "vllm") {
        add(at,
            "user kernels read the pools through the strides of NHD and HND; vllm's split "
            "layout is not offered to them");
        continue;
      }
      chosen.push_back(v.get<std::string>());
    }
    if (!chosen.empty()) spec.features.with(info.name, chosen);
  }

  void read_numbers(const FeatureInfo& info, const json& value, const std::string& pointer,
                    UserKernelSpec& spec) {
    const int64_t lo = info.numbers.empty() ? 1 : info.numbers.front();
    const int64_t hi = info.numbers.empty() ? 1 : info.numbers.back();
    if (value.is_object()) {
      check_keys(value, pointer, {"min", "max"});
      bool ok = true;
      auto min = integer(value, pointer, "min", true, lo, hi, ok);
      auto max = integer(value, pointer, "max", true, lo, hi, ok);
      if (min && max) {
        if (*min > *max) {
          add(pointer, "min " + std::to_string(*min) + " is above max " + std::to_string(*max));
        } else {
          spec.features.with_range(info.name, *min, *max);
        }
      }
      return;
    }
    if (!value.is_array() || value.empty()) {
      add(pointer, "expected a non-empty array of integers or {\"min\": ..., \"max\": ...}, got " +
                       describe_wrong_type(value));
      return;
    }
    std::vector<int64_t> numbers;
    for (size_t i = 0; i < value.size(); ++i) {
      const json& v = value[i];
      const std::string at = pointer + "/" + std::to_string(i);
      if (!v.is_number_integer() || std::find(info.numbers.begin(), info.numbers.end(),
                                              v.get<int64_t>()) == info.numbers.end()) {
        add(at, "is no " + info.description + " a workload can have, got " + show(v));
        continue;
      }
      numbers.push_back(v.get<int64_t>());
    }
    if (!numbers.empty()) spec.features.with_numbers(info.name, numbers);
  }

  void read_launch(const json& root, UserKernelSpec& spec) {
    bool ok = true;
    const json* launch = object_member(root, "", "launch", true, ok);
    if (launch == nullptr) return;
    check_keys(*launch, "/launch", {"grid", "block", "shared_bytes"});
    read_dims(*launch, "grid", spec.grid);
    read_dims(*launch, "block", spec.block);
    if (const json* shared = member(*launch, "/launch", "shared_bytes", false)) {
      if (auto e = expression(*shared, "/launch/shared_bytes")) {
        spec.shared_bytes.push_back(std::move(*e));
      }
    } else {
      spec.shared_bytes.push_back({"/launch/shared_bytes", Expression::parse("0")});
    }
  }

  void read_dims(const json& launch, const char* key, std::vector<SpecExpression>& out) {
    const json* dims = member(launch, "/launch", key, true);
    const std::string pointer = std::string("/launch/") + key;
    if (dims == nullptr) return;
    if (!dims->is_array() || dims->size() != 3) {
      add(pointer, "expected an array of 3 expressions (x, y, z), got " + describe_count(*dims));
      return;
    }
    for (size_t i = 0; i < 3; ++i) {
      if (auto e = expression((*dims)[i], pointer + "/" + std::to_string(i))) {
        out.push_back(std::move(*e));
      }
    }
  }

  // Every combination of axis values.
  static std::vector<std::map<std::string, int64_t>> combinations(const UserKernelSpec& spec) {
    std::vector<std::map<std::string, int64_t>> out(1);
    for (const ConfigAxis& axis : spec.axes) {
      std::vector<std::map<std::string, int64_t>> next;
      for (const auto& partial : out) {
        for (int64_t v : axis.values) {
          auto with = partial;
          with[axis.name] = v;
          next.push_back(std::move(with));
        }
      }
      out = std::move(next);
    }
    return out;
  }

  static std::string describe(const std::map<std::string, int64_t>& config) {
    std::string text;
    for (const auto& [name, value] : config) {
      text += (text.empty() ? "" : ", ") + name + "=" + std::to_string(value);
    }
    return text;
  }

  static bool axes_only(const SpecExpression& e) {
    const auto& quantities = batch_quantity_names();
    for (const auto& [name, column] : e.expression.names()) {
      if (std::find(quantities.begin(), quantities.end(), name) != quantities.end()) return false;
    }
    return true;
  }

  // Expressions that name only axes are evaluated for every combination now: an error there is
  // an error of the spec, whatever the batch. Then each axis value must pass the axes-only
  // constraints in some combination, or it is a value the kernel can never run.
  void check_over_axes(const UserKernelSpec& spec) {
    const auto all = combinations(spec);
    std::vector<const SpecExpression*> checked;
    for (const auto* group :
         {&spec.template_args, &spec.constraints, &spec.grid, &spec.block, &spec.shared_bytes}) {
      for (const SpecExpression& e : *group) {
        if (axes_only(e)) checked.push_back(&e);
      }
    }
    std::vector<bool> passes(all.size(), true);
    for (const SpecExpression* e : checked) {
      const bool is_constraint = e->pointer.rfind("/constraints/", 0) == 0;
      for (size_t c = 0; c < all.size(); ++c) {
        try {
          const int64_t value = e->expression.evaluate(all[c]);
          if (is_constraint && value == 0) passes[c] = false;
        } catch (const ExpressionError& error) {
          add(e->pointer, std::string(error.what()) + " (with " + describe(all[c]) + ")");
          return;  // one combination shows the mistake
        }
      }
    }
    for (const ConfigAxis& axis : spec.axes) {
      for (size_t i = 0; i < axis.values.size(); ++i) {
        bool usable = false;
        for (size_t c = 0; c < all.size() && !usable; ++c) {
          usable = passes[c] && all[c].at(axis.name) == axis.values[i];
        }
        if (!usable) {
          add("/axes/" + json_pointer_token(axis.name) + "/" + std::to_string(i),
              std::to_string(axis.values[i]) +
                  " breaks the constraints in every combination of the other axes");
        }
      }
    }
  }

  std::string directory_;
  std::vector<std::string> axis_names_;
};

}  // namespace

std::vector<std::string> UserKernelSpec::axis_names() const {
  std::vector<std::string> names;
  for (const ConfigAxis& axis : axes) names.push_back(axis.name);
  return names;
}

std::vector<std::string> declarable_features() {
  std::vector<std::string> names;
  for (const FeatureInfo& info : feature_schema()) {
    const bool excluded = std::any_of(kNotInParameterBlock.begin(), kNotInParameterBlock.end(),
                                      [&](const auto& entry) { return entry.first == info.name; });
    if (!excluded) names.push_back(info.name);
  }
  return names;
}

const std::vector<std::string>& batch_quantity_names() {
  static const std::vector<std::string> names = {
      "compute_capability", "group",         "head_dim",         "max_kv_len",
      "max_pages_per_seq",  "max_query_len", "max_shared_bytes", "num_kv_heads",
      "num_pages",          "num_q_heads",   "num_seqs",         "page_size",
      "sm_count",           "total_kv",      "total_q"};
  return names;
}

std::map<std::string, int64_t> batch_quantities(const Batch& batch, const Target& target) {
  const ModelShape& model = batch.spec.model;
  return {{"compute_capability", target.compute_capability()},
          {"group", model.num_q_heads / std::max(1, model.num_kv_heads)},
          {"head_dim", model.head_dim},
          {"max_kv_len", batch.max_kv_len()},
          {"max_pages_per_seq", batch.max_pages_per_seq},
          {"max_query_len", batch.max_query_len()},
          {"max_shared_bytes", target.max_shared_per_block},
          {"num_kv_heads", model.num_kv_heads},
          {"num_pages", batch.num_pages},
          {"num_q_heads", model.num_q_heads},
          {"num_seqs", batch.num_seqs},
          {"page_size", batch.page_size},
          {"sm_count", target.sm_count},
          {"total_kv", batch.total_kv},
          {"total_q", batch.total_q}};
}

UserKernelSpec parse_user_kernel_spec(const std::string& text, const std::string& path,
                                      const std::string& directory) {
  StrictJsonResult parsed = parse_strict_json(text, StrictJsonLimits{kMaxSpecBytes, 16, 100000});
  if (!parsed.complete) throw InputError(path, parsed.problems, parsed.omitted_problems);
  UserSpecReader reader(directory);
  UserKernelSpec spec = reader.read(parsed.value);
  spec.path = path;
  std::vector<std::string> problems = std::move(parsed.problems);  // duplicate keys
  problems.insert(problems.end(), reader.problems.begin(), reader.problems.end());
  const size_t omitted = parsed.omitted_problems + reader.omitted_problems;
  if (!problems.empty() || omitted > 0) throw InputError(path, problems, omitted);
  return spec;
}

UserKernelSpec load_user_kernel_spec(const std::string& path) {
  BoundedReadFailure failure;
  const std::optional<std::string> text = read_bounded_file(path, kMaxSpecBytes, failure);
  if (!text) throw InputError(path, {describe_failure(failure, kMaxSpecBytes)});
  return parse_user_kernel_spec(*text, path, directory_of(path));
}

}  // namespace attn
