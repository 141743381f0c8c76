// How both programs speak to a user who got something wrong: every message starts with the
// program's name, usage lines name it, an unknown command or flag gets the nearest one, a
// workload that is neither a file nor a preset names the nearest preset instead of listing them
// all; and the machine-readable listings (`list --json`, `devices --json`) parse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/apps/cli_runner.hpp"
#include "workloads/presets.hpp"

namespace attn {
namespace {

using testing::Cli;
using testing::CliResult;
using testing::kInvalidInput;
using testing::kUsage;

// Every line of `err` starts with `program` ("attn-bench: ") or continues the one above it (two
// spaces: a problem of a list).
void expect_lines_start_with_program(const std::string& err, const std::string& program) {
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_TRUE(line.rfind(program + ": ", 0) == 0 || line.rfind("  ", 0) == 0)
        << "a line without the program's name: " << line;
  }
}

class CliManners : public Cli {
 protected:
  CliResult tune(const std::vector<std::string>& args) {
    binary_ = ATTN_TUNE_BINARY;
    CliResult r = run(args);
    binary_ = ATTN_BENCH_BINARY;
    return r;
  }
};

TEST_F(CliManners, AnUnknownCommandGetsTheNearestOne) {
  CliResult r = run({"rn"});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_EQ(r.err.rfind("attn-bench: usage: unknown command 'rn', did you mean 'run'?", 0), 0u)
      << r.err;
  EXPECT_EQ(r.err.find("A subcommand is required"), std::string::npos) << r.err;
  r = run({"workload", "valdate", "default"});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_NE(r.err.find("unknown command 'valdate', did you mean 'validate'?"), std::string::npos)
      << r.err;
  r = tune({"tun", "default"});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_EQ(r.err.rfind("attn-tune: usage: unknown command 'tun', did you mean 'tune'?", 0), 0u)
      << r.err;
  r = run({"frobnicate"});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_NE(r.err.find("unknown command 'frobnicate' (run 'attn-bench --help'"), std::string::npos)
      << r.err;
}

TEST_F(CliManners, NoCommandListsTheCommands) {
  const CliResult r = run({});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_NE(r.err.find("attn-bench: usage: 'attn-bench' needs a command: run, list"),
            std::string::npos)
      << r.err;
  const CliResult w = run({"workload"});
  EXPECT_NE(w.err.find("'attn-bench workload' needs a command: validate, show, dump, schema"),
            std::string::npos)
      << w.err;
}

TEST_F(CliManners, AnUnknownFlagGetsTheNearestFlagOfItsCommand) {
  CliResult r = run({"run", "--cpu", "--polcy", "screen"});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_NE(r.err.find("attn-bench: usage: unknown flag '--polcy' for 'attn-bench run', did you "
                       "mean '--policy'?"),
            std::string::npos)
      << r.err;
  r = tune({"export", "--formt", "cpp"});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_NE(r.err.find("unknown flag '--formt' for 'attn-tune export', did you mean '--format'?"),
            std::string::npos)
      << r.err;
}

TEST_F(CliManners, UsageLinesAndEveryErrorNameTheProgram) {
  const CliResult help = run({"run", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("Usage: attn-bench run"), std::string::npos) << help.out;
  EXPECT_NE(tune({"tune", "--help"}).out.find("Usage: attn-tune tune"), std::string::npos);
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"rn"},
                                             {"run", "--device", "abc"},
                                             {"run", "--cpu", "no-such-workload"},
                                             {"run", "--cpu", "--preset", "defualt"},
                                             {"workload", "validate"},
                                             {"list", "zzz-matches-nothing"},
                                             {"run", "--benchmark_filter=x", "--cpu", "--x"}}) {
    const CliResult r = run(args);
    EXPECT_NE(r.exit_code, 0) << args[0];
    EXPECT_FALSE(r.err.empty()) << args[0];
    expect_lines_start_with_program(r.err, "attn-bench");
  }
  expect_lines_start_with_program(tune({"db", "infos"}).err, "attn-tune");
}

TEST_F(CliManners, AWorkloadThatIsNeitherFileNorPresetNamesTheNearestPresetOnly) {
  CliResult r = run({"run", "--cpu", "decode-llama3-8b-64x409"});
  EXPECT_EQ(r.exit_code, kInvalidInput);
  EXPECT_NE(r.err.find("did you mean \"decode-llama3-8b-64x4096\"?"), std::string::npos) << r.err;
  // Not every preset on one line: at most the one suggested.
  size_t presets_named = 0;
  for (const std::string& name : preset_names()) {
    presets_named += r.err.find("\"" + name + "\"") != std::string::npos;
  }
  EXPECT_LE(presets_named, 1u) << r.err;
  EXPECT_NE(r.err.find("`attn-bench list` lists the presets"), std::string::npos) << r.err;
  r = run({"run", "--cpu", "--preset", "defualt"});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_NE(r.err.find("did you mean \"default\"?"), std::string::npos) << r.err;
}

TEST_F(CliManners, ListAsJsonHoldsEveryPresetAndEachVariantsAxes) {
  const CliResult r = run({"list", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json listing = nlohmann::json::parse(r.out);
  EXPECT_EQ(listing["presets"].size(), preset_names().size());
  bool saw_axes = false;
  for (const auto& family : listing["families"]) {
    for (const auto& variant : family["variants"]) {
      EXPECT_TRUE(variant["name"].get<std::string>().rfind(family["name"].get<std::string>(), 0) ==
                  0);
      saw_axes = saw_axes || !variant["axes"].empty();
    }
  }
  EXPECT_TRUE(saw_axes);
}

TEST_F(CliManners, ListFiltersByGlobOrPartOfTheName) {
  CliResult r = run({"list", "fp8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("decode-llama3-8b-fp8-64x4096"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\n  decode-llama3-8b-64x4096 "), std::string::npos) << r.out;
  r = run({"list", "--json", "paged_decode.*"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json listing = nlohmann::json::parse(r.out);
  ASSERT_EQ(listing["families"].size(), 1u);
  EXPECT_EQ(listing["families"][0]["name"], "paged_decode");
  EXPECT_TRUE(listing["presets"].empty());
  EXPECT_EQ(run({"list", "zzz-matches-nothing"}).exit_code, kUsage);
}

TEST_F(CliManners, DevicesAsJsonSaysWhyThereIsNoGpu) {
  const CliResult r = run({"devices", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json devices = nlohmann::json::parse(r.out);
  ASSERT_TRUE(devices["gpus"].is_array());
  if (devices["gpus"].empty()) {
    EXPECT_FALSE(devices["no_gpu"].get<std::string>().empty());
  } else {
    EXPECT_TRUE(devices["gpus"][0].contains("uuid"));
    EXPECT_TRUE(devices["gpus"][0].contains("ceilings"));
  }
  EXPECT_TRUE(devices.contains("nvrtc"));
}

// On a terminal (here a pseudo-terminal from util-linux's `script`, 60 columns) every line of
// `list` fits the width and a description continues under its own column; in a pipe each entry
// stays one line, for grep.
TEST_F(CliManners, ListWrapsToTheTerminalAndNotInAPipe) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "no script(1)";
  const std::string command =
      "cd " + testing::quote(dir_.string()) + " && COLUMNS=60 script -qec " +
      testing::quote(std::string(ATTN_BENCH_BINARY) + " list decode-llama3-8b-64x4096") +
      " /dev/null > terminal.txt 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  std::string text = testing::slurp(dir_ / "terminal.txt");
  text.erase(std::remove(text.begin(), text.end(), '\r'), text.end());
  std::istringstream lines(text);
  size_t continued = 0;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 60u) << line;
    continued += line.rfind(std::string(20, ' '), 0) == 0;
  }
  EXPECT_GT(continued, 2u) << text;
  const CliResult piped = run({"list", "decode-llama3-8b-64x4096-hnd"});
  ASSERT_EQ(piped.exit_code, 0);
  size_t entries = 0;
  std::istringstream piped_lines(piped.out);
  for (std::string line; std::getline(piped_lines, line);) entries += !line.empty();
  EXPECT_EQ(entries, 2u) << piped.out;  // the heading and the one preset, on one line
}

}  // namespace
}  // namespace attn
