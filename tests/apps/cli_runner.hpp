// Runs the attn-bench binary as a user would, in a fresh folder per test, and captures its exit
// code, standard output and standard error. Shared by the CLI test files.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace attn::testing {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string quote(const std::string& arg) {
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Live processes whose /proc/PID/`file` ("environ" or "cmdline") holds `marker` (a zombie's reads
// empty): tests use it to check that no worker outlives its orchestrator.
inline int processes_with(const std::string& marker, const char* file = "environ") {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    n += text.str().find(marker) != std::string::npos;
  }
  return n;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() /
        ("attn-cli-test-" + std::to_string(::getpid()) + "-" +
         std::string(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  CliResult run(const std::vector<std::string>& args) {
    std::string command = "cd " + quote(dir_.string()) +
                          " && ATTN_DB= ATTN_JIT_CACHE_DIR=" + quote((dir_ / "jit").string()) +
                          " " + quote(binary_);
    for (const auto& a : args) command += " " + quote(a);
    command += " >" + quote((dir_ / "stdout").string()) + " 2>" + quote((dir_ / "stderr").string());
    const int status = std::system(command.c_str());
    CliResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(dir_ / "stdout");
    r.err = slurp(dir_ / "stderr");
    return r;
  }

  std::filesystem::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }

  std::filesystem::path dir_;
  std::string binary_ = ATTN_BENCH_BINARY;  // the executable run() starts
};

}  // namespace attn::testing
