// The analysis commands (`attn-tune db info`, `export`, `compare`, `report`) print the same
// bytes on the committed results databases as the goldens in tests/apps/golden/, apart from the
// lines that carry the time of the run, and the running binary's own commit and path (an export
// records which build wrote it). The goldens were
// written by the binary before the measurement core, the search and the analysis became separate
// modules; a change that means to alter one of these outputs rewrites its golden on purpose:
//   ATTN_GOLDEN_WRITE=1 build/tests/attn_apps_tests --gtest_filter='GoldenOutputs.*'
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/apps/cli_runner.hpp"

namespace attn::testing {
namespace {

namespace fs = std::filesystem;

// Lines holding the current time (and the commit of the binary that printed it) become one
// placeholder: "Generated ...", "generated_at", kGeneratedAt.
std::string without_time_lines(const std::string& text) {
  static const std::regex time_line(
      R"(^.*(Generated at |// Generated |"generated_at"|kGeneratedAt).*$)");
  std::stringstream in(text);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    out += std::regex_match(line, time_line) ? "<line with the time of the run>" : line;
    out += '\n';
  }
  return out;
}

class GoldenOutputs : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    binary_ = ATTN_TUNE_BINARY;
    const fs::path reports = fs::path(ATTN_SOURCE_DIR) / "docs" / "reports";
    fs::copy_file(reports / "2026-11-21-h100-vs-h200" / "results.db", dir_ / "h100-vs-h200.db");
    fs::copy_file(reports / "2026-11-22-peers-h200" / "results.db", dir_ / "peers-h200.db");
  }

  // The running binary's commit ("attn-tune 0.1.0 (COMMIT)") and path become placeholders.
  std::string without_build(std::string text) {
    if (commit_.empty()) {
      const std::string version = run({"--version"}).out;
      const size_t open = version.find('('), close = version.rfind(')');
      if (open == std::string::npos || close == std::string::npos || close <= open) {
        ADD_FAILURE() << "no commit in --version: " << version;
        return text;
      }
      commit_ = version.substr(open + 1, close - open - 1);
    }
    for (const auto& [from, to] : {std::pair<std::string, std::string>{binary_, "attn-tune"},
                                   {commit_, "<commit of this build>"}}) {
      for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
        text.replace(at, from.size(), to);
        at += to.size();
      }
    }
    return text;
  }

  // Runs `args`; the text compared is stdout, stderr and each named output file.
  std::string output_of(const std::vector<std::string>& args,
                        const std::vector<std::string>& files = {}) {
    const CliResult r = run(args);
    std::string text =
        "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
    for (const std::string& f : files) text += "--- " + f + "\n" + slurp(dir_ / f);
    return without_build(without_time_lines(text));
  }

  // report -o DIR: its markdown and every gnuplot script, by name (the SVGs are gnuplot's).
  std::string report_of(const std::vector<std::string>& args, const std::string& folder) {
    std::string text = output_of(args);
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_ / folder)) {
      const std::string name = entry.path().filename().string();
      if (name.size() > 4 &&
          (name.substr(name.size() - 3) == ".gp" || name.substr(name.size() - 3) == ".md")) {
        names.push_back(name);
      }
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      text += "--- " + name + "\n" + without_build(without_time_lines(slurp(dir_ / folder / name)));
    }
    return text;
  }

  std::string commit_;

  void expect_golden(const std::string& name, const std::string& actual) {
    const fs::path golden = fs::path(ATTN_SOURCE_DIR) / "tests" / "apps" / "golden" / name;
    if (std::getenv("ATTN_GOLDEN_WRITE") != nullptr) {
      std::ofstream(golden, std::ios::binary) << actual;
      return;
    }
    ASSERT_TRUE(fs::exists(golden)) << golden;
    const std::string expected = slurp(golden);
    if (expected == actual) return;
    // Name the first line that differs.
    std::stringstream a(expected), b(actual);
    std::string la, lb;
    int line = 0;
    while (true) {
      const bool more_a = bool(std::getline(a, la)), more_b = bool(std::getline(b, lb));
      ++line;
      if (!more_a && !more_b) break;
      if (la != lb || more_a != more_b) {
        ADD_FAILURE() << name << ": line " << line << " differs\n  golden: " << la
                      << "\n  now:    " << lb;
        return;
      }
    }
    ADD_FAILURE() << name << " differs";
  }
};

TEST_F(GoldenOutputs, DbInfo) {
  expect_golden("db_info_h100_vs_h200.txt", output_of({"db", "info", "--db", "h100-vs-h200.db"}));
  expect_golden("db_info_h100_vs_h200.json",
                output_of({"db", "info", "--db", "h100-vs-h200.db", "--json"}));
  expect_golden("db_info_peers_h200.txt", output_of({"db", "info", "--db", "peers-h200.db"}));
}

TEST_F(GoldenOutputs, Export) {
  expect_golden("export_h100_vs_h200.json",
                output_of({"export", "--db", "h100-vs-h200.db", "--all-devices", "--format", "json",
                           "-o", "export.json"},
                          {"export.json"}));
  expect_golden("export_h100_vs_h200.hpp",
                output_of({"export", "--db", "h100-vs-h200.db", "--all-devices", "--format", "cpp",
                           "-o", "export.hpp"},
                          {"export.hpp"}));
  expect_golden("export_peers_h200.json",
                output_of({"export", "--db", "peers-h200.db", "--all-devices", "-o", "export.json"},
                          {"export.json"}));
}

TEST_F(GoldenOutputs, Compare) {
  expect_golden("compare_devices.md", output_of({"compare", "--db", "h100-vs-h200.db", "--device",
                                                 "H100", "--device", "H200"}));
  expect_golden("compare_devices.json",
                output_of({"compare", "--db", "h100-vs-h200.db", "--device", "H100", "--device",
                           "H200", "--format", "json"}));
  expect_golden("compare_variants.md",
                output_of({"compare", "--db", "peers-h200.db", "--variant",
                           "paged_decode.tensorcore", "--variant", "peer.*"}));
  // The database stores the variant's old name; today's name selects the same rows, so the
  // comparison is the golden one but for the side's label, which repeats what was asked for.
  std::string by_new_name = output_of({"compare", "--db", "peers-h200.db", "--variant",
                                       "paged_decode.sm80_mma", "--variant", "peer.*"});
  const std::string asked = "**A**: paged_decode.sm80_mma on";
  const size_t at = by_new_name.find(asked);
  ASSERT_NE(at, std::string::npos) << by_new_name;
  by_new_name.replace(at, asked.size(), "**A**: paged_decode.tensorcore on");
  expect_golden("compare_variants.md", by_new_name);
}

TEST_F(GoldenOutputs, Report) {
  expect_golden(
      "report_h100_vs_h200.txt",
      report_of({"report", "--db", "h100-vs-h200.db", "--no-plots", "-o", "report"}, "report"));
}

}  // namespace
}  // namespace attn::testing
