#include "apps/gbench_driver.hpp"

#include <benchmark/benchmark.h>

#include <cmath>
#include <regex>

#include "base/errors.hpp"

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

std::map<std::string, double> gbench_counters(const BenchRow& row) {
  const Measurement& m = row.measurement;
  std::map<std::string, double> c;
  c["GB/s"] = m.gbps();
  c["TFLOP/s"] = m.tflops();
  if (m.ceiling_fraction) c["frac_" + m.ceiling] = *m.ceiling_fraction;
  c["samples"] = double(m.stats.count);
  // A noise of exactly 0 (two equal samples) is left out: Google Benchmark's cv aggregate of a
  // counter that is 0 in every repetition is NaN, which is not JSON. For the same reason there is
  // no 0/1 "unstable" counter (the flag goes into the label), and no counter is ever non-finite.
  if (m.timing.noise > 0) c["noise_pct"] = m.timing.noise * 100;
  c["launches_per_sample"] = m.timing.launches_per_sample;
  if (m.clocks.median_mhz > 0) c["sm_MHz"] = m.clocks.median_mhz;
  for (auto it = c.begin(); it != c.end();) it = std::isfinite(it->second) ? std::next(it) : c.erase(it);
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
  for (const auto& [key, value] : context) benchmark::AddCustomContext(key, value);

  for (const auto& [name, bench_case] : named_cases) {
    benchmark::RegisterBenchmark(name.c_str(),
                                 [bench_case = bench_case, &measure](benchmark::State& state) {
                                   for (auto _ : state) {
                                     const BenchRow* measured = measure(bench_case);
                                     if (measured == nullptr) {
                                       state.SkipWithError("not run: interrupted");
                                       break;
                                     }
                                     const BenchRow& row = *measured;
                                     const Measurement& m = row.measurement;
                                     if (m.disposition != Disposition::passed) {
                                       const std::string why =
                                           to_string(m.disposition) + ": " + m.reason;
                                       state.SkipWithError(why.c_str());
                                       break;
                                     }
                                     state.SetIterationTime(m.stats.median * 1e-6);
                                     for (const auto& [key, value] : gbench_counters(row)) {
                                       state.counters[key] = value;
                                     }
                                     if (m.unstable)
                                       state.SetLabel("unstable: " + m.unstable_reason);
                                   }
                                 })
        ->UseManualTime()
        ->Iterations(1)
        ->Unit(benchmark::kMicrosecond);
  }
  SilentReporter silent;
  if (options.has_format() || options.lists_only()) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::ClearRegisteredBenchmarks();
  benchmark::Shutdown();
}

}  // namespace attn
