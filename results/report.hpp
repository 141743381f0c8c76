// attn-tune report: a markdown report of what the results database holds, with gnuplot scripts
// for its plots (results/report_plots.hpp). Per device: its fingerprint and ceilings, a roofline
// chart of the best config of each (workload, variant), and a heatmap of each sweep over two
// config axes; optionally a comparison of two devices (results/compare.hpp) with a bar chart of the
// speed-ups; and the provenance of every run shown. The text depends only on the database and the
// request (sorted, no time but the one generated-at line), so a test can compare two reports.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "results/compare.hpp"
#include "results/report_plots.hpp"
#include "results/store.hpp"

namespace attn {

struct ReportRequest {
  std::vector<std::string> devices;                // each names a device (match_device); empty: all
  std::vector<std::string> compare_devices;        // none, or the two devices to compare
  std::string variant, workload;                   // globs narrowing what is shown; empty: all
  std::vector<std::string> axes;                   // none, or the two heatmap axes (x, y)
  double threshold = kDefaultRegressionThreshold;  // the comparison's (fraction)
  std::string database;                            // the path, as shown in the report
  std::string generated_at;                        // the one time in the report
  std::string tool;                                // "attn-tune 0.3.0 (0123abcd)"
};

struct ReportFile {
  std::string name, text;
};

struct Report {
  std::string head;                 // the title and the generated-at line
  std::string body;                 // every section
  std::vector<ReportFile> scripts;  // gnuplot scripts: NAME.gp writes NAME.svg
  // The report: head, then `plots_note` when it is not empty (plots not rendered: why, and how
  // to render them), then the body.
  std::string markdown(const std::string& plots_note) const;
};

// Throws UsageError when a device or axis asked for is not there, or when nothing would be shown.
Report build_report(const Store& store, const ReportRequest& request);

// The heatmap of a sweep: configs (of one variant on one workload and device) over the two axes
// `axes` names, else the two with the most distinct values (ties: by name), each cell the best
// median over the other axes. nullopt when the configs do not sweep two axes (fewer than two axes
// with two values or more; with `axes`, either axis missing from some config).
std::optional<Heatmap> sweep_heatmap(const std::vector<ConfigTiming>& configs,
                                     const std::vector<std::string>& axes = {});

}  // namespace attn
