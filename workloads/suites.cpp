#include "workloads/suites.hpp"

#include <sys/stat.h>
#include <algorithm>
#include <set>

#include "base/bounded_file.hpp"
#include "base/errors.hpp"
#include "base/glob.hpp"
#include "workloads/json_field_reader.hpp"
#include "workloads/presets.hpp"
#include "workloads/referenced_file.hpp"
#include "workloads/strict_json.hpp"

namespace attn {

namespace {

constexpr int kSuiteSchemaVersion = 1;
// A suite is a list a person reads; far more workloads than this is a mistake, and each one is
// parsed (and later generated) in turn.
constexpr size_t kMaxSuiteWorkloads = 1000;

EmbeddedNamedFiles suites() {
  return {kWorkloadSuites, kWorkloadSuites_count, "workloads/suites/", ".json"};
}

// The suite's own fields; each workload entry is a preset name or a workload object, read by the
// workload parser (its problems are re-rooted under the entry's pointer).
class SuiteReader : public JsonFieldReader {
 public:
  SuiteReader(std::string source, std::string base_dir)
      : JsonFieldReader(kSuiteSchemaVersion),
        source_(std::move(source)),
        base_dir_(std::move(base_dir)) {}

  Suite read(const json& doc) {
    Suite suite;
    suite.source = source_;
    if (!doc.is_object()) {
      add("(top level)", "a suite is a JSON object, got " + describe_wrong_type(doc));
      return suite;
    }
    check_keys(doc, "", {"schema_version", "name", "description", "workloads"});
    bool ok = true;
    if (auto v = integer(doc, "", "schema_version", true, 1, 1000, ok);
        v && *v != kSuiteSchemaVersion) {
      add("/schema_version", "this attn-bench reads suite schema version " +
                                 std::to_string(kSuiteSchemaVersion) + ", got " +
                                 std::to_string(*v));
    }
    if (const std::string* name = string_member(doc, "", "name", true, ok)) {
      check_text(*name, "/name", 1, 128, false);
      if (name->find('#') != std::string::npos) add("/name", "must not contain '#'");
      suite.name = *name;
    }
    if (const std::string* text = string_member(doc, "", "description", false, ok)) {
      check_text(*text, "/description", 0, 4000, false);
      suite.description = *text;
    }
    const json* list = typed_member(doc, "", "workloads", true, ok, &json::is_array, "an array");
    if (list == nullptr) return suite;
    if (list->empty()) add("/workloads", "a suite needs at least one workload");
    if (list->size() > kMaxSuiteWorkloads) {
      add("/workloads", "at most " + std::to_string(kMaxSuiteWorkloads) + " workloads, got " +
                            std::to_string(list->size()));
      return suite;
    }
    std::set<std::string> names;
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string pointer = "/workloads/" + std::to_string(i);
      std::optional<WorkloadSpec> spec = entry((*list)[i], pointer);
      if (!spec) continue;
      if (!names.insert(spec->name).second) {
        add(pointer, "a second workload named " + show(json(spec->name)) +
                         "; names within a suite must be unique");
        continue;
      }
      suite.workloads.push_back(std::move(*spec));
    }
    return suite;
  }

 private:
  std::optional<WorkloadSpec> entry(const json& value, const std::string& pointer) {
    if (value.is_string()) {
      const std::string& name = value.get_ref<const std::string&>();
      if (!preset_text(name)) {
        add(pointer, "no preset named " + show(value) + " (`attn-bench list` shows the presets)");
        return std::nullopt;
      }
      return load_preset(name);
    }
    if (!value.is_object()) {
      add(pointer,
          "expected a preset name or a workload object, got " + describe_wrong_type(value));
      return std::nullopt;
    }
    try {
      return parse_workload(value.dump(), source_, base_dir_);
    } catch (const InputError& e) {
      for (const std::string& problem : e.problems()) {
        // The workload reader's pointers start at the entry's root: "/model/head_dim: ...".
        std::string rerooted = problem.rfind("(top level)", 0) == 0 ? pointer + problem.substr(11)
                               : problem.rfind("/", 0) == 0         ? pointer + problem
                                                                    : pointer + ": " + problem;
        if (problems.size() < kMaxListedProblems) {
          problems.push_back(std::move(rerooted));
        } else {
          ++omitted_problems;
        }
      }
      return std::nullopt;
    }
  }

  std::string source_;
  std::string base_dir_;
};

}  // namespace

std::vector<std::string> suite_names() {
  return suites().names();
}

std::optional<std::string_view> suite_text(const std::string& name) {
  return suites().text(name);
}

Suite parse_suite(std::string_view text, const std::string& source, const std::string& base_dir) {
  StrictJsonResult parsed = parse_strict_json(text);
  if (!parsed.complete) throw InputError(source, parsed.problems, parsed.omitted_problems);
  SuiteReader reader(source, base_dir);
  Suite suite = reader.read(parsed.value);
  std::vector<std::string> problems = std::move(parsed.problems);
  problems.insert(problems.end(), reader.problems.begin(), reader.problems.end());
  const size_t omitted = parsed.omitted_problems + reader.omitted_problems;
  if (!problems.empty() || omitted > 0) throw InputError(source, problems, omitted);
  return suite;
}

namespace {

// The suite a file path or a built-in suite's name holds (the path first, as load_suite says).
Suite parse_suite_argument(const std::string& argument) {
  struct stat info {};
  if (::lstat(argument.c_str(), &info) == 0) {
    const size_t max_bytes = StrictJsonLimits{}.max_bytes;
    BoundedReadFailure failure;
    const std::optional<std::string> text = read_bounded_file(argument, max_bytes, failure);
    if (!text) throw InputError(printable_path(argument), {describe_failure(failure, max_bytes)});
    return parse_suite(*text, printable_path(argument), directory_of(argument));
  }
  if (std::optional<std::string_view> text = suite_text(argument)) {
    return parse_suite(*text, "suite:" + argument);
  }
  std::string known;
  for (const std::string& name : suite_names()) known += (known.empty() ? "" : ", ") + name;
  throw UsageError("no suite file or built-in suite named '" + printable_path(argument) +
                   "' (built-in suites: " + (known.empty() ? "none" : known) + ")");
}

}  // namespace

Suite load_suite(const std::string& argument) {
  Suite suite = parse_suite_argument(argument);
  suite.argument = argument;
  return suite;
}

std::optional<SuiteWorkloadReference> split_suite_reference(const std::string& argument) {
  const size_t hash = argument.rfind('#');
  if (hash == std::string::npos) return std::nullopt;
  return SuiteWorkloadReference{argument.substr(0, hash), argument.substr(hash + 1)};
}

namespace {

// The suite's workload names, for a message (cut after about 2000 characters).
std::string workload_names(const Suite& suite) {
  std::string known;
  for (const WorkloadSpec& spec : suite.workloads) {
    if (known.size() > 2000) {
      known += ", ...";
      break;
    }
    known += (known.empty() ? "" : ", ") + spec.name;
  }
  return known;
}

}  // namespace

const WorkloadSpec& suite_workload(const Suite& suite, const std::string& name) {
  for (const WorkloadSpec& spec : suite.workloads) {
    if (spec.name == name) return spec;
  }
  throw UsageError("suite '" + suite.name + "' has no workload named '" + printable_path(name) +
                   "' (its workloads: " + workload_names(suite) + ")");
}

Suite load_suite_selection(const std::string& argument) {
  struct stat info {};
  const std::optional<SuiteWorkloadReference> reference = split_suite_reference(argument);
  if (!reference || ::lstat(argument.c_str(), &info) == 0) return load_suite(argument);
  Suite suite = load_suite(reference->suite);
  const auto unmatched = [&](const WorkloadSpec& spec) {
    return !glob_match(reference->workload, spec.name);
  };
  if (std::all_of(suite.workloads.begin(), suite.workloads.end(), unmatched)) {
    throw UsageError("no workload of suite '" + suite.name + "' matches '" +
                     printable_path(reference->workload) +
                     "' (its workloads: " + workload_names(suite) + ")");
  }
  suite.workloads.erase(std::remove_if(suite.workloads.begin(), suite.workloads.end(), unmatched),
                        suite.workloads.end());
  suite.name += "#" + reference->workload;
  return suite;
}

}  // namespace attn
