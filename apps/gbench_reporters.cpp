#include "apps/gbench_reporters.hpp"

#include <cmath>
#include <iomanip>

#include "base/errors.hpp"

namespace attn {

namespace {

using Run = benchmark::BenchmarkReporter::Run;

const GbenchSkip* skip_of(const GbenchOutcomes& outcomes, const Run& run) {
  if (run.run_type != Run::RT_Iteration) return nullptr;
  return outcomes.skip(run.run_name.function_name, run.repetition_index);
}

// The runs without their counters that have no value (NaN or infinite).
std::vector<Run> with_known_counters(const std::vector<Run>& runs) {
  std::vector<Run> out = runs;
  for (Run& run : out) {
    for (auto it = run.counters.begin(); it != run.counters.end();) {
      it = std::isfinite(double(it->second)) ? std::next(it) : run.counters.erase(it);
    }
  }
  return out;
}

class ConsoleReport : public benchmark::ConsoleReporter {
 public:
  ConsoleReport(OutputOptions options, const GbenchOutcomes& outcomes)
      : ConsoleReporter(options), outcomes_(outcomes) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(with_known_counters(runs));
  }

 protected:
  void PrintRunData(const Run& run) override {
    const GbenchSkip* skip = skip_of(outcomes_, run);
    if (skip == nullptr || !skip->declined) {
      ConsoleReporter::PrintRunData(run);  // a failure is Google Benchmark's "ERROR OCCURRED"
      return;
    }
    GetOutputStream() << std::left << std::setw(int(name_field_width_)) << run.benchmark_name()
                      << " SKIPPED: '" << skip->message << "'\n";
  }

 private:
  const GbenchOutcomes& outcomes_;
};

class JsonReport : public benchmark::JSONReporter {
 public:
  explicit JsonReport(const GbenchOutcomes& outcomes) : outcomes_(outcomes) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> known = with_known_counters(runs);
    // Google Benchmark 1.7 writes every run it did not time as an error; the label says which of
    // them were skipped (declined) rather than failed.
    for (Run& run : known) {
      const GbenchSkip* skip = skip_of(outcomes_, run);
      if (skip != nullptr && skip->declined) run.report_label = "skipped";
    }
    JSONReporter::ReportRuns(known);
  }

 private:
  const GbenchOutcomes& outcomes_;
};

// Google Benchmark's CSV columns, then one column per counter, on every row.
class CsvReport : public benchmark::BenchmarkReporter {
 public:
  CsvReport(const GbenchOutcomes& outcomes, std::vector<std::string> counter_names)
      : outcomes_(outcomes), counter_names_(std::move(counter_names)) {}

  bool ReportContext(const Context& context) override {
    // To stderr, as Google Benchmark's CSV reporter does; not into a --benchmark_out file (where
    // both streams are the file), whose first line is then the header.
    if (&GetErrorStream() != &GetOutputStream()) PrintBasicContext(&GetErrorStream(), context);
    return true;
  }

  void ReportRuns(const std::vector<Run>& runs) override {
    std::ostream& out = GetOutputStream();
    if (!printed_header_) {
      out << "name,iterations,real_time,cpu_time,time_unit,bytes_per_second,items_per_second,"
             "label,error_occurred,error_message";
      for (const std::string& name : counter_names_) out << "," << csv_quoted(name);
      out << "\n";
      printed_header_ = true;
    }
    for (const Run& run : runs) print_row(run, out);
  }

 private:
  static void print_number(std::ostream& out, double value) {
    if (std::isfinite(value)) out << value;
  }

  void print_row(const Run& run, std::ostream& out) const {
    out << csv_quoted(run.benchmark_name()) << ",";
    const GbenchSkip* skip = skip_of(outcomes_, run);
    if (skip != nullptr) {
      out << ",,,,,," << csv_quoted(run.report_label) << "," << (skip->declined ? "false" : "true")
          << "," << csv_quoted(skip->message);
      for (size_t i = 0; i < counter_names_.size(); ++i) out << ",";
      out << "\n";
      return;
    }
    const auto counter = [&](const std::string& name) {
      const auto it = run.counters.find(name);
      return it == run.counters.end() ? NAN : double(it->second);
    };
    out << run.iterations << ",";
    // A percentage aggregate (cv) holds its value unscaled, as Google Benchmark's JSON writes it.
    const bool percentage = run.run_type == Run::RT_Aggregate &&
                            run.aggregate_unit == benchmark::StatisticUnit::kPercentage;
    print_number(out, percentage ? run.real_accumulated_time : run.GetAdjustedRealTime());
    out << ",";
    print_number(out, percentage ? run.cpu_accumulated_time : run.GetAdjustedCPUTime());
    out << "," << benchmark::GetTimeUnitString(run.time_unit) << ",";
    print_number(out, counter("bytes_per_second"));
    out << ",";
    print_number(out, counter("items_per_second"));
    out << "," << csv_quoted(run.report_label) << ",,";
    for (const std::string& name : counter_names_) {
      out << ",";
      print_number(out, counter(name));
    }
    out << "\n";
  }

  const GbenchOutcomes& outcomes_;
  std::vector<std::string> counter_names_;
  bool printed_header_ = false;
};

}  // namespace

void GbenchOutcomes::record_timed(const std::string& name) {
  outcomes_[name].push_back(nullptr);
}

void GbenchOutcomes::record_skipped(const std::string& name, GbenchSkip skip) {
  outcomes_[name].push_back(std::make_unique<GbenchSkip>(std::move(skip)));
}

const GbenchSkip* GbenchOutcomes::skip(const std::string& name, int64_t repetition_index) const {
  const auto it = outcomes_.find(name);
  if (it == outcomes_.end() || repetition_index < 0 ||
      size_t(repetition_index) >= it->second.size()) {
    return nullptr;
  }
  return it->second[size_t(repetition_index)].get();
}

std::string csv_quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::unique_ptr<benchmark::BenchmarkReporter> make_gbench_reporter(
    const std::string& format, const GbenchOutcomes& outcomes,
    const std::vector<std::string>& counter_names,
    benchmark::ConsoleReporter::OutputOptions console_options) {
  if (format == "console") return std::make_unique<ConsoleReport>(console_options, outcomes);
  if (format == "json") return std::make_unique<JsonReport>(outcomes);
  if (format == "csv") return std::make_unique<CsvReport>(outcomes, counter_names);
  throw UsageError("Google Benchmark format '" + format + "': use console, json or csv");
}

}  // namespace attn
