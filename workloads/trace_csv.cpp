// CSV traces: a header row naming the columns, then one request per line with as many fields as
// the header. A field may be double-quoted (a doubled quote inside stands for one); a quoted field
// does not span lines. Only the two mapped columns are read; they must hold integers.
#include <optional>

#include "workloads/trace_file.hpp"

namespace attn {

namespace {

// The fields of one line, or nullopt when its quoting is broken.
std::optional<std::vector<std::string>> split_fields(std::string_view line) {
  std::vector<std::string> fields;
  size_t i = 0;
  while (true) {
    std::string field;
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (true) {
        if (i >= line.size()) return std::nullopt;  // no closing quote
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += line[i++];
      }
      if (i < line.size() && line[i] != ',') return std::nullopt;  // text after the quote
    } else {
      const size_t comma = line.find(',', i);
      const size_t end = comma == std::string_view::npos ? line.size() : comma;
      field = std::string(line.substr(i, end - i));
      if (field.find('"') != std::string::npos) return std::nullopt;  // a quote inside
      i = end;
    }
    fields.push_back(std::move(field));
    if (i >= line.size()) return fields;
    ++i;  // the comma
  }
}

std::string quoted_name(const std::string& name) {
  return "\"" + name + "\"";
}

}  // namespace

namespace {

void read_csv(std::string_view text, const TraceColumns& columns, TraceRows& out,
              TraceProblems& problems) {
  size_t context_at = 0, query_at = 0, width = 0;
  bool header_ok = false;
  size_t line_number = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    begin = end + 1;
    ++line_number;
    std::optional<std::vector<std::string>> fields = split_fields(line);
    if (line_number == 1) {
      if (!fields) {
        problems.add(1, "the header's quoting is broken" + problems.got(line));
        break;
      }
      width = fields->size();
      header_ok = true;
      for (const auto* wanted : {&columns.context, &columns.query}) {
        size_t found = 0, at = 0;
        for (size_t f = 0; f < fields->size(); ++f) {
          if ((*fields)[f] == *wanted) ++found, at = f;
        }
        if (found != 1) {
          problems.add(1, std::string(found == 0 ? "no column " : "more than one column ") +
                              quoted_name(*wanted) + " in the header" + problems.got(line));
          header_ok = false;
        }
        (wanted == &columns.context ? context_at : query_at) = at;
      }
      if (!header_ok) break;
      continue;
    }
    if (!fields || fields->size() != width) {
      problems.add(line_number, "expected " + std::to_string(width) +
                                    " comma-separated fields as in the header" +
                                    problems.got(line));
      continue;
    }
    const int64_t prompt = trace_length((*fields)[context_at]);
    const int64_t output = trace_length((*fields)[query_at]);
    // One problem per line: the first column that is wrong.
    if (prompt < 0 || output < 0) {
      const size_t at = prompt < 0 ? context_at : query_at;
      const std::string& name = prompt < 0 ? columns.context : columns.query;
      problems.add(line_number, "column " + quoted_name(name) + ": expected an integer in 1.." +
                                    std::to_string(kMaxTraceLength) + problems.got((*fields)[at]));
    }
    if (prompt < 0 || output < 0) continue;
    if (int64_t(out.rows.size()) == kMaxTraceRows) {
      problems.add(line_number,
                   "the trace has more than " + std::to_string(kMaxTraceRows) + " rows");
      break;
    }
    out.rows.emplace_back(prompt, output);
  }
  if (line_number == 0) {
    problems.add(1, "the file is empty (expected a header with the columns " +
                        quoted_name(columns.context) + " and " + quoted_name(columns.query) + ")");
  }
  if (header_ok && !problems.any() && out.rows.empty()) {
    problems.add(2, "the trace has no rows");
  }
}

}  // namespace

TraceRows parse_trace_csv(std::string_view text, const TraceColumns& columns) {
  TraceRows out;
  TraceProblems problems(out);
  read_csv(text, columns, out, problems);
  problems.finish();
  return out;
}

}  // namespace attn
