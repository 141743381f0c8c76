// The plots of attn-tune report as gnuplot scripts: plain values in, the text of one
// self-contained script out (its data inline, as datablocks). Each script starts with `reset`
// and writes one SVG with gnuplot's svg terminal (in every gnuplot build), named by a relative
// path, so `cd DIR && gnuplot *.gp` renders a report's plots anywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attn {

// A roofline chart: measured points (arithmetic intensity = FLOPs / bytes against achieved
// TFLOP/s) under the device's measured ceilings, log-log. Each variant has its own point style
// and an entry in the key, which sits outside the plot, to the right of the data; variants of
// one family share a colour.
struct RooflinePoint {
  std::string family;
  std::string variant;   // the key's label ("paged_decode.sm90_tma")
  double intensity = 0;  // FLOP per byte
  double tflops = 0;
};
// Titles are lines, each shown on its own line.
struct RooflinePlot {
  std::vector<std::string> title;
  std::optional<double> read_gbps, bf16_tflops;  // the ceilings; absent when not calibrated
  std::vector<RooflinePoint> points;             // each with intensity and tflops > 0
};
std::string roofline_script(const RooflinePlot& plot, const std::string& svg_name);

// A heatmap of a sweep over two config axes; cells[y][x] is the best median (us) over the other
// axes, absent where no config of that pair was measured.
struct Heatmap {
  std::vector<std::string> title;
  std::string x_axis, y_axis;
  std::vector<int64_t> x_values, y_values;  // ascending
  std::vector<std::vector<std::optional<double>>> cells;
};
std::string heatmap_script(const Heatmap& map, const std::string& svg_name);

// Bars of a comparison, one row per workload (its name on the left, in full up to 60
// characters): the speed-up of B over A drawn from 1 (no change, a dashed line) to the estimate,
// with its interval as an error bar. A bar is green when the whole interval is above 1 (B
// faster), red when it is below 1 (B slower), grey when it holds 1.
struct SpeedupBar {
  std::string label;
  double estimate = 0, low = 0, high = 0;
};
std::string speedup_bars_script(const std::vector<std::string>& title,
                                const std::vector<SpeedupBar>& bars, const std::string& svg_name);

// "nvidia-h100-80gb-hbm3": lower case letters, digits and single dashes, for file names.
std::string slug(const std::string& text);

}  // namespace attn
