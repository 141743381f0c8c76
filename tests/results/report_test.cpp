// attn-tune report's parts: the heatmap of a sweep, the gnuplot scripts, and the markdown of a
// fixture database (tests/results/comparison_fixture.hpp). Rendering with gnuplot is tested
// through the binary (tests/apps/compare_cli_test.cpp).
#include "results/report.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/errors.hpp"
#include "tests/results/comparison_fixture.hpp"

namespace attn {
namespace {

ConfigTiming config(const std::string& key, double median) {
  ConfigTiming c;
  c.variant = "paged_decode.sm80_simt";
  c.config_key = key;
  c.median_us = median;
  c.samples = {median};
  return c;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Report, HeatmapPicksTheAxesWithMostValuesAndTakesTheBestOverTheRest) {
  std::vector<ConfigTiming> configs;
  for (int tile : {32, 64, 128}) {
    for (int warps : {2, 4}) {
      for (int splits : {0, 8}) {
        const std::string key = "num_splits=" + std::to_string(splits) +
                                ",tile_tokens=" + std::to_string(tile) +
                                ",warps=" + std::to_string(warps);
        configs.push_back(config(key, tile + warps * 10 + splits));
      }
    }
  }
  configs.push_back(config("not a key", 1));  // unreadable: left out, not a crash
  const std::optional<Heatmap> map = sweep_heatmap(configs);
  ASSERT_TRUE(map.has_value());
  EXPECT_EQ(map->x_axis, "tile_tokens");  // 3 values
  EXPECT_EQ(map->y_axis, "num_splits");   // 2 values, and before "warps" by name
  EXPECT_EQ(map->x_values, (std::vector<int64_t>{32, 64, 128}));
  EXPECT_EQ(map->y_values, (std::vector<int64_t>{0, 8}));
  // Best over warps: warps 2 adds 20, warps 4 adds 40.
  EXPECT_DOUBLE_EQ(*map->cells[0][0], 32 + 20 + 0);
  EXPECT_DOUBLE_EQ(*map->cells[1][2], 128 + 20 + 8);

  const std::optional<Heatmap> chosen = sweep_heatmap(configs, {"warps", "tile_tokens"});
  ASSERT_TRUE(chosen.has_value());
  EXPECT_EQ(chosen->x_axis, "warps");
  EXPECT_EQ(chosen->y_axis, "tile_tokens");
  EXPECT_DOUBLE_EQ(*chosen->cells[2][1], 128 + 40 + 0);  // best over num_splits
  EXPECT_FALSE(sweep_heatmap(configs, {"warps", "stages"}).has_value());
  EXPECT_FALSE(sweep_heatmap(configs, {"warps", "warps"}).has_value());
}

TEST(Report, HeatmapNeedsTwoSweptAxesAndLeavesUnmeasuredCellsBlank) {
  EXPECT_FALSE(
      sweep_heatmap({config("warps=2,tile_tokens=64", 1), config("warps=4,tile_tokens=64", 2)})
          .has_value());  // one axis varies
  const std::optional<Heatmap> sparse =
      sweep_heatmap({config("a=1,b=1", 5), config("a=2,b=2", 6), config("a=3,b=1", 7)});
  ASSERT_TRUE(sparse.has_value());
  EXPECT_EQ(sparse->x_axis, "a");
  EXPECT_TRUE(sparse->cells[0][0].has_value());
  EXPECT_FALSE(sparse->cells[0][1].has_value());  // a=2, b=1 never measured
  const std::string script = heatmap_script(*sparse, "h.svg");
  EXPECT_NE(script.find("$cells << EOD\n0 0 5\n2 0 7\n1 1 6\nEOD"), std::string::npos) << script;
  EXPECT_NE(script.find("set xtics ('1' 0, '2' 1, '3' 2)"), std::string::npos) << script;
}

TEST(Report, GnuplotScripts) {
  RooflinePlot plot;
  plot.title = {"Roofline of it's \"H100\"", "second line"};
  plot.read_gbps = 3000;
  plot.bf16_tflops = 600;
  plot.points = {{"paged_decode", "paged_decode.sm90_tma", 4, 9.6},
                 {"flash_fwd", "flash_fwd.sm90_wgmma", 2000, 400},
                 {"paged_decode", "paged_decode.sm90_tma", 4, 8}};
  const std::string s = roofline_script(plot, "roofline-x.svg");
  for (const char* text :
       {"reset\n", "set terminal svg", "noenhanced", "set output 'roofline-x.svg'",
        "set title 'Roofline of it''s \"H100\"'.\"\\n\".'second line'\n", "set logscale xy",
        "bandwidth = 3000", "tensor = 600", "title 'roofline'", "title 'paged_decode.sm90_tma'",
        "title 'flash_fwd.sm90_wgmma'", "4 9.6\n4 8\n", "2000 400\n", "set key outside"}) {
    EXPECT_NE(s.find(text), std::string::npos) << text << "\n" << s;
  }
  // The ridge point (200 FLOP/byte) and every point lie inside the x range.
  EXPECT_NE(s.find("set xrange [1.33333:6000]"), std::string::npos) << s;

  RooflinePlot bare;
  bare.title = {"uncalibrated"};
  bare.points = {{"paged_decode", "paged_decode.sm80_simt", 4, 9.6}};
  const std::string b = roofline_script(bare, "r.svg");
  EXPECT_EQ(b.find("bandwidth"), std::string::npos);
  EXPECT_EQ(b.find("'roofline'"), std::string::npos);
  EXPECT_NE(b.find("$variant0 using 1:2"), std::string::npos);

  const std::string bars = speedup_bars_script(
      {"B over A"}, {{"decode \"x\"", 1.3, 1.2, 1.4}, {"prefill", 0.9, 0.85, 0.95}}, "c.svg");
  EXPECT_NE(bars.find("set ytics ('decode \"x\"' 0, 'prefill' 1)"), std::string::npos) << bars;
  EXPECT_NE(bars.find("$faster << EOD\n0 1.3 1.2 1.4\nEOD"), std::string::npos) << bars;
  EXPECT_NE(bars.find("$slower << EOD\n1 0.9 0.85 0.95\nEOD"), std::string::npos) << bars;
  EXPECT_NE(bars.find("with xerrorbars"), std::string::npos);
  EXPECT_NE(bars.find("set arrow 1 from 1, graph 0 to 1, graph 1"), std::string::npos);
  EXPECT_EQ(slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(slug("--paged_decode.sm80_simt--"), "paged-decode-sm80-simt");
}

// Titles carry workload and device names: a name written to run a command (gnuplot runs a
// `backquoted command` inside a double-quoted string) or to close the quotes stays inert text in a
// single-quoted string, and gnuplot, when installed, renders it without running anything.
TEST(Report, HostileNamesInTitlesRunNothing) {
  const std::string name = "x`touch PWNED`\" @t '; system('touch PWNED2') $(touch PWNED3) ../../e";
  RooflinePlot plot;
  plot.title = {"Roofline of " + name, "line two"};
  plot.points = {{"paged_decode", "paged_decode.sm80_simt", 4, 9.6}};
  const std::string s = roofline_script(plot, "r.svg");
  const size_t at = s.find("set title ");
  ASSERT_NE(at, std::string::npos) << s;
  const std::string title = s.substr(at, s.find('\n', at) - at);
  EXPECT_EQ(title,
            "set title 'Roofline of x`touch PWNED`\" @t ''; system(''touch PWNED2'') $(touch "
            "PWNED3) ../../e'.\"\\n\".'line two'");
  // The only double-quoted string in the script is the line break.
  size_t quotes = 0;
  for (size_t i = s.find('"'); i != std::string::npos; i = s.find('"', i + 1)) ++quotes;
  EXPECT_EQ(quotes, 3u) << s;  // "\n" and the name's own '"' inside single quotes

  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) GTEST_SKIP() << "no gnuplot";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("attn-report-hostile-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "r.gp") << s; }
  const std::string command = "cd '" + dir.string() + "' && gnuplot r.gp >/dev/null 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0);
  EXPECT_TRUE(std::filesystem::exists(dir / "r.svg"));
  for (const char* pwned : {"PWNED", "PWNED2", "PWNED3"}) {
    EXPECT_FALSE(std::filesystem::exists(dir / pwned)) << pwned << ": gnuplot ran a command";
  }
  std::filesystem::remove_all(dir);
}

class ReportStore : public ::testing::Test {
 protected:
  void SetUp() override { fixture_ = testing::fill_comparison_fixture(store_); }
  ReportRequest request() const {
    ReportRequest r;
    r.database = "fixture.db";
    r.generated_at = "2026-02-03T04:05:06.007Z";
    r.tool = "attn-tune test";
    return r;
  }
  Store store_{":memory:"};
  testing::ComparisonFixture fixture_;
};

TEST_F(ReportStore, SectionsPlotsAndProvenance) {
  ReportRequest r = request();
  r.compare_devices = {"H100", "H200"};
  const Report report = build_report(store_, r);
  const std::string md = report.markdown("");
  for (const char* text :
       {"# attn-bench results report", "Generated at 2026-02-03T04:05:06.007Z by attn-tune test",
        "## Devices", "## Ceilings", "## NVIDIA H100 80GB HBM3 (", "## NVIDIA H200 (",
        "### Roofline", "### Sweeps", "## Comparison: NVIDIA H100 80GB HBM3", "### Times",
        "### Best configs", "## Provenance", "| read_gbps | 3000.0 GB/s |",
        "#### decode-llama / paged_decode.sm80_simt: num_splits x tile_tokens",
        "| num_splits \\ tile_tokens | 32 | 64 | 128 |",
        "attn-tune tune decode-llama --variant 'paged_decode.*' --db h100-node.db",
        "(ridge point 200.0 FLOP/byte)",
        "| decode-llama | paged_decode.sm80_simt | "
        "num_splits=8,tile_tokens=64,warps=4 | 100.00 | 4 | 9.60 | 2400.0 | 80.0% |"}) {
    EXPECT_NE(md.find(text), std::string::npos) << text;
  }
  EXPECT_NE(md.find(fixture_.h100_fingerprint), std::string::npos);
  EXPECT_NE(md.find(fixture_.h200_fingerprint), std::string::npos);
  EXPECT_EQ(count(md, "Generated at"), 1u);

  // One roofline per device, one heatmap per sweep of two axes (decode-llama's sm80_simt on both
  // devices, its sm80_mma on the H100, prefill-mistral's on both), one bar chart.
  std::vector<std::string> names;
  for (const ReportFile& f : report.scripts) names.push_back(f.name);
  const std::string h100 = fixture_.h100_fingerprint.substr(0, 8);
  EXPECT_EQ(std::count(names.begin(), names.end(), "roofline-" + h100 + ".gp"), 1);
  EXPECT_EQ(std::count_if(names.begin(), names.end(),
                          [](const std::string& n) { return n.rfind("heatmap-", 0) == 0; }),
            5);
  EXPECT_EQ(std::count_if(names.begin(), names.end(),
                          [](const std::string& n) { return n.rfind("compare-", 0) == 0; }),
            1);
  for (const ReportFile& f : report.scripts) {
    const std::string stem = f.name.substr(0, f.name.size() - 3);
    EXPECT_NE(md.find("](" + stem + ".svg)"), std::string::npos) << stem;  // embedded
    EXPECT_NE(f.text.find("set output '" + stem + ".svg'"), std::string::npos) << f.name;
  }
  // Two runs, each row once.
  EXPECT_EQ(count(md, "| attn-tune tune | 0.1.0 |"), 2u);

  // The note goes under the head.
  const std::string noted = report.markdown("> plots were not rendered\n");
  EXPECT_LT(noted.find("> plots were not rendered"), noted.find("## Devices"));
  EXPECT_GT(noted.find("> plots were not rendered"), noted.find("Generated at"));
  // The same request gives the same report.
  EXPECT_EQ(md, build_report(store_, r).markdown(""));
}

TEST_F(ReportStore, FiltersAndChosenAxes) {
  ReportRequest r = request();
  r.devices = {"H200"};
  r.variant = "flash_fwd.*";
  r.axes = {"warps", "block_m"};
  const Report report = build_report(store_, r);
  const std::string md = report.markdown("");
  EXPECT_EQ(md.find("## NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(md.find("## NVIDIA H200"), std::string::npos);
  EXPECT_EQ(md.find("paged_decode.sm80_simt"), std::string::npos);
  EXPECT_NE(md.find("#### prefill-mistral / flash_fwd.sm80_mma: block_m x warps"),
            std::string::npos);
  EXPECT_EQ(report.scripts.size(), 2u);                    // the roofline and one heatmap
  EXPECT_EQ(count(md, "| attn-tune tune | 0.1.0 |"), 1u);  // only the H200's run
}

TEST_F(ReportStore, UsageErrors) {
  ReportRequest r = request();
  r.axes = {"warps", "no_such_axis"};
  EXPECT_THROW(build_report(store_, r), UsageError);
  r = request();
  r.devices = {"NVIDIA"};  // both
  EXPECT_THROW(build_report(store_, r), UsageError);
  r = request();
  r.compare_devices = {"H100"};
  EXPECT_THROW(build_report(store_, r), UsageError);
  r = request();
  r.workload = "nothing-*";
  // Devices with ceilings are still shown, without measurements.
  const std::string md = build_report(store_, r).markdown("");
  EXPECT_NE(md.find("No passed measurement on this device."), std::string::npos);
  Store empty(":memory:");
  EXPECT_THROW(build_report(empty, request()), UsageError);
}

}  // namespace
}  // namespace attn
