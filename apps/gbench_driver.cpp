#include "apps/gbench_driver.hpp"

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <regex>

#include "apps/gbench_reporters.hpp"
#include "base/errors.hpp"
#include "results/fraction_marker.hpp"

namespace attn {

namespace {

std::string flag_value(const std::vector<std::string>& args, const std::string& flag) {
  std::string value;
  const std::string prefix = flag + "=";
  for (const auto& a : args) {
    if (a.rfind(prefix, 0) == 0) value = a.substr(prefix.size());
  }
  return value;
}

// Google Benchmark's reading of a boolean flag's value: false for "", "0", "false", "no", "off"
// (any case, or a one-letter f/n), true otherwise.
bool flag_is_true(const std::string& value) {
  std::string lower;
  for (char c : value) lower += char(std::tolower(static_cast<unsigned char>(c)));
  if (lower.empty()) return false;
  if (lower.size() == 1) {
    return std::isalnum(static_cast<unsigned char>(lower[0])) && lower != "0" && lower != "f" &&
           lower != "n";
  }
  return lower != "false" && lower != "no" && lower != "off";
}

// Prints nothing: the default when the user chose no --benchmark_format (attn-bench's own table
// is the console output then). --benchmark_out still writes its file.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

bool GbenchOptions::has_format() const {
  return !flag_value(args, "--benchmark_format").empty();
}

std::string GbenchOptions::format() const {
  const std::string value = flag_value(args, "--benchmark_format");
  return value.empty() ? "console" : value;
}

std::string GbenchOptions::out_file() const {
  return flag_value(args, "--benchmark_out");
}

std::string GbenchOptions::out_format() const {
  const std::string value = flag_value(args, "--benchmark_out_format");
  return value.empty() ? "json" : value;
}

benchmark::ConsoleReporter::OutputOptions GbenchOptions::console_options() const {
  // As Google Benchmark decides: --benchmark_color (auto: a terminal that is not "dumb") and
  // --benchmark_counters_tabular.
  const std::string color = flag_value(args, "--benchmark_color");
  bool colored = false;
  if (color.empty() || color == "auto") {
    const char* term = std::getenv("TERM");
    colored = ::isatty(STDOUT_FILENO) && term != nullptr && std::string(term) != "dumb";
  } else {
    colored = flag_is_true(color);
  }
  int o = benchmark::ConsoleReporter::OO_None;
  if (colored) o |= benchmark::ConsoleReporter::OO_Color;
  if (flag_is_true(flag_value(args, "--benchmark_counters_tabular"))) {
    o |= benchmark::ConsoleReporter::OO_Tabular;
  }
  return benchmark::ConsoleReporter::OutputOptions(o);
}

bool GbenchOptions::lists_only() const {
  for (const auto& a : args) {
    if (a == "--benchmark_list_tests" || a == "--benchmark_list_tests=true" ||
        a == "--benchmark_list_tests=1")
      return true;
  }
  return false;
}

std::string GbenchOptions::filter() const {
  return flag_value(args, "--benchmark_filter");
}

int GbenchOptions::repetitions() const {
  const std::string value = flag_value(args, "--benchmark_repetitions");
  if (value.empty()) return 1;
  try {
    return std::max(1, std::stoi(value));
  } catch (const std::exception&) {
    return 1;  // Google Benchmark reports the bad value itself
  }
}

std::string gbench_name(const std::string& workload, const BenchCase& bench_case) {
  return workload + "/" + bench_case.full_name;
}

bool gbench_filter_matches(const std::string& filter, const std::string& name) {
  if (filter.empty() || filter == "all") return true;
  const bool negated = filter[0] == '-';
  try {
    const bool found = std::regex_search(name, std::regex(negated ? filter.substr(1) : filter));
    return negated ? !found : found;
  } catch (const std::regex_error&) {
    return true;  // Google Benchmark rejects it with its own message
  }
}

const std::vector<std::string>& gbench_counter_names() {
  static const std::vector<std::string> names = {
      "GB/s",    "TFLOP/s",   "frac_read_bw",        "frac_bf16_tensor",
      "samples", "noise_pct", "launches_per_sample", "sm_MHz"};
  return names;
}

std::map<std::string, double> gbench_counters(const BenchRow& row) {
  const Measurement& m = row.measurement;
  std::map<std::string, double> c;
  for (const std::string& name : gbench_counter_names()) c[name] = NAN;
  c["GB/s"] = m.gbps();
  c["TFLOP/s"] = m.tflops();
  // The fraction of the one ceiling the family is bound by; the other stays without a value.
  if (m.ceiling_fraction && c.count("frac_" + m.ceiling))
    c["frac_" + m.ceiling] = *m.ceiling_fraction;
  c["samples"] = double(m.stats.count);
  c["noise_pct"] = m.timing.noise * 100;
  c["launches_per_sample"] = m.timing.launches_per_sample;
  if (m.clocks.median_mhz > 0) c["sm_MHz"] = m.clocks.median_mhz;  // no clock on the CPU
  for (auto& [name, value] : c) {
    if (!std::isfinite(value)) value = NAN;
  }
  return c;
}

void run_gbench(const std::string& argv0, const GbenchOptions& options,
                const std::map<std::string, std::string>& context,
                const std::vector<std::pair<std::string, BenchCase>>& named_cases,
                const std::function<const BenchRow*(const BenchCase&)>& measure) {
  std::vector<std::string> storage{argv0};
  storage.insert(storage.end(), options.args.begin(), options.args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  int argc = int(argv.size());
  benchmark::Initialize(&argc, argv.data());
  if (argc > 1) {
    throw UsageError(std::string("unknown Google Benchmark flag '") + argv[1] + "'");
  }
  // Google Benchmark keeps one context per process: the first call's stands (a suite runs one call
  // per workload, without a --benchmark_format, so no reporter shows it). Shutdown() is never
  // called: it frees the context without forgetting it, and a second call would use it.
  static bool context_added = false;
  if (!context_added) {
    for (const auto& [key, value] : context) benchmark::AddCustomContext(key, value);
    context_added = true;
  }

  GbenchOutcomes outcomes;
  for (const auto& [name, bench_case] : named_cases) {
    benchmark::RegisterBenchmark(
        name.c_str(),
        [name = name, bench_case = bench_case, &measure, &outcomes](benchmark::State& state) {
          for (auto _ : state) {
            const BenchRow* measured = measure(bench_case);
            if (measured == nullptr) {
              outcomes.record_skipped(name, {false, "not run: interrupted"});
              state.SkipWithError("not run: interrupted");
              break;
            }
            const BenchRow& row = *measured;
            const Measurement& m = row.measurement;
            if (m.disposition != Disposition::passed) {
              // Google Benchmark 1.7 has no other way to leave a repetition untimed; the
              // reporters show a declined case as skipped (apps/gbench_reporters.hpp).
              const GbenchSkip skip{m.disposition == Disposition::unsupported,
                                    to_string(m.disposition) + ": " + m.reason};
              outcomes.record_skipped(name, skip);
              state.SkipWithError(skip.message.c_str());
              break;
            }
            outcomes.record_timed(name);
            state.SetIterationTime(m.stats.median * 1e-6);
            for (const auto& [key, value] : gbench_counters(row)) state.counters[key] = value;
            std::string label;
            if (m.unstable) label = "unstable: " + m.unstable_reason;
            const std::string above = above_ceiling_reason(row.against);
            if (!above.empty()) label += (label.empty() ? "" : "; ") + above;
            if (!label.empty()) state.SetLabel(label);
          }
        })
        ->UseManualTime()
        ->Iterations(1)
        ->Unit(benchmark::kMicrosecond);
  }
  std::unique_ptr<benchmark::BenchmarkReporter> display;
  if (options.has_format() || options.lists_only()) {
    display = make_gbench_reporter(options.format(), outcomes, gbench_counter_names(),
                                   options.console_options());
  } else {
    display = std::make_unique<SilentReporter>();
  }
  // Google Benchmark opens the --benchmark_out file and points this reporter at it.
  std::unique_ptr<benchmark::BenchmarkReporter> file;
  if (!options.out_file().empty()) {
    file = make_gbench_reporter(options.out_format(), outcomes, gbench_counter_names(),
                                benchmark::ConsoleReporter::OO_None);
  }
  benchmark::RunSpecifiedBenchmarks(display.get(), file.get());
  benchmark::ClearRegisteredBenchmarks();
}

}  // namespace attn
