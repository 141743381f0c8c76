#include "results/report.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "base/errors.hpp"
#include "base/family.hpp"
#include "base/glob.hpp"
#include "base/kernel_config.hpp"
#include "base/variant_aliases.hpp"
#include "results/compare_render.hpp"
#include "results/fraction_marker.hpp"
#include "results/roofline.hpp"
#include "results/table.hpp"

namespace attn {

std::string Report::markdown(const std::string& plots_note) const {
  return head + (plots_note.empty() ? std::string() : plots_note + "\n") + body;
}

std::optional<Heatmap> sweep_heatmap(const std::vector<ConfigTiming>& configs,
                                     const std::vector<std::string>& axes) {
  ATTN_ASSERT(axes.empty() || axes.size() == 2, "sweep_heatmap takes no axis or two");
  std::vector<std::pair<KernelConfig, double>> parsed;
  std::map<std::string, std::set<int64_t>> values;
  for (const ConfigTiming& c : configs) {
    KernelConfig config;
    try {
      config = KernelConfig::from_key(c.config_key);
    } catch (const UsageError&) {
      continue;  // a key this build cannot read: not part of any sweep it can draw
    }
    for (const auto& [axis, value] : config.values()) values[axis].insert(value);
    parsed.emplace_back(std::move(config), c.median_us);
  }
  std::string x_axis, y_axis;
  if (axes.empty()) {
    std::vector<std::string> swept;
    for (const auto& [axis, set] : values) {
      if (set.size() >= 2) swept.push_back(axis);
    }
    if (swept.size() < 2) return std::nullopt;
    std::stable_sort(swept.begin(), swept.end(), [&](const std::string& l, const std::string& r) {
      return values[l].size() > values[r].size();
    });
    x_axis = swept[0];
    y_axis = swept[1];
  } else {
    x_axis = axes[0];
    y_axis = axes[1];
    if (x_axis == y_axis || !values.count(x_axis) || !values.count(y_axis)) return std::nullopt;
  }
  for (const auto& [config, median] : parsed) {
    if (!config.find(x_axis) || !config.find(y_axis)) return std::nullopt;
  }

  Heatmap map;
  map.x_axis = x_axis;
  map.y_axis = y_axis;
  map.x_values.assign(values[x_axis].begin(), values[x_axis].end());
  map.y_values.assign(values[y_axis].begin(), values[y_axis].end());
  map.cells.assign(map.y_values.size(), std::vector<std::optional<double>>(map.x_values.size()));
  const auto index = [](const std::vector<int64_t>& v, int64_t value) {
    return size_t(std::lower_bound(v.begin(), v.end(), value) - v.begin());
  };
  for (const auto& [config, median] : parsed) {
    std::optional<double>& cell =
        map.cells[index(map.y_values, config.get(y_axis))][index(map.x_values, config.get(x_axis))];
    if (!cell || median < *cell) cell = median;
  }
  return map;
}

namespace {

std::string cell(const std::string& text) {
  return markdown_cell(text);
}

std::string code(const std::string& text) {
  // A code span that holds backticks needs a longer fence.
  const std::string fence = text.find('`') == std::string::npos ? "`" : "``";
  return fence + (fence.size() > 1 ? " " : "") + text + (fence.size() > 1 ? " " : "") + fence;
}

// One device's part of the report: its best configs and sweeps, by workload.
struct DeviceData {
  StoredDevice device;
  DeviceCeilings ceilings;
  // workload id -> the representatives of every variant on it
  std::map<int64_t, std::vector<ConfigTiming>> configs;
};

// The configs of one variant on one workload: a sweep when they vary two axes.
struct Sweep {
  std::string workload, workload_hash, variant;
  std::vector<ConfigTiming> configs;
};

std::string device_key(const StoredDevice& d) {
  return d.fingerprint.substr(0, 8);
}

std::string devices_section(const std::vector<DeviceData>& devices) {
  std::ostringstream out;
  out << "## Devices\n\n";
  out << "| device | fingerprint | UUID | compute | SMs | memory GiB | L2 MiB | SM clock MHz | "
         "memory clock MHz | bus bits | driver | driver's CUDA | CUDA | NVRTC | first seen | "
         "last "
         "seen |\n";
  out << "|---|---|---|---|--:|--:|--:|--:|--:|--:|---|---|---|---|---|---|\n";
  for (const DeviceData& data : devices) {
    const StoredDevice& d = data.device;
    const DeviceRecord& r = d.record;
    out << "| " << cell(r.name) << " | " << code(d.fingerprint) << " | " << cell(r.uuid) << " | "
        << r.cc_major << "." << r.cc_minor << " | " << r.sm_count << " | "
        << format("%.1f", double(r.memory_bytes) / (1024.0 * 1024 * 1024)) << " | "
        << format("%.1f", double(r.l2_bytes) / (1024.0 * 1024)) << " | " << r.sm_clock_khz / 1000
        << " | " << r.memory_clock_khz / 1000 << " | " << r.memory_bus_bits << " | "
        << cell(r.driver_version.empty() ? "unknown" : r.driver_version) << " | "
        << cell(r.cuda_driver_version) << " | " << cell(r.cuda_version) << " | "
        << cell(r.nvrtc_version) << " | " << d.first_seen_at << " | " << d.last_seen_at << " |\n";
  }
  out << "\n";
  return out.str();
}

std::string ceilings_section(const std::vector<DeviceData>& devices) {
  std::ostringstream out;
  out << "## Ceilings\n\n";
  out << "The latest of each metric `attn-bench calibrate` measured per device "
         "(docs/measurement.md).\n\n";
  out << "| device | metric | value | SM clock | method | samples | noise | unstable | measured at "
         "| tool | commit |\n";
  out << "|---|---|--:|---|---|--:|--:|---|---|---|---|\n";
  std::vector<std::string> uncalibrated;
  for (const DeviceData& data : devices) {
    if (data.ceilings.empty()) uncalibrated.push_back(device_label(data.device));
    for (const auto& [metric, c] : data.ceilings.by_metric) {
      const char* unit = metric == kBf16Tflops ? "TFLOP/s" : "GB/s";
      out << "| " << cell(device_label(data.device)) << " | " << metric << " | "
          << format("%.1f %s", c.value, unit) << " | "
          << (c.sm_clock_mhz ? format("%.0f MHz", *c.sm_clock_mhz) : "not recorded") << " | "
          << cell(c.method) << " | " << c.sample_count << " | " << format("%.2f%%", c.noise * 100)
          << " | " << (c.unstable ? "yes" : "no") << " | " << c.measured_at << " | "
          << cell(c.tool_version) << " | " << cell(c.git_commit) << " |\n";
    }
  }
  out << "\n";
  for (const std::string& name : uncalibrated) {
    out << "- " << name << ": not calibrated (run `attn-bench calibrate` on it).\n";
  }
  if (!uncalibrated.empty()) out << "\n";
  return out.str();
}

std::string image(const std::string& alt, const std::string& stem) {
  return "![" + alt + "](" + stem + ".svg)\n\n";
}

}  // namespace

Report build_report(const Store& store, const ReportRequest& request) {
  if (!request.compare_devices.empty() && request.compare_devices.size() != 2) {
    throw UsageError("--compare-devices takes two devices, A,B");
  }
  if (!request.axes.empty() && request.axes.size() != 2) {
    throw UsageError("--axes takes two config axes, x,y");
  }
  const std::vector<StoredDevice> all = store.devices();

  // The devices shown: those named, else every one with a passed measurement or a ceiling.
  std::vector<StoredDevice> chosen;
  if (!request.devices.empty()) {
    std::set<int64_t> seen;
    for (const std::string& text : request.devices) {
      const StoredDevice& d = match_device(all, text);
      if (seen.insert(d.id).second) chosen.push_back(d);
    }
    std::sort(chosen.begin(), chosen.end(),
              [](const StoredDevice& l, const StoredDevice& r) { return l.id < r.id; });
  } else {
    chosen = all;
  }

  std::map<int64_t, WorkloadRecord> workloads;
  std::set<int64_t> run_ids;
  std::vector<DeviceData> devices;
  for (const StoredDevice& d : chosen) {
    DeviceData data;
    data.device = d;
    data.ceilings = store.ceilings(d.fingerprint);
    MeasurementFilter filter;
    filter.device_id = d.id;
    filter.passed_only = true;
    std::map<int64_t, std::vector<StoredMeasurement>> by_workload;
    for (StoredMeasurement& m : store.find_measurements(filter)) {
      if (!request.variant.empty() && !variant_glob_match(request.variant, m.measurement.variant))
        continue;
      auto it = workloads.find(m.workload_id);
      if (it == workloads.end()) {
        std::optional<WorkloadRecord> w = store.workload(m.workload_id);
        ATTN_ASSERT(w.has_value(), "a measurement points at a missing workload");
        it = workloads.emplace(m.workload_id, std::move(*w)).first;
      }
      if (!request.workload.empty() && !glob_match(request.workload, it->second.name)) continue;
      by_workload[m.workload_id].push_back(std::move(m));
    }
    for (auto& [workload_id, rows] : by_workload) {
      std::vector<ConfigTiming> configs = representatives(rows);
      if (configs.empty()) continue;
      for (const ConfigTiming& c : configs) run_ids.insert(c.run_id);
      data.configs[workload_id] = std::move(configs);
    }
    if (request.devices.empty() && data.configs.empty() && data.ceilings.empty()) continue;
    devices.push_back(std::move(data));
  }
  if (devices.empty()) {
    throw UsageError("nothing to report: the database holds no passed measurement" +
                     std::string(request.variant.empty() && request.workload.empty()
                                     ? ""
                                     : " matching --variant/--workload") +
                     " and no ceiling");
  }
  // Workloads in name order (then hash), the order every per-workload list follows.
  const auto workload_order = [&](const std::map<int64_t, std::vector<ConfigTiming>>& configs) {
    std::vector<int64_t> ids;
    for (const auto& [id, c] : configs) ids.push_back(id);
    std::sort(ids.begin(), ids.end(), [&](int64_t l, int64_t r) {
      return std::tie(workloads.at(l).name, workloads.at(l).hash) <
             std::tie(workloads.at(r).name, workloads.at(r).hash);
    });
    return ids;
  };

  Report report;
  {
    std::ostringstream head;
    head << "# attn-bench results report\n\n";
    head << "Generated at " << request.generated_at << " by " << request.tool << " from "
         << code(request.database) << ".\n\n";
    report.head = head.str();
  }
  std::ostringstream body;
  body << "Devices: " << devices.size() << "; runs shown: " << run_ids.size();
  if (!request.variant.empty()) body << "; variants " << code(request.variant);
  if (!request.workload.empty()) body << "; workloads " << code(request.workload);
  body << ". Each config is its latest `confirm` measurement (else its latest `screen` one); "
          "only passed measurements are shown.\n\n";
  body << devices_section(devices);
  body << ceilings_section(devices);

  size_t heatmaps = 0, sweeps_without_axes = 0;
  for (const DeviceData& data : devices) {
    const std::string label = device_label(data.device);
    const std::string key = device_key(data.device);
    body << "## " << cell(label) << "\n\n";

    // Roofline: the best config of each (workload, variant).
    RooflinePlot roofline;
    roofline.title = {"Roofline of " + label};
    roofline.read_gbps = data.ceilings.value(kReadGbps);
    roofline.bf16_tflops = data.ceilings.value(kBf16Tflops);
    std::ostringstream points, above;
    points << "| workload | variant | best config | median us | FLOP/byte | TFLOP/s | GB/s | of "
              "ceiling |\n";
    points << "|---|---|---|--:|--:|--:|--:|--:|\n";
    std::vector<Sweep> sweeps;
    for (int64_t workload_id : workload_order(data.configs)) {
      const WorkloadRecord& w = workloads.at(workload_id);
      std::map<std::string, std::vector<ConfigTiming>> by_variant;
      for (const ConfigTiming& c : data.configs.at(workload_id)) by_variant[c.variant].push_back(c);
      for (auto& [variant, configs] : by_variant) {
        const ConfigTiming& best = *std::min_element(
            configs.begin(), configs.end(),
            [](const ConfigTiming& l, const ConfigTiming& r) { return l.median_us < r.median_us; });
        const double tflops = best.flops / (best.median_us * 1e6);
        const double gbps = best.bytes / (best.median_us * 1e3);
        const double intensity = best.bytes > 0 ? best.flops / best.bytes : 0;
        if (intensity > 0 && tflops > 0)
          roofline.points.push_back({best.family, variant, intensity, tflops});
        CeilingFraction fraction;
        if (const std::optional<Family> f = family_from_string(best.family)) {
          fraction =
              fraction_of_ceiling(bound_of(*f), best.rate(), data.ceilings, &data.device.record);
        }
        points << "| " << cell(w.name) << " | " << cell(variant) << " | "
               << cell(best.config_key.empty() ? "(none)" : best.config_key) << " | "
               << format("%.2f", best.median_us) << " | " << format("%.4g", intensity) << " | "
               << format("%.2f", tflops) << " | " << format("%.1f", gbps) << " | "
               << fraction_text(fraction) << " |\n";
        const std::string why = above_ceiling_reason(fraction);
        if (!why.empty()) {
          above << kAboveCeilingMarker << " " << cell(w.name) << " / " << cell(variant) << ": "
                << why << ".\n";
        }
        sweeps.push_back({w.name, w.hash, variant, std::move(configs)});
      }
    }
    const std::string roofline_stem = "roofline-" + key;
    report.scripts.push_back(
        {roofline_stem + ".gp", roofline_script(roofline, roofline_stem + ".svg")});
    body << "### Roofline\n\n" << image(roofline.title.front(), roofline_stem);
    body << "Ceilings: read "
         << (roofline.read_gbps ? format("%.1f GB/s", *roofline.read_gbps) : "not calibrated")
         << ", bf16 tensor "
         << (roofline.bf16_tflops ? format("%.1f TFLOP/s", *roofline.bf16_tflops)
                                  : "not calibrated");
    if (roofline.read_gbps && roofline.bf16_tflops) {
      body << format(" (ridge point %.1f FLOP/byte)",
                     *roofline.bf16_tflops * 1000 / *roofline.read_gbps);
    }
    body << ". Each point is the best config of one variant on one workload: arithmetic "
            "intensity = useful FLOPs / minimum bytes, against achieved TFLOP/s. Of ceiling: "
            "GB/s of the logical minimum bytes over the read ceiling, or TFLOP/s over the bf16 "
            "ceiling scaled to the config's SM clock where the calibration recorded its own.\n\n";
    if (data.configs.empty()) {
      body << "No passed measurement on this device.\n\n";
    } else {
      body << points.str() << "\n";
      std::string notes = above.str();
      if (data.ceilings.by_metric.count(kBf16Tflops)) {
        const std::string note = unscaled_ceiling_note(data.ceilings.by_metric.at(kBf16Tflops));
        if (!note.empty()) notes += "Not scaled: " + note + ".\n";
      }
      if (!notes.empty()) body << notes << "\n";
    }

    // Heatmaps of the sweeps over two axes.
    std::ostringstream maps;
    for (const Sweep& sweep : sweeps) {
      std::optional<Heatmap> map = sweep_heatmap(sweep.configs, request.axes);
      if (!map) {
        sweeps_without_axes += sweep.configs.size() > 1;
        continue;
      }
      map->title = {sweep.workload + " / " + sweep.variant, "on " + label};
      const std::string stem = "heatmap-" + key + "-" + slug(sweep.workload) + "-" +
                               sweep.workload_hash.substr(0, 8) + "-" + slug(sweep.variant);
      report.scripts.push_back({stem + ".gp", heatmap_script(*map, stem + ".svg")});
      ++heatmaps;
      maps << "#### " << cell(sweep.workload) << " / " << cell(sweep.variant) << ": " << map->y_axis
           << " x " << map->x_axis << "\n\n"
           << image(map->title[0] + " " + map->title[1], stem);
      maps << "| " << map->y_axis << " \\ " << map->x_axis << " |";
      for (int64_t x : map->x_values) maps << " " << x << " |";
      maps << "\n|---|";
      for (size_t i = 0; i < map->x_values.size(); ++i) maps << "--:|";
      maps << "\n";
      for (size_t y = 0; y < map->y_values.size(); ++y) {
        maps << "| " << map->y_values[y] << " |";
        for (const std::optional<double>& v : map->cells[y]) {
          maps << " " << (v ? format("%.2f", *v) : "") << " |";
        }
        maps << "\n";
      }
      maps << "\n";
    }
    body << "### Sweeps\n\n";
    if (maps.str().empty()) {
      body << "No sweep over two config axes"
           << (request.axes.empty() ? std::string()
                                    : " " + request.axes[0] + " and " + request.axes[1])
           << " on this device.\n\n";
    } else {
      body << "Each cell is the best median (us) over the other axes; blank: not measured.\n\n"
           << maps.str();
    }
  }
  if (!request.axes.empty() && heatmaps == 0) {
    throw UsageError("--axes " + request.axes[0] + "," + request.axes[1] +
                     ": no sweep shown has both axes (" + std::to_string(sweeps_without_axes) +
                     " sweeps lack them)");
  }

  if (request.compare_devices.size() == 2) {
    CompareRequest compare_request;
    compare_request.devices = request.compare_devices;
    if (!request.variant.empty()) compare_request.variants = {request.variant};
    compare_request.workload = request.workload;
    compare_request.threshold = request.threshold;
    const CompareResult result = compare(store, compare_request);
    for (int64_t id : result.a.run_ids) run_ids.insert(id);
    for (int64_t id : result.b.run_ids) run_ids.insert(id);
    std::vector<SpeedupBar> bars;
    for (const WorkloadComparison& r : result.rows) {
      bars.push_back(
          {r.workload, r.speedup.estimate, r.speedup.interval.low, r.speedup.interval.high});
    }
    std::string a_key, b_key;
    for (const StoredDevice& d : result.devices) {
      if (d.id == result.a.device_ids.front()) a_key = d.fingerprint.substr(0, 8);
      if (d.id == result.b.device_ids.front()) b_key = d.fingerprint.substr(0, 8);
    }
    const std::string stem = "compare-" + a_key + "-" + b_key;
    const std::vector<std::string> title = {"Speed-up of B over A (95% intervals)",
                                            "A: " + result.a.label, "B: " + result.b.label};
    report.scripts.push_back({stem + ".gp", speedup_bars_script(title, bars, stem + ".svg")});
    body << "## Comparison: " << cell(result.a.label) << " vs " << cell(result.b.label) << "\n\n";
    body << image("Speed-up of " + result.b.label + " over " + result.a.label, stem);
    body << compare_markdown(result, 3) << "\n";
  }

  body << "## Provenance\n\n";
  body << "The runs whose measurements are shown. Paste a command line to reproduce its run.\n\n";
  body << "| run | tool | version | commit | build | host | started | finished | status | "
          "command line |\n";
  body << "|--:|---|---|---|---|---|---|---|---|---|\n";
  for (int64_t id : run_ids) {
    const std::optional<StoredRun> run = store.run(id);
    ATTN_ASSERT(run.has_value(), "a measurement points at a missing run");
    const RunRecord& r = run->record;
    body << "| " << id << " | " << cell(r.tool) << " | " << cell(r.tool_version) << " | "
         << cell(r.git_commit) << " | " << cell(r.build_type)
         << (r.build_type == "Debug" ? " (timings not to be trusted)" : "") << " | " << cell(r.host)
         << " | " << r.started_at << " | " << run->finished_at.value_or("-") << " | "
         << cell(run->status) << " | " << cell(code(r.command_line)) << " |\n";
  }
  body << "\n";
  report.body = body.str();
  return report;
}

}  // namespace attn
