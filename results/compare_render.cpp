#include "results/compare_render.hpp"

#include <cctype>
#include <sstream>

#include "results/fraction_marker.hpp"
#include "results/table.hpp"

namespace attn {

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

std::string cell(const std::string& text) {
  return markdown_cell(text);
}

std::string percent(std::optional<double> fraction, const char* pattern = "%.1f%%") {
  return fraction ? format(pattern, *fraction * 100) : "n/a";
}

std::string config_name(const ConfigTiming& c) {
  return c.variant + " {" + c.config_key + "}";
}

std::string median_cell(const ConfigTiming& c, const Interval& interval) {
  return format("%.2f [%.2f, %.2f]%s", c.median_us, interval.low, interval.high,
                c.unstable ? " (unstable)" : "");
}

std::string lower_verdict(Verdict v) {
  std::string text = to_string(v);
  for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

nlohmann::json optional_number(std::optional<double> value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json config_json(const ConfigTiming& c, const CompareResult& result) {
  nlohmann::json j = {
      {"variant", c.variant},   {"config_key", c.config_key},         {"family", c.family},
      {"policy", c.policy},     {"median_us", c.median_us},           {"samples", c.samples.size()},
      {"unstable", c.unstable}, {"measurement_id", c.measurement_id}, {"run_id", c.run_id}};
  for (const StoredDevice& d : result.devices) {
    if (d.id == c.device_id) j["device_fingerprint"] = d.fingerprint;
  }
  return j;
}

nlohmann::json side_json(const CompareSide& side, const CompareResult& result) {
  nlohmann::json devices = nlohmann::json::array();
  for (int64_t id : side.device_ids) {
    for (const StoredDevice& d : result.devices) {
      if (d.id != id) continue;
      nlohmann::json ceilings = nlohmann::json::object();
      if (auto it = result.ceilings.find(id); it != result.ceilings.end()) {
        for (const auto& [metric, record] : it->second.by_metric) ceilings[metric] = record.value;
      }
      devices.push_back({{"name", d.record.name},
                         {"fingerprint", d.fingerprint},
                         {"uuid", d.record.uuid},
                         {"ceilings", ceilings}});
    }
  }
  return {{"label", side.label}, {"devices", devices}, {"runs", side.run_ids}};
}

}  // namespace

std::string format_speedup(const RatioInterval& speedup) {
  return format("%.3fx [%.3f, %.3f]", speedup.estimate, speedup.interval.low,
                speedup.interval.high);
}

std::string compare_markdown(const CompareResult& result, int level) {
  const std::string h(size_t(level), '#');
  std::ostringstream out;
  out << h << " Comparison of two " << to_string(result.mode) << "\n\n";
  out << "- **A**: " << cell(result.a.label) << "\n";
  out << "- **B**: " << cell(result.b.label) << "\n\n";
  out << "Each side's best config per workload is its passed measurement with the lowest median "
         "(per config the latest `confirm` result, else the latest `screen` one). The speed-up "
         "is A's median / B's median with a 95% percentile bootstrap interval (2000 resamples "
         "of each side, seeded). Verdicts are B against A from that interval: FASTER when it "
         "lies wholly above 1, SLOWER when wholly below 1, else SAME. A regression is SLOWER "
         "by more than "
      << format("%.1f%%", result.threshold * 100)
      << " over the whole interval (B's time / A's time - 1 above the threshold at every point "
         "of it).\n\n";

  out << h << "# Times\n\n";
  out << "| workload | A median us [95%] | B median us [95%] | speed-up B/A [95%] | verdict | "
         "ceiling | A of ceiling | B of ceiling | B predicted us | prediction error |\n";
  out << "|---|--:|--:|--:|---|---|--:|--:|--:|--:|\n";
  for (const WorkloadComparison& r : result.rows) {
    out << "| " << cell(r.workload) << " | " << median_cell(r.a_best, r.comparison.a) << " | "
        << median_cell(r.b_best, r.comparison.b) << " | " << format_speedup(r.speedup) << " | "
        << to_string(r.verdict) << (r.regression ? " (regression)" : "") << " | "
        << (r.ceiling.empty() ? "n/a" : r.ceiling) << " | " << fraction_text(r.a_against) << " | "
        << fraction_text(r.b_against) << " | "
        << (r.predicted_b_us ? format("%.2f", *r.predicted_b_us) : "n/a") << " | "
        << percent(r.prediction_error, "%+.1f%%") << " |\n";
  }
  out << "\nA fraction of ceiling is the best config's achieved rate over its device's calibrated "
         "ceiling for the family's bound (`read_bw`: read GB/s of the logical minimum bytes, "
         "`bf16_tensor`: bf16 TFLOP/s, the ceiling scaled to the config's SM clock where the "
         "calibration recorded its own); n/a when the device was not calibrated. B predicted = "
         "A's median x A's ceiling / B's ceiling (the roofline: the same fraction of each "
         "device's bound); error = measured / predicted - 1; n/a on one device or without both "
         "ceilings.\n\n";
  std::string above;
  for (const WorkloadComparison& r : result.rows) {
    for (const auto& [side, f] :
         {std::pair<const char*, const CeilingFraction*>{"A", &r.a_against}, {"B", &r.b_against}}) {
      const std::string why = above_ceiling_reason(*f);
      if (!why.empty())
        above += std::string(kAboveCeilingMarker) + " " + cell(r.workload) + ", " + side + ": " +
                 why + ".\n";
    }
  }
  for (const StoredDevice& d : result.devices) {
    const auto it = result.ceilings.find(d.id);
    if (it == result.ceilings.end() || !it->second.by_metric.count(kBf16Tflops)) continue;
    const std::string note = unscaled_ceiling_note(it->second.by_metric.at(kBf16Tflops));
    if (!note.empty()) above += "Not scaled on " + cell(device_label(d)) + ": " + note + ".\n";
  }
  if (!above.empty()) out << above << "\n";

  out << h << "# Best configs\n\n";
  out << "| workload | A's best | B's best | differs | A's best on B us | transfer regret | "
         "configs on both | Spearman |\n";
  out << "|---|---|---|---|--:|--:|--:|--:|\n";
  for (const WorkloadComparison& r : result.rows) {
    std::string on_b = "not measured on B", regret = "n/a";
    if (r.a_best_on_b) {
      on_b = format("%.2f", r.a_best_on_b->median_us);
      if (r.best_differs && r.a_best_on_b_verdict) {
        on_b += " (" + lower_verdict(*r.a_best_on_b_verdict) + " than B's best)";
      }
      regret = format("%+.1f%%", *r.transfer_regret * 100);
    }
    out << "| " << cell(r.workload) << " | " << cell(config_name(r.a_best)) << " | "
        << cell(config_name(r.b_best)) << " | " << (r.best_differs ? "yes" : "no") << " | " << on_b
        << " | " << regret << " | " << r.common_configs << " | "
        << (r.spearman ? format("%.3f", *r.spearman) : "n/a") << " |\n";
  }
  out << "\nTransfer regret = B's median of A's best config / B's best median - 1: what running "
         "A's "
         "choice on B loses. Spearman: the rank correlation of the medians of the configs both "
         "sides measured (n/a under 3 configs).\n\n";

  const CompareSummary& s = result.summary;
  out << h << "# Summary\n\n";
  out << result.rows.size() << " workloads on both sides: " << s.faster << " FASTER, " << s.same
      << " SAME, " << s.slower << " SLOWER";
  if (s.geomean_speedup) out << format("; geometric mean speed-up B/A %.3fx", *s.geomean_speedup);
  out << ".\n\n";
  out << "Regressions (B SLOWER than A by more than " << format("%.1f%%", result.threshold * 100)
      << " over the whole speed-up interval): ";
  if (s.regressions == 0) {
    out << "none.\n";
  } else {
    out << s.regressions << ":";
    for (const WorkloadComparison& r : result.rows) {
      if (r.regression)
        out << " " << r.workload << format(" (%+.1f%%)", r.comparison.relative_difference * 100);
    }
    out << ".\n";
  }
  const auto only = [&](const char* side, const std::vector<std::string>& names) {
    if (names.empty()) return;
    out << "\nMeasured only on " << side << " (" << names.size() << "):";
    for (const std::string& n : names) out << " " << n;
    out << "\n";
  };
  only("A", result.only_a);
  only("B", result.only_b);
  return out.str();
}

nlohmann::json compare_json(const CompareResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const WorkloadComparison& r : result.rows) {
    nlohmann::json transfer = {{"measured_on_b", r.a_best_on_b.has_value()},
                               {"a_best_on_b_us", nullptr},
                               {"regret", optional_number(r.transfer_regret)},
                               {"verdict_against_b_best", nullptr}};
    if (r.a_best_on_b) transfer["a_best_on_b_us"] = r.a_best_on_b->median_us;
    if (r.a_best_on_b_verdict)
      transfer["verdict_against_b_best"] = to_string(*r.a_best_on_b_verdict);
    rows.push_back(
        {{"workload", r.workload},
         {"workload_hash", r.workload_hash},
         {"family", r.family},
         {"a", config_json(r.a_best, result)},
         {"b", config_json(r.b_best, result)},
         {"a_interval_us", {r.comparison.a.low, r.comparison.a.high}},
         {"b_interval_us", {r.comparison.b.low, r.comparison.b.high}},
         {"verdict", to_string(r.verdict)},
         {"relative_difference", r.comparison.relative_difference},
         {"speedup",
          {{"estimate", r.speedup.estimate},
           {"low", r.speedup.interval.low},
           {"high", r.speedup.interval.high}}},
         {"ceiling", r.ceiling.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.ceiling)},
         {"a_ceiling_fraction", optional_number(r.a_fraction)},
         {"b_ceiling_fraction", optional_number(r.b_fraction)},
         {"best_config_differs", r.best_differs},
         {"transfer", transfer},
         {"rank_correlation",
          {{"configs", r.common_configs}, {"spearman", optional_number(r.spearman)}}},
         {"roofline_prediction",
          {{"predicted_b_us", optional_number(r.predicted_b_us)},
           {"error", optional_number(r.prediction_error)}}},
         {"regression", r.regression}});
  }
  const CompareSummary& s = result.summary;
  return {{"mode", to_string(result.mode)},
          {"threshold", result.threshold},
          {"a", side_json(result.a, result)},
          {"b", side_json(result.b, result)},
          {"workloads", rows},
          {"only_a", result.only_a},
          {"only_b", result.only_b},
          {"summary",
           {{"workloads", result.rows.size()},
            {"faster", s.faster},
            {"same", s.same},
            {"slower", s.slower},
            {"regressions", s.regressions},
            {"geomean_speedup", optional_number(s.geomean_speedup)}}}};
}

}  // namespace attn
