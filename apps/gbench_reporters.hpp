// The reporters `attn-bench run` gives Google Benchmark for --benchmark_format (the display) and
// --benchmark_out_format (the file): its console and JSON reporters, and a CSV reporter of the
// same columns as its own, with three differences that make every format work on every run:
//   - a case its variant declined (unsupported) is shown as skipped with its reason, a case that
//     failed (incorrect, launch failed, ...) as an error with its reason;
//   - a counter without a value (NaN: no ceiling, no clock, or Google Benchmark's cv of a counter
//     that is 0 in every repetition) is left out of console and JSON rows (JSON has no NaN) and
//     left empty in CSV;
//   - the CSV has the same columns on every row, every counter of gbench_counter_names() whether
//     or not the row has a value, declined and failed rows included, with text fields quoted;
//     a --benchmark_out CSV file starts with the header (the context goes to stderr only).
// Google Benchmark (1.7) knows only "error" for a benchmark that did not run; the driver records
// each case's outcome in GbenchOutcomes, which the reporters read.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attn {

// Why a repetition of a case was not timed.
struct GbenchSkip {
  bool declined = false;  // the variant declined the workload (unsupported); else it failed
  std::string message;    // "unsupported: <reason>", "incorrect: <reason>", "not run: ..."
};

// The outcome of each repetition of each case, in the order they ran, by the name the case was
// registered under.
class GbenchOutcomes {
 public:
  void record_timed(const std::string& name);
  void record_skipped(const std::string& name, GbenchSkip skip);
  // How repetition `repetition_index` (0-based, as Google Benchmark numbers them) of `name` was
  // skipped; nullptr when it was timed or is unknown (an aggregate).
  const GbenchSkip* skip(const std::string& name, int64_t repetition_index) const;

 private:
  std::map<std::string, std::vector<std::unique_ptr<GbenchSkip>>> outcomes_;
};

// A reporter of `format` ("console", "json" or "csv"); `counter_names` are the CSV's counter
// columns. `console_options` apply to the console format only. Throws UsageError for another
// format.
std::unique_ptr<benchmark::BenchmarkReporter> make_gbench_reporter(
    const std::string& format, const GbenchOutcomes& outcomes,
    const std::vector<std::string>& counter_names,
    benchmark::ConsoleReporter::OutputOptions console_options);

// The text of a CSV field as the reporter writes it: in double quotes, inner quotes doubled.
std::string csv_quoted(const std::string& text);

}  // namespace attn
