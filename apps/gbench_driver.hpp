// Google Benchmark drives attn-bench run's loop: each case (workload, variant, config) is one
// registered benchmark named "<workload>/<variant.config>", run for one iteration whose manual time
// is the case's median (the timing core's samples and stopping rule do the repeating), so that
// --benchmark_filter, --benchmark_repetitions, --benchmark_format=console|json|csv and
// --benchmark_out[_format] behave as Google Benchmark users expect and the JSON can be read by its
// tools/compare.py. Counters carry GB/s, TFLOP/s, the fraction of the device's ceiling, the noise
// and the clock; the context block carries the device fingerprint and the policy. The reporters
// (apps/gbench_reporters.hpp) show a declined case as skipped with its reason and give every CSV
// row the same columns.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "measure/bench_run.hpp"

namespace attn {

struct GbenchOptions {
  std::vector<std::string> args;   // the --benchmark_* arguments from the command line
  bool has_format() const;         // the user chose a --benchmark_format
  std::string format() const;      // --benchmark_format's value; "console" when absent
  std::string out_file() const;    // --benchmark_out's value; empty when absent
  std::string out_format() const;  // --benchmark_out_format's value; "json" when absent
  // The console reporter's options from --benchmark_color and --benchmark_counters_tabular.
  benchmark::ConsoleReporter::OutputOptions console_options() const;
  bool lists_only() const;     // --benchmark_list_tests
  std::string filter() const;  // --benchmark_filter's value; empty when absent
  int repetitions() const;     // --benchmark_repetitions; 1 when absent
};

// Name of a case as Google Benchmark shows and filters it.
std::string gbench_name(const std::string& workload, const BenchCase& bench_case);
// Whether Google Benchmark's filter would run `name` (for the progress total; a leading '-'
// negates, as in Google Benchmark).
bool gbench_filter_matches(const std::string& filter, const std::string& name);

// The counters of every passed row, in the CSV's column order.
const std::vector<std::string>& gbench_counter_names();
// Counters of one measured row: every name of gbench_counter_names(), NaN where the row has no
// value (no ceiling for the device, or not the family's bound; no SM clock on the CPU). The
// reporters leave NaN out (console, JSON) or empty (CSV).
std::map<std::string, double> gbench_counters(const BenchRow& row);

// Registers the cases, runs Google Benchmark and clears its registry. `measure` is called once per
// case and repetition and returns the row to report, or nullptr for a case it did not run (after
// Ctrl-C: Google Benchmark reports it skipped, "not run: interrupted"). Throws UsageError for an
// unknown --benchmark_ flag.
void run_gbench(const std::string& argv0, const GbenchOptions& options,
                const std::map<std::string, std::string>& context,
                const std::vector<std::pair<std::string, BenchCase>>& named_cases,
                const std::function<const BenchRow*(const BenchCase&)>& measure);

}  // namespace attn
