// The table `attn-bench run` prints after a run, in each format of its own (--format): `table`
// (aligned text for the terminal, the default), `csv` (one header row, raw numbers, for
// spreadsheets), `md` (a GitHub markdown table with the notes as a list) and `json` (one object:
// the run, every row with typed values, the notes and repeat checks). Independent of Google
// Benchmark's --benchmark_format, which formats its own reporter's output.
#pragma once

#include <optional>
#include <ostream>
#include <string>

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

}  // namespace attn
