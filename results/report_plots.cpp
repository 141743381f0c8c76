#include "results/report_plots.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

#include "results/table.hpp"

namespace attn {

namespace {

// A gnuplot single-quoted string: no escapes inside but a doubled quote.
std::string gnuplot_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// A string of lines (a title over two lines): single-quoted parts joined by "\n". Never text
// inside double quotes: gnuplot runs a `backquoted command` found in a double-quoted string, and
// titles hold workload and device names.
std::string lines(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += ".\"\\n\".";
    std::string part = parts[i];
    std::replace(part.begin(), part.end(), '\n', ' ');
    out += gnuplot_quoted(part);
  }
  return out.empty() ? "''" : out;
}

std::string number(double value) {
  return format("%.6g", value);
}

// What every script starts with: a clean state (scripts may run in one gnuplot one after
// another), the svg terminal, its output, and text taken literally (no enhanced-text markup, so
// names with '_' or '^' print as written).
std::string preamble(const std::string& svg_name, int width, int height,
                     const std::vector<std::string>& title) {
  std::ostringstream s;
  s << "# Written by attn-tune report: `gnuplot THIS_FILE` in its folder writes " << svg_name
    << "\n";
  s << "reset\n";
  s << "set terminal svg size " << width << "," << height
    << " dynamic noenhanced font 'sans,11' background '#ffffff'\n";
  s << "set output " << gnuplot_quoted(svg_name) << "\n";
  s << "set title " << lines(title) << "\n";
  return s.str();
}

}  // namespace

std::string slug(const std::string& text) {
  std::string out;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += char(std::tolower(u));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "x" : out;
}

std::string roofline_script(const RooflinePlot& plot, const std::string& svg_name) {
  // One datablock per variant, in name order, grouped by family for the colours.
  std::map<std::string, std::map<std::string, std::vector<const RooflinePoint*>>> families;
  for (const RooflinePoint& p : plot.points) {
    families[p.family][p.variant.empty() ? p.family : p.variant].push_back(&p);
  }
  size_t longest_label = 24;
  for (const auto& [family, variants] : families) {
    for (const auto& [variant, points] : variants)
      longest_label = std::max(longest_label, variant.size());
  }
  // The key is outside the data, on the right: the plot widens by the key's width.
  const int key_width = 60 + 7 * int(std::min<size_t>(longest_label, 48));
  std::ostringstream s;
  s << preamble(svg_name, 760 + key_width, 560, plot.title);
  s << "set key outside right top vertical Left reverse noopaque samplen 2\n";
  s << "set logscale xy 10\n";
  s << "set xlabel 'arithmetic intensity (FLOP/byte)'\n";
  s << "set ylabel 'achieved TFLOP/s'\n";
  s << "set grid xtics ytics mxtics mytics lc rgb '#dddddd'\n";
  s << "set samples 400\n";

  // Ranges around the points and the ridge point, a factor of 3 beyond them.
  double x_low = 1e300, x_high = 0, y_low = 1e300, y_high = 0;
  for (const RooflinePoint& p : plot.points) {
    x_low = std::min(x_low, p.intensity);
    x_high = std::max(x_high, p.intensity);
    y_low = std::min(y_low, p.tflops);
    y_high = std::max(y_high, p.tflops);
  }
  if (plot.read_gbps && plot.bf16_tflops) {
    const double ridge = *plot.bf16_tflops * 1000 / *plot.read_gbps;
    x_low = std::min(x_low, ridge);
    x_high = std::max(x_high, ridge);
  }
  if (plot.bf16_tflops) y_high = std::max(y_high, *plot.bf16_tflops);
  if (!(x_high > 0)) x_low = 0.1, x_high = 1000;
  if (!(y_high > 0)) y_low = 0.01, y_high = 1000;
  if (y_low > y_high) y_low = y_high / 1000;
  s << "set xrange [" << number(x_low / 3) << ":" << number(x_high * 3) << "]\n";
  s << "set yrange [" << number(y_low / 3) << ":" << number(y_high * 3) << "]\n";

  int block = 0;
  for (const auto& [family, variants] : families) {
    for (const auto& [variant, points] : variants) {
      s << "$variant" << block++ << " << EOD\n";
      for (const RooflinePoint* p : points)
        s << number(p->intensity) << " " << number(p->tflops) << "\n";
      s << "EOD\n";
    }
  }

  std::vector<std::string> plots;
  if (plot.read_gbps) {
    s << "bandwidth = " << number(*plot.read_gbps) << "  # GB/s, calibrated read bandwidth\n";
    plots.push_back("bandwidth * x / 1000 with lines dt 2 lw 1.5 lc rgb '#2b6cb0' title " +
                    gnuplot_quoted(format("read bandwidth %.0f GB/s", *plot.read_gbps)));
  }
  if (plot.bf16_tflops) {
    s << "tensor = " << number(*plot.bf16_tflops) << "  # TFLOP/s, calibrated bf16 tensor rate\n";
    plots.push_back("tensor with lines dt 2 lw 1.5 lc rgb '#c53030' title " +
                    gnuplot_quoted(format("bf16 tensor %.0f TFLOP/s", *plot.bf16_tflops)));
  }
  if (plot.read_gbps && plot.bf16_tflops) {
    plots.push_back(
        "(bandwidth * x / 1000 < tensor ? bandwidth * x / 1000 : tensor) with lines lw 2.5 lc "
        "rgb '#222222' title 'roofline'");
  }
  // A colour per family; within it a point type per variant (filled and open shapes).
  const char* colors[] = {"#d69e2e", "#38a169", "#805ad5", "#dd6b20", "#319795", "#b83280"};
  const int point_types[] = {5, 7, 9, 11, 13, 4, 6, 8, 10, 12};
  block = 0;
  int family_index = 0;
  for (const auto& [family, variants] : families) {
    int variant_index = 0;
    for (const auto& [variant, points] : variants) {
      plots.push_back(format("$variant%d using 1:2 with points pt %d ps 1.3 lc rgb '%s' title ",
                             block, point_types[variant_index % 10], colors[family_index % 6]) +
                      gnuplot_quoted(variant));
      ++block;
      ++variant_index;
    }
    ++family_index;
  }
  if (plots.empty()) {
    // Nothing to draw but the frame: say so in the plot rather than failing.
    s << "set label 1 'no measurement and no ceiling' at graph 0.5, 0.5 center\n";
    s << "unset key\n";
    plots.push_back("1e-30 notitle");
  }
  s << "plot ";
  for (size_t i = 0; i < plots.size(); ++i) s << (i ? ", \\\n     " : "") << plots[i];
  s << "\n";
  return s.str();
}

std::string heatmap_script(const Heatmap& map, const std::string& svg_name) {
  std::ostringstream s;
  const int width = 260 + 70 * int(map.x_values.size());
  const int height = 200 + 45 * int(map.y_values.size());
  s << preamble(svg_name, std::max(width, 520), std::max(height, 360), map.title);
  s << "set xlabel " << gnuplot_quoted(map.x_axis) << "\n";
  s << "set ylabel " << gnuplot_quoted(map.y_axis) << "\n";
  s << "set cblabel 'best median (us) over the other axes'\n";
  s << "set palette defined (0 '#ffffcc', 1 '#fd8d3c', 2 '#bd0026')\n";
  s << "set xrange [-0.5:" << number(double(map.x_values.size()) - 0.5) << "]\n";
  s << "set yrange [-0.5:" << number(double(map.y_values.size()) - 0.5) << "]\n";
  const auto tics = [](const std::vector<int64_t>& values) {
    std::string text = "(";
    for (size_t i = 0; i < values.size(); ++i) {
      text += (i ? ", " : "") + gnuplot_quoted(std::to_string(values[i])) + " " + std::to_string(i);
    }
    return text + ")";
  };
  s << "set xtics " << tics(map.x_values) << "\n";
  s << "set ytics " << tics(map.y_values) << "\n";
  s << "unset key\n";
  s << "set style fill solid 1.0 noborder\n";
  // One row per measured cell (x index, y index, median); unmeasured cells stay blank.
  s << "$cells << EOD\n";
  for (size_t y = 0; y < map.y_values.size(); ++y) {
    for (size_t x = 0; x < map.x_values.size(); ++x) {
      if (const std::optional<double>& v = map.cells[y][x]) {
        s << x << " " << y << " " << number(*v) << "\n";
      }
    }
  }
  s << "EOD\n";
  s << "plot $cells using 1:2:(0.5):(0.5):3 with boxxyerror fc palette, \\\n"
       "     $cells using 1:2:(sprintf('%.1f', $3)) with labels font 'sans,9'\n";
  return s.str();
}

std::string speedup_bars_script(const std::vector<std::string>& title,
                                const std::vector<SpeedupBar>& bars, const std::string& svg_name) {
  constexpr size_t kMaxLabel = 60;
  // Labels in full up to kMaxLabel characters, else their start and end around "...".
  std::vector<std::string> labels;
  size_t longest = 8;
  for (const SpeedupBar& b : bars) {
    std::string label = b.label;
    if (label.size() > kMaxLabel) {
      label = label.substr(0, kMaxLabel / 2 - 2) + "..." +
              label.substr(label.size() - (kMaxLabel / 2 - 1));
    }
    longest = std::max(longest, label.size());
    labels.push_back(label);
  }
  double low = 1, high = 1;
  for (const SpeedupBar& b : bars) {
    low = std::min({low, b.low, b.estimate});
    high = std::max({high, b.high, b.estimate});
  }
  const double pad = std::max(0.02, (high - low) * 0.08);
  const int rows = std::max<int>(1, int(bars.size()));
  std::ostringstream s;
  // Room for the labels on the left, 440 pixels of bars, the key on the right.
  s << preamble(svg_name, 720 + 7 * int(longest), std::max(300, 150 + 32 * rows), title);
  s << "set xlabel 'speed-up of B over A (median A / median B); 1 = no change'\n";
  s << "set xrange [" << number(std::max(0.0, low - pad)) << ":" << number(high + pad) << "]\n";
  s << "set yrange [" << number(double(rows) - 0.5) << ":-0.5]\n";
  s << "set lmargin " << longest + 2 << "\n";
  s << "set grid xtics lc rgb '#dddddd'\n";
  s << "set key outside right top vertical Left reverse samplen 2\n";
  s << "set style fill solid 0.75 border lc rgb '#1a202c'\n";
  s << "set ytics (";
  for (size_t i = 0; i < labels.size(); ++i)
    s << (i ? ", " : "") << gnuplot_quoted(labels[i]) << " " << i;
  s << ") nomirror\n";
  if (bars.empty()) {
    s << "set label 1 'no workload measured on both sides' at graph 0.5, 0.5 center\n";
  }
  // One datablock per verdict that occurs (an empty one would make gnuplot warn): row, estimate,
  // interval low and high.
  struct Verdict {
    const char* name;
    const char* color;
    const char* title;
  };
  const Verdict verdicts[] = {{"faster", "#2f855a", "B faster (interval above 1)"},
                              {"same", "#a0aec0", "no clear change (interval holds 1)"},
                              {"slower", "#c53030", "B slower (interval below 1)"}};
  std::vector<std::string> plots;
  for (const Verdict& v : verdicts) {
    std::ostringstream rows_text;
    for (size_t i = 0; i < bars.size(); ++i) {
      const SpeedupBar& b = bars[i];
      const char* verdict = b.low > 1 ? "faster" : b.high < 1 ? "slower" : "same";
      if (std::string(verdict) != v.name) continue;
      rows_text << i << " " << number(b.estimate) << " " << number(b.low) << " " << number(b.high)
                << "\n";
    }
    if (rows_text.str().empty()) continue;
    s << "$" << v.name << " << EOD\n" << rows_text.str() << "EOD\n";
    plots.push_back(
        format("$%s using (($2 + 1) / 2):1:(1 < $2 ? 1 : $2):(1 < $2 ? $2 : 1):"
               "($1 - 0.3):($1 + 0.3) with boxxyerror fc rgb '%s' title %s",
               v.name, v.color, gnuplot_quoted(v.title).c_str()));
    plots.push_back(
        format("$%s using 2:1:3:4 with xerrorbars pt 7 ps 0.5 lw 1.5 lc rgb "
               "'#1a202c' notitle",
               v.name));
  }
  if (bars.empty()) plots.push_back("1e30 notitle");  // an axis to draw the frame on
  plots.push_back("keyentry with lines dt 2 lw 1.5 lc rgb '#444444' title 'no change (1.0)'");
  s << "set arrow 1 from 1, graph 0 to 1, graph 1 nohead dt 2 lw 1.5 lc rgb '#444444' front\n";
  s << "plot ";
  for (size_t i = 0; i < plots.size(); ++i) s << (i ? ", \\\n     " : "") << plots[i];
  s << "\n";
  return s.str();
}

}  // namespace attn
