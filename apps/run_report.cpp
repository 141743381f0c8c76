#include "apps/run_report.hpp"

#include <nlohmann/json.hpp>

#include "results/fraction_marker.hpp"
#include "results/table.hpp"

namespace attn {

namespace {

using nlohmann::ordered_json;

// One row of the table: what each format shows of it.
struct ReportRow {
  std::vector<std::string> cells;  // the text table's cells
  ordered_json values;             // typed values, keyed as in CSV and JSON
};

const std::vector<std::pair<std::string, TextTable::Align>>& table_columns() {
  using A = TextTable::Align;
  static const std::vector<std::pair<std::string, TextTable::Align>> columns = {
      {"variant", A::left},      {"status", A::left},   {"median_us", A::right},
      {"p10..p90_us", A::right}, {"n", A::right},       {"noise", A::right},
      {"timer", A::left},        {"GB/s", A::right},    {"TFLOP/s", A::right},
      {"of ceiling", A::right},  {"of peak", A::right}, {"SM MHz", A::right},
      {"rel_err", A::right}};
  return columns;
}

// The keys of a row's values, in CSV column order.
const std::vector<std::string>& value_keys() {
  static const std::vector<std::string> keys = {
      "variant", "config",  "status",      "median_us",  "p10_us",
      "p90_us",  "samples", "noise",       "timer",      "launches_per_sample",
      "gbps",    "tflops",  "ceiling",     "of_ceiling", "of_peak",
      "sm_mhz",  "rel_err", "stop_reason", "reason"};
  return keys;
}

ordered_json optional_number(const std::optional<double>& v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}

ReportRow report_row(const BenchRow& row) {
  const Measurement& m = row.measurement;
  const bool timed = m.disposition == Disposition::passed;
  const CeilingFraction& against = row.against;
  const std::string status = timed && m.unstable ? "unstable" : to_string(m.disposition);
  const std::string timer = m.timing.timer == "graph"
                                ? format("graph x%d", m.timing.launches_per_sample)
                                : (m.timing.timer.empty() ? "-" : m.timing.timer);
  ReportRow r;
  r.cells = {row.full_name,
             status,
             timed ? format("%.2f", m.stats.median) : "-",
             timed ? format("%.2f..%.2f", m.stats.p10, m.stats.p90) : "-",
             timed ? std::to_string(m.stats.count) : "-",
             timed ? format("%.2f%%", m.timing.noise * 100) : "-",
             timed ? timer : "-",
             timed ? format("%.1f", m.gbps()) : "-",
             timed ? format("%.3f", m.tflops()) : "-",
             timed ? fraction_cell(against) : "-",
             timed ? peak_text(against) : "-",
             timed && m.clocks.median_mhz > 0 ? format("%.0f", m.clocks.median_mhz) : "-",
             m.verification.checked ? format("%.1e", m.verification.rel_l2_error) : "-"};
  const ordered_json none = nullptr;
  r.values["variant"] = row.full_name;
  r.values["config"] = m.config_key;
  r.values["status"] = status;
  r.values["median_us"] = timed ? ordered_json(m.stats.median) : none;
  r.values["p10_us"] = timed ? ordered_json(m.stats.p10) : none;
  r.values["p90_us"] = timed ? ordered_json(m.stats.p90) : none;
  r.values["samples"] = timed ? ordered_json(m.stats.count) : none;
  r.values["noise"] = timed ? ordered_json(m.timing.noise) : none;
  r.values["timer"] = timed && !m.timing.timer.empty() ? ordered_json(m.timing.timer) : none;
  r.values["launches_per_sample"] = timed ? ordered_json(m.timing.launches_per_sample) : none;
  r.values["gbps"] = timed ? ordered_json(m.gbps()) : none;
  r.values["tflops"] = timed ? ordered_json(m.tflops()) : none;
  r.values["ceiling"] = timed && against.fraction ? ordered_json(against.ceiling) : none;
  r.values["of_ceiling"] = timed ? optional_number(against.fraction) : none;
  r.values["of_peak"] = timed ? optional_number(against.peak_fraction) : none;
  r.values["sm_mhz"] = timed && m.clocks.median_mhz > 0 ? ordered_json(m.clocks.median_mhz) : none;
  r.values["rel_err"] = m.verification.checked ? ordered_json(m.verification.rel_l2_error) : none;
  r.values["stop_reason"] =
      timed && !m.timing.stop_reason.empty() ? ordered_json(m.timing.stop_reason) : none;
  r.values["reason"] = m.reason;
  return r;
}

std::vector<std::string> notes_of(const BenchRow& row) {
  std::vector<std::string> notes;
  const Measurement& m = row.measurement;
  const bool timed = m.disposition == Disposition::passed;
  if (!m.reason.empty()) notes.push_back(row.full_name + ": " + m.reason);
  if (timed) {
    const std::string why = above_ceiling_reason(row.against);
    if (!why.empty()) notes.push_back(kAboveCeilingMarker + (" " + row.full_name) + ": " + why);
  }
  if (timed && m.unstable) notes.push_back(row.full_name + ": unstable: " + m.unstable_reason);
  if (timed && m.timing.discarded > 0) {
    notes.push_back(row.full_name + ": " + std::to_string(m.timing.discarded) + " of " +
                    std::to_string(m.samples_us.size()) + " samples discarded (SM clock below " +
                    format("%.0f", m.clocks.expected_mhz) + " MHz x threshold)");
  }
  return notes;
}

std::vector<std::string> repeat_check_lines(const BenchReport& report) {
  std::vector<std::string> lines;
  for (const RepeatCheck& check : report.repeat_checks) {
    const Measurement& a = check.first.measurement;
    const Measurement& b = check.second.measurement;
    if (a.disposition != Disposition::passed || b.disposition != Disposition::passed) continue;
    lines.push_back(
        format("repeat-check %s: medians %.3f us and %.3f us, difference %+.3f%% (%s; the "
               "A/A noise floor of this case under %s)",
               check.first.full_name.c_str(), a.stats.median, b.stats.median,
               check.comparison.relative_difference * 100,
               to_string(check.comparison.verdict).c_str(), a.policy.c_str()));
  }
  return lines;
}

std::string policy_of(const BenchReport& report) {
  return report.rows.empty() ? "-" : report.rows.front().measurement.policy;
}

// A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string csv_field(const ordered_json& value) {
  if (value.is_null()) return "";
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// A markdown table cell: '|' escaped, one line.
std::string md_cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else {
      out += c == '\n' ? ' ' : c;
    }
  }
  return out;
}

void print_table(const BenchReport& report, const std::string& db, std::ostream& out) {
  TextTable table;
  for (const auto& [name, align] : table_columns()) table.add_column(name, align);
  std::vector<std::string> notes;
  for (const BenchRow& row : report.rows) {
    table.add_row(report_row(row).cells);
    for (std::string& note : notes_of(row)) notes.push_back(std::move(note));
  }
  table.print(out);
  for (const auto& note : notes) out << "\n" << note << "\n";
  for (const auto& line : repeat_check_lines(report)) out << "\n" << line << "\n";
  out << "\nrecorded  run " << report.run_id << " in " << db << " (policy " << policy_of(report)
      << ")\n";
}

void print_csv(const BenchReport& report, std::ostream& out) {
  const std::vector<std::string>& keys = value_keys();
  for (size_t i = 0; i < keys.size(); ++i) out << (i ? "," : "") << keys[i];
  out << "\n";
  for (const BenchRow& row : report.rows) {
    const ordered_json values = report_row(row).values;
    for (size_t i = 0; i < keys.size(); ++i) out << (i ? "," : "") << csv_field(values[keys[i]]);
    out << "\n";
  }
}

void print_md(const BenchReport& report, const std::string& db, std::ostream& out) {
  const auto& columns = table_columns();
  out << "|";
  for (const auto& [name, align] : columns) out << " " << name << " |";
  out << "\n|";
  for (const auto& [name, align] : columns) {
    out << (align == TextTable::Align::right ? "---:|" : "---|");
  }
  out << "\n";
  std::vector<std::string> notes;
  for (const BenchRow& row : report.rows) {
    out << "|";
    for (const std::string& cell : report_row(row).cells) out << " " << md_cell(cell) << " |";
    out << "\n";
    for (std::string& note : notes_of(row)) notes.push_back(std::move(note));
  }
  for (const std::string& line : repeat_check_lines(report)) notes.push_back(line);
  if (!notes.empty()) out << "\n";
  for (const std::string& note : notes) out << "- " << md_cell(note) << "\n";
  out << "\nRecorded as run " << report.run_id << " in `" << db << "` (policy " << policy_of(report)
      << ").\n";
}

void print_json(const BenchReport& report, const std::string& db, std::ostream& out) {
  ordered_json doc;
  doc["run_id"] = report.run_id;
  doc["database"] = db;
  doc["policy"] = policy_of(report);
  doc["rows"] = ordered_json::array();
  for (const BenchRow& row : report.rows) {
    ordered_json values = report_row(row).values;
    values["notes"] = notes_of(row);
    doc["rows"].push_back(std::move(values));
  }
  doc["repeat_checks"] = ordered_json::array();
  for (const RepeatCheck& check : report.repeat_checks) {
    const Measurement& a = check.first.measurement;
    const Measurement& b = check.second.measurement;
    const bool both = a.disposition == Disposition::passed && b.disposition == Disposition::passed;
    doc["repeat_checks"].push_back(
        {{"variant", check.first.full_name},
         {"first_median_us", both ? ordered_json(a.stats.median) : ordered_json(nullptr)},
         {"second_median_us", both ? ordered_json(b.stats.median) : ordered_json(nullptr)},
         {"relative_difference",
          both ? ordered_json(check.comparison.relative_difference) : ordered_json(nullptr)},
         {"verdict", to_string(check.comparison.verdict)}});
  }
  out << doc.dump(2) << "\n";
}

}  // namespace

std::string fraction_cell(const CeilingFraction& f) {
  if (!f.fraction) return "-";
  return fraction_text(f) + " " + f.ceiling;
}

void print_workload_rows(const std::string& suite, const std::vector<WorkloadRow>& rows,
                         const std::string& db, std::ostream& out, RunFormat format) {
  if (format == RunFormat::json) {
    ordered_json doc;
    doc["suite"] = suite;
    doc["database"] = db;
    doc["rows"] = ordered_json::array();
    for (const WorkloadRow& r : rows) {
      ordered_json values = {{"workload", r.workload}, {"run_id", r.run_id}};
      values.update(report_row(*r.row).values);
      values["notes"] = notes_of(*r.row);
      doc["rows"].push_back(std::move(values));
    }
    out << doc.dump(2) << "\n" << std::flush;
    return;
  }
  if (format == RunFormat::csv) {
    out << "workload,run_id";
    for (const std::string& key : value_keys()) out << "," << key;
    out << "\n";
    for (const WorkloadRow& r : rows) {
      const ordered_json values = report_row(*r.row).values;
      out << csv_field(r.workload) << "," << r.run_id;
      for (const std::string& key : value_keys()) out << "," << csv_field(values[key]);
      out << "\n";
    }
    out << std::flush;
    return;
  }
  // md (and table, which suites print as their own combined table instead)
  out << "| workload | run |";
  for (const auto& [name, align] : table_columns()) out << " " << name << " |";
  out << "\n|---|---:|";
  for (const auto& [name, align] : table_columns()) {
    out << (align == TextTable::Align::right ? "---:|" : "---|");
  }
  out << "\n";
  std::vector<std::string> notes;
  for (const WorkloadRow& r : rows) {
    out << "| " << md_cell(r.workload) << " | " << r.run_id << " |";
    for (const std::string& cell : report_row(*r.row).cells) out << " " << md_cell(cell) << " |";
    out << "\n";
    for (std::string& note : notes_of(*r.row)) notes.push_back(r.workload + ": " + note);
  }
  if (!notes.empty()) out << "\n";
  for (const std::string& note : notes) out << "- " << md_cell(note) << "\n";
  out << "\nSuite " << suite << ", recorded in `" << db << "`.\n" << std::flush;
}

std::string to_string(RunFormat format) {
  switch (format) {
    case RunFormat::table:
      return "table";
    case RunFormat::csv:
      return "csv";
    case RunFormat::md:
      return "md";
    case RunFormat::json:
      return "json";
  }
  return "?";
}

std::optional<RunFormat> run_format_from_string(const std::string& text) {
  for (RunFormat f : {RunFormat::table, RunFormat::csv, RunFormat::md, RunFormat::json}) {
    if (text == to_string(f)) return f;
  }
  return std::nullopt;
}

void print_report(const BenchReport& report, const std::string& db, std::ostream& out,
                  RunFormat format) {
  switch (format) {
    case RunFormat::table:
      print_table(report, db, out);
      break;
    case RunFormat::csv:
      print_csv(report, out);
      break;
    case RunFormat::md:
      print_md(report, db, out);
      break;
    case RunFormat::json:
      print_json(report, db, out);
      break;
  }
  out << std::flush;
}

}  // namespace attn
