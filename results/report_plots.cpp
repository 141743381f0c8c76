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

// A string field of a datablock row: double-quoted, with no double quote inside.
std::string data_string(std::string text) {
  std::replace(text.begin(), text.end(), '"', '\'');
  std::replace(text.begin(), text.end(), '\n', ' ');
  return "\"" + text + "\"";
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
  std::ostringstream s;
  s << preamble(svg_name, 820, 560, plot.title);
  s << "set key right bottom box opaque\n";
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

  // One datablock per family, in name order.
  std::map<std::string, std::vector<const RooflinePoint*>> families;
  for (const RooflinePoint& p : plot.points) families[p.family].push_back(&p);
  int block = 0;
  for (const auto& [family, points] : families) {
    s << "$family" << block++ << " << EOD\n";
    for (const RooflinePoint* p : points)
      s << number(p->intensity) << " " << number(p->tflops) << "\n";
    s << "EOD\n";
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
  const char* colors[] = {"#d69e2e", "#38a169", "#805ad5", "#dd6b20", "#319795", "#b83280"};
  block = 0;
  for (const auto& [family, points] : families) {
    plots.push_back(format("$family%d using 1:2 with points pt %d ps 1.3 lc rgb '%s' title ", block,
                           5 + 2 * (block % 4), colors[block % 6]) +
                    gnuplot_quoted(family));
    ++block;
  }
  if (plots.empty()) {
    // Nothing to draw but the frame: say so in the plot rather than failing.
    s << "set label 1 'no measurement and no ceiling' at graph 0.5, 0.5 center\n";
    plots.push_back("NaN notitle");
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
  std::ostringstream s;
  s << preamble(svg_name, std::max(560, 180 + 60 * int(bars.size())), 520, title);
  s << "set ylabel 'speed-up of B over A (median A / median B)'\n";
  s << "set xrange [-0.6:" << number(double(bars.size()) - 0.4) << "]\n";
  double high = 1;
  for (const SpeedupBar& b : bars) high = std::max(high, b.high);
  s << "set yrange [0:" << number(high * 1.15) << "]\n";
  s << "set xtics rotate by -30 left nomirror\n";
  s << "set grid ytics lc rgb '#dddddd'\n";
  s << "set boxwidth 0.6\n";
  s << "set style fill solid 0.7 border lc rgb '#1a365d'\n";
  s << "set key right top\n";
  s << "set bmargin 9\n";
  s << "$bars << EOD\n";
  for (size_t i = 0; i < bars.size(); ++i) {
    s << i << " " << data_string(bars[i].label) << " " << number(bars[i].estimate) << " "
      << number(bars[i].low) << " " << number(bars[i].high) << "\n";
  }
  s << "EOD\n";
  s << "plot $bars using 1:3:xtic(2) with boxes lc rgb '#4a90d9' title 'speed-up', \\\n"
       "     $bars using 1:3:4:5 with yerrorbars pt 7 ps 0.4 lw 1.5 lc rgb '#1a202c' title '95% "
       "interval', \\\n"
       "     1 with lines dt 2 lw 1.5 lc rgb '#444444' title 'no change'\n";
  return s.str();
}

}  // namespace attn
