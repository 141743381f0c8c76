// The hostile workload files of tests/apps/hostile/ (expected.tsv lists each with its verdicts)
// through the real binary, `attn-bench workload validate` and `attn-bench run --cpu`, under a
// host-memory budget of 384 MiB: each is refused with the invalid-input exit code and the rule
// it breaks, or runs to the end, within 5 s and 512 MiB of resident memory, with bounded messages
// (docs/reliability.md). The budget below the memory limit checks the estimate too: a workload it
// lets through must fit.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__)
constexpr long kHostileFileResidentKiB = 1024 * 1024;  // shadow memory and redzones
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr long kHostileFileResidentKiB = 1024 * 1024;
#else
constexpr long kHostileFileResidentKiB = 512 * 1024;
#endif
#else
constexpr long kHostileFileResidentKiB = 512 * 1024;
#endif
constexpr double kHostileFileSeconds = 5.0;
constexpr const char* kHostileBudget = "384MiB";

const fs::path kHostileDir = fs::path(ATTN_SOURCE_DIR) / "tests" / "apps" / "hostile";

struct HostileFile {
  std::string file;
  int validate_exit = 0, run_exit = 0;
  std::string message;  // in stderr when an exit code is 3
};

// expected.tsv: file, validate's exit code, run's exit code, a message; '#' starts a comment.
std::vector<HostileFile> hostile_manifest() {
  std::vector<HostileFile> files;
  std::ifstream in(kHostileDir / "expected.tsv");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    HostileFile f;
    std::string validate, run;
    std::getline(fields, f.file, '\t');
    std::getline(fields, validate, '\t');
    std::getline(fields, run, '\t');
    std::getline(fields, f.message);
    f.validate_exit = std::stoi(validate);
    f.run_exit = std::stoi(run);
    files.push_back(f);
  }
  return files;
}

// Workload files: *.json but not the files they refer to (*.layout.json, *.mask.json).
bool is_workload_file(const fs::path& path) {
  const std::string name = path.filename().string();
  auto ends_with = [&](const std::string& tail) {
    return name.size() >= tail.size() &&
           name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return ends_with(".json") && !ends_with(".layout.json") && !ends_with(".mask.json");
}

class HostileFiles : public testing::Cli {
 protected:
  testing::MeasuredRun run_binary(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {binary_};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::run_measured(argv,
                                 {"ATTN_DB=", "ATTN_JIT_CACHE_DIR=" + (dir_ / "jit").string()},
                                 dir_, kHostileFileSeconds * 2);
  }

  void expect_verdict(const HostileFile& f, const std::string& command, int expected_exit,
                      const testing::MeasuredRun& r) {
    SCOPED_TRACE(f.file + " (" + command + ")");
    EXPECT_FALSE(r.killed) << "still running after " << kHostileFileSeconds * 2 << " s";
    EXPECT_EQ(r.exit_code, expected_exit) << r.out << r.err;
    EXPECT_LT(r.seconds, kHostileFileSeconds);
    EXPECT_LT(r.max_resident_kib, kHostileFileResidentKiB);
    if (expected_exit == testing::kInvalidInput) {
      EXPECT_EQ(r.err.rfind("attn-bench: invalid input: ", 0), 0u) << r.err;
      EXPECT_NE(r.err.find(f.message), std::string::npos) << r.err;
    }
    // Bounded messages: at most 50 problems and a count, each on one line of at most ~1000 bytes.
    EXPECT_LT(r.err.size(), size_t(64) << 10);
    size_t lines = 0;
    std::istringstream err(r.err);
    for (std::string line; std::getline(err, line); ++lines) {
      EXPECT_LE(line.size(), 1200u) << line.substr(0, 200);
    }
    EXPECT_LE(lines, 53u);
  }
};

TEST_F(HostileFiles, EachIsRefusedOrRunsInBoundedTimeAndMemory) {
  const std::vector<HostileFile> files = hostile_manifest();
  std::set<std::string> listed;
  for (const HostileFile& f : files) listed.insert(f.file);
  std::set<std::string> present;
  for (const auto& entry : fs::directory_iterator(kHostileDir)) {
    if (is_workload_file(entry.path())) present.insert(entry.path().filename().string());
  }
  EXPECT_EQ(listed, present) << "expected.tsv lists every workload file of tests/apps/hostile/";
  EXPECT_GE(files.size(), 60u);

  // The slowest and the largest run, printed for docs/reliability.md.
  double slowest = 0;
  long largest_kib = 0;
  std::string slowest_run, largest_run;
  const auto note = [&](const HostileFile& f, const std::string& command,
                        const testing::MeasuredRun& r) {
    if (r.seconds > slowest) {
      slowest = r.seconds;
      slowest_run = f.file + " (" + command + ")";
    }
    if (r.max_resident_kib > largest_kib) {
      largest_kib = r.max_resident_kib;
      largest_run = f.file + " (" + command + ")";
    }
  };
  for (const HostileFile& f : files) {
    const std::string path = (kHostileDir / f.file).string();
    const testing::MeasuredRun validate =
        run_binary({"workload", "validate", "--max-host-memory", kHostileBudget, path});
    expect_verdict(f, "validate", f.validate_exit, validate);
    note(f, "validate", validate);
    const std::string db = (dir_ / "results.db").string();
    const testing::MeasuredRun run =
        run_binary({"run", "--cpu", "--max-host-memory", kHostileBudget, "--samples", "2",
                    "--warmup", "0", "--noise", "0.9", "--threads", "2", "--db", db, path});
    expect_verdict(f, "run --cpu", f.run_exit, run);
    note(f, "run --cpu", run);
    if (f.run_exit == 0) {
      EXPECT_NE(run.out.find("recorded  run"), std::string::npos) << run.out;
    }
  }
  std::printf("%zu hostile files x 2 commands: slowest %.2f s, %s; largest %ld MiB resident, %s\n",
              files.size(), slowest, slowest_run.c_str(), largest_kib / 1024, largest_run.c_str());
}

}  // namespace
}  // namespace attn
