// JSON traces: JSON lines (one object per request, the columns as keys; other keys ignored) and
// one JSON object of equal-length arrays (vLLM's benchmark results: "input_lens",
// "output_lens"; other members ignored). Read strictly (workloads/strict_json.hpp): duplicate
// keys, NaN and comments are errors, as in a workload file.
#include "workloads/strict_json.hpp"
#include "workloads/trace_file.hpp"

namespace attn {

namespace {

using nlohmann::json;

// The value as a trace length, or -1 (not an integer, or outside 1..kMaxTraceLength).
int64_t length_of(const json& value) {
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    return v >= 1 && v <= uint64_t(kMaxTraceLength) ? int64_t(v) : -1;
  }
  if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    return v >= 1 && v <= kMaxTraceLength ? v : -1;
  }
  return -1;
}

std::string shown(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string expected_length() {
  return "expected an integer in 1.." + std::to_string(kMaxTraceLength);
}

void read_jsonl(std::string_view text, const TraceColumns& columns, TraceRows& out,
                TraceProblems& problems) {
  StrictJsonLimits line_limits;
  line_limits.max_depth = 16;
  size_t line_number = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    begin = end + 1;
    ++line_number;
    StrictJsonResult parsed = parse_strict_json(line, line_limits);
    if (!parsed.complete || !parsed.problems.empty()) {
      const std::string first = parsed.problems.empty() ? "not JSON" : parsed.problems.front();
      problems.add(line_number, "expected one JSON object (" + first + ")");
      continue;
    }
    if (!parsed.value.is_object()) {
      problems.add(line_number, "expected a JSON object, got " + json_type_name(parsed.value) +
                                    problems.got(line));
      continue;
    }
    int64_t lengths[2] = {-1, -1};
    const std::string* names[2] = {&columns.context, &columns.query};
    for (int c = 0; c < 2; ++c) {
      auto it = parsed.value.find(*names[c]);
      if (it == parsed.value.end()) {
        problems.add(line_number, "no key \"" + *names[c] + "\"" + problems.got(line));
        continue;
      }
      lengths[c] = length_of(*it);
      if (lengths[c] < 0) {
        problems.add(line_number,
                     "\"" + *names[c] + "\": " + expected_length() + problems.got(shown(*it)));
      }
    }
    if (lengths[0] < 0 || lengths[1] < 0) continue;
    if (int64_t(out.rows.size()) == kMaxTraceRows) {
      problems.add(line_number,
                   "the trace has more than " + std::to_string(kMaxTraceRows) + " rows");
      break;
    }
    out.rows.emplace_back(lengths[0], lengths[1]);
  }
  if (line_number == 0) problems.add(1, "the file is empty (expected one JSON object per line)");
  if (!problems.any() && out.rows.empty()) problems.add(1, "the trace has no rows");
}

void read_json_arrays(std::string_view text, const TraceColumns& columns, TraceRows& out,
                      TraceProblems& problems) {
  StrictJsonResult parsed = parse_strict_json(text);
  if (!parsed.complete || !parsed.problems.empty()) {
    for (const std::string& p : parsed.problems) problems.add_located("(json)", p);
    if (parsed.problems.empty()) problems.add_located("(json)", "not JSON");
    return;
  }
  if (!parsed.value.is_object()) {
    problems.add_located("(top level)", "expected an object whose members \"" + columns.context +
                                            "\" and \"" + columns.query + "\" are arrays, got " +
                                            json_type_name(parsed.value));
    return;
  }
  const json* arrays[2] = {nullptr, nullptr};
  const std::string* names[2] = {&columns.context, &columns.query};
  for (int c = 0; c < 2; ++c) {
    auto it = parsed.value.find(*names[c]);
    if (it == parsed.value.end()) {
      problems.add_located("/" + json_pointer_token(*names[c]), "missing member");
    } else if (!it->is_array()) {
      problems.add_located("/" + json_pointer_token(*names[c]),
                           "expected an array, got " + json_type_name(*it));
    } else {
      arrays[c] = &*it;
    }
  }
  if (!arrays[0] || !arrays[1]) return;
  if (arrays[0]->size() != arrays[1]->size()) {
    problems.add_located("(top level)", "\"" + columns.context + "\" has " +
                                            std::to_string(arrays[0]->size()) + " entries, \"" +
                                            columns.query + "\" " +
                                            std::to_string(arrays[1]->size()));
    return;
  }
  if (int64_t(arrays[0]->size()) > kMaxTraceRows) {
    problems.add_located("(top level)",
                         "the trace has more than " + std::to_string(kMaxTraceRows) + " rows");
    return;
  }
  for (size_t i = 0; i < arrays[0]->size(); ++i) {
    int64_t lengths[2];
    for (int c = 0; c < 2; ++c) {
      lengths[c] = length_of((*arrays[c])[i]);
      if (lengths[c] < 0) {
        problems.add_located("/" + json_pointer_token(*names[c]) + "/" + std::to_string(i),
                             expected_length() + problems.got(shown((*arrays[c])[i])));
      }
    }
    if (lengths[0] > 0 && lengths[1] > 0) out.rows.emplace_back(lengths[0], lengths[1]);
  }
  if (!problems.any() && out.rows.empty()) problems.add_located("(top level)", "no rows");
}

}  // namespace

TraceRows parse_trace_jsonl(std::string_view text, const TraceColumns& columns) {
  TraceRows out;
  TraceProblems problems(out);
  read_jsonl(text, columns, out, problems);
  problems.finish();
  return out;
}

TraceRows parse_trace_json_arrays(std::string_view text, const TraceColumns& columns) {
  TraceRows out;
  TraceProblems problems(out);
  read_json_arrays(text, columns, out, problems);
  problems.finish();
  return out;
}

}  // namespace attn
