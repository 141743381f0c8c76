// The table `attn-bench run` prints after a run, in each format of its own (--format): `table`
// (aligned text for the terminal, the default), `csv` (one header row, raw numbers, for
// spreadsheets), `md` (a GitHub markdown table with the notes as a list) and `json` (one object:
// the run, every row with typed values, the notes and repeat checks). Independent of Google
// Benchmark's --benchmark_format, which formats its own reporter's output.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "measure/bench_run.hpp"

namespace attn {

enum class RunFormat { table, csv, md, json };
std::string to_string(RunFormat format);
std::optional<RunFormat> run_format_from_string(const std::string& text);

// The rows of `report` with the notes under them (a declined variant's reason, a fraction above
// its ceiling, an unstable timing, discarded samples), the repeat checks, and where the run is
// recorded (`db`).
void print_report(const BenchReport& report, const std::string& db, std::ostream& out,
                  RunFormat format = RunFormat::table);

// The rows of several workloads' runs (a suite) as one document in `format` (csv, md or json):
// the same columns as print_report's with the workload and its run id first.
struct WorkloadRow {
  std::string workload;
  int64_t run_id = 0;
  const BenchRow* row = nullptr;
};
void print_workload_rows(const std::string& suite, const std::vector<WorkloadRow>& rows,
                         const std::string& db, std::ostream& out, RunFormat format);

// "87.2% read_bw" (a fraction above 100% marked), or "-" without a ceiling.
std::string fraction_cell(const CeilingFraction& f);

}  // namespace attn
