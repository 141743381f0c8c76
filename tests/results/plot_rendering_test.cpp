// Every plot kind of attn-tune report rendered by gnuplot: each script must run without a single
// warning or error on stderr and write its SVG, in the ordinary cases and the edge ones (no
// ceiling, no point, one bar, only slower results, long workload names, many variants). Skipped
// without gnuplot (scripts/install-deps.sh installs gnuplot-nox).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "results/report_plots.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

class PlotRendering : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "gnuplot is not installed (scripts/install-deps.sh installs gnuplot-nox)";
    }
    dir_ = fs::temp_directory_path() / ("attn-plot-rendering-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Runs gnuplot on `script` (named `name`.gp, writing `name`.svg); returns its stderr, with
  // the exit code checked.
  std::string render(const std::string& name, const std::string& script) {
    { std::ofstream(dir_ / (name + ".gp")) << script; }
    const std::string command =
        "cd '" + dir_.string() + "' && gnuplot " + name + ".gp 2> " + name + ".err";
    EXPECT_EQ(std::system(command.c_str()), 0) << name;
    EXPECT_GT(fs::exists(dir_ / (name + ".svg")) ? fs::file_size(dir_ / (name + ".svg")) : 0, 500u)
        << name << ": no SVG";
    std::ifstream err(dir_ / (name + ".err"));
    std::stringstream text;
    text << err.rdbuf();
    return text.str();
  }

  std::string svg(const std::string& name) {
    std::ifstream in(dir_ / (name + ".svg"));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  fs::path dir_;
};

RooflinePlot calibrated_roofline() {
  RooflinePlot plot;
  plot.title = {"Roofline: NVIDIA H200", "fingerprint 50e4d5f7"};
  plot.read_gbps = 4200;
  plot.bf16_tflops = 720;
  plot.points = {{"paged_decode", "paged_decode.sm90_tma", 0.9, 3.1},
                 {"paged_decode", "paged_decode.sm90_tma", 1.0, 3.6},
                 {"paged_decode", "paged_decode.sm80_mma", 0.95, 2.7},
                 {"paged_decode", "paged_decode.sm80_simt", 0.95, 1.1},
                 {"flash_fwd", "flash_fwd.sm90_wgmma", 900, 410},
                 {"flash_fwd", "flash_fwd.sm80_mma", 900, 250},
                 {"prefix_prefill", "prefix_prefill.sm90_wgmma", 300, 180}};
  return plot;
}

TEST_F(PlotRendering, RooflineWithCeilingsDrawsEveryVariantInTheKeyWithoutWarnings) {
  const std::string name = "roofline";
  EXPECT_EQ(render(name, roofline_script(calibrated_roofline(), name + ".svg")), "");
  const std::string picture = svg(name);
  for (const char* variant :
       {"paged_decode.sm90_tma", "paged_decode.sm80_mma", "paged_decode.sm80_simt",
        "flash_fwd.sm90_wgmma", "flash_fwd.sm80_mma", "prefix_prefill.sm90_wgmma"}) {
    EXPECT_NE(picture.find(variant), std::string::npos) << variant << " is not in the key";
  }
}

TEST_F(PlotRendering, RooflineEdgeCasesRenderWithoutWarnings) {
  RooflinePlot bare = calibrated_roofline();
  bare.read_gbps.reset();
  bare.bf16_tflops.reset();
  EXPECT_EQ(render("uncalibrated", roofline_script(bare, "uncalibrated.svg")), "");
  RooflinePlot empty;
  empty.title = {"nothing measured"};
  EXPECT_EQ(render("empty", roofline_script(empty, "empty.svg")), "");
  RooflinePlot many = calibrated_roofline();
  for (int i = 0; i < 14; ++i) {
    many.points.push_back({"blocksparse",
                           "blocksparse.sm80_mma_variant_with_a_long_name_" + std::to_string(i),
                           10.0 + i, 20.0 + i});
  }
  EXPECT_EQ(render("many", roofline_script(many, "many.svg")), "");
}

TEST_F(PlotRendering, HeatmapRendersWithoutWarnings) {
  Heatmap map;
  map.title = {"decode-llama3-8b-64x4096: paged_decode.sm90_tma"};
  map.x_axis = "warps";
  map.y_axis = "tile_tokens";
  map.x_values = {2, 4, 8};
  map.y_values = {32, 64};
  map.cells = {{12.5, std::nullopt, 11.0}, {13.0, 10.5, std::nullopt}};
  EXPECT_EQ(render("heatmap", heatmap_script(map, "heatmap.svg")), "");
}

TEST_F(PlotRendering, SpeedupBarsOfEveryVerdictRenderWithoutWarnings) {
  const std::vector<SpeedupBar> mixed = {
      {"decode-llama3-8b-64x4096", 1.31, 1.28, 1.35},
      {"prefill-dense-d128-4x4096-causal", 0.93, 0.90, 0.96},
      {"prefix-prefill-llama3-8b-8x2048-512-page256", 1.01, 0.98, 1.04},
      {"a-workload-name-far-longer-than-any-label-should-be-allowed-to-grow-in-a-chart", 1.1, 1.05,
       1.2}};
  EXPECT_EQ(
      render("mixed", speedup_bars_script({"B over A", "A: H100", "B: H200"}, mixed, "mixed.svg")),
      "");
  const std::string picture = svg("mixed");
  EXPECT_NE(picture.find("decode-llama3-8b-64x4096"), std::string::npos);
  EXPECT_NE(picture.find("B slower (interval below 1)"), std::string::npos);
  EXPECT_NE(picture.find("B faster (interval above 1)"), std::string::npos);
  // Only one verdict present, one bar, no bar at all.
  EXPECT_EQ(render("slower", speedup_bars_script({"t"}, {{"w", 0.5, 0.4, 0.6}}, "slower.svg")), "");
  EXPECT_EQ(render("none", speedup_bars_script({"t"}, {}, "none.svg")), "");
}

TEST_F(PlotRendering, SlowerAndFasterBarsTakeDifferentColoursAndStartAtOne) {
  const std::string script = speedup_bars_script(
      {"t"}, {{"fast", 1.3, 1.2, 1.4}, {"slow", 0.8, 0.7, 0.9}, {"same", 1.0, 0.9, 1.1}}, "c.svg");
  EXPECT_NE(script.find("$faster << EOD\n0 1.3 1.2 1.4\nEOD"), std::string::npos) << script;
  EXPECT_NE(script.find("$slower << EOD\n1 0.8 0.7 0.9\nEOD"), std::string::npos) << script;
  EXPECT_NE(script.find("$same << EOD\n2 1 0.9 1.1\nEOD"), std::string::npos) << script;
  EXPECT_NE(script.find("fc rgb '#2f855a'"), std::string::npos);
  EXPECT_NE(script.find("fc rgb '#c53030'"), std::string::npos);
  // The bars run from 1 to the estimate, and the x range holds 1 and every interval.
  EXPECT_NE(script.find("(1 < $2 ? 1 : $2):(1 < $2 ? $2 : 1)"), std::string::npos);
  EXPECT_NE(script.find("set xrange [0.644:1.456]"), std::string::npos) << script;
  // A long workload name is shortened around "..." to 60 characters, not cut off by the margin.
  const std::string long_name(100, 'w');
  const std::string one = speedup_bars_script({"t"}, {{long_name, 1, 0.9, 1.1}}, "l.svg");
  EXPECT_NE(one.find("'" + std::string(28, 'w') + "..." + std::string(29, 'w') + "' 0"),
            std::string::npos)
      << one;
}

}  // namespace
}  // namespace attn
