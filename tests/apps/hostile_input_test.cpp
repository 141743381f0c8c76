// Hostile workload files given to the real binary (docs/reliability.md): each is refused with a
// clear message and the invalid-input exit code before anything is allocated or any database is
// opened, in bounded time and memory (the child's peak resident set, from wait4), or, for names
// full of shell and SQL metacharacters, stored verbatim and never run or used as a path.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/exit_codes.hpp"
#include "results/sqlite.hpp"
#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing::kInvalidInput;
// attn-bench's own resident set is a few MiB; a refused input may cost its bounded read (16 MiB)
// and a bounded DOM, never its claimed size. Under AddressSanitizer (make test-asan, which builds
// the binaries the same way) shadow memory, redzones and the free quarantine add to it.
#if defined(__SANITIZE_ADDRESS__)
#define ATTN_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTN_TEST_UNDER_ASAN 1
#endif
#endif
#ifdef ATTN_TEST_UNDER_ASAN
constexpr long kMaxResidentKiB = 512 * 1024;
#else
constexpr long kMaxResidentKiB = 192 * 1024;
#endif
constexpr double kMaxSeconds = 5.0;  // generous for a loaded 2-core CI machine; typical: < 0.5 s

json valid_workload() {
  return json::parse(R"({
    "schema_version": 2,
    "name": "hostile",
    "model": {"num_q_heads": 4, "num_kv_heads": 2, "head_dim": 64, "dtype": "bf16"},
    "kv_cache": {"page_size": 16},
    "sequences": [{"context_len": 40, "query_len": 8, "count": 2}],
    "seed": 7
  })");
}

struct HostileOutcome {
  int exit_code = -1;
  std::string out, err;
  double seconds = 0;
  long max_resident_kib = 0;
};

class HostileInput : public testing::Cli {
 protected:
  // Killed after two minutes (a hang fails the test instead of stalling the suite).
  HostileOutcome run_measured(const std::string& binary, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {binary};
    argv.insert(argv.end(), args.begin(), args.end());
    const testing::MeasuredRun r = testing::run_measured(
        argv, {"ATTN_DB=", "ATTN_JIT_CACHE_DIR=" + (dir_ / "jit").string()}, dir_, 120);
    EXPECT_FALSE(r.killed) << "still running after 120 s";
    return {r.exit_code, r.out, r.err, r.seconds, r.max_resident_kib};
  }

  // `attn-bench run --cpu FILE`: refused with exit 3 and `message`, fast, small, and before any
  // database is opened.
  void expect_refused(const fs::path& file, const std::string& message) {
    SCOPED_TRACE(file.filename().string());
    const HostileOutcome o = run_measured(ATTN_BENCH_BINARY, {"run", "--cpu", file.string()});
    EXPECT_EQ(o.exit_code, kInvalidInput) << o.out << o.err;
    EXPECT_NE(o.err.find("attn-bench: invalid input: "), std::string::npos) << o.err;
    EXPECT_NE(o.err.find(message), std::string::npos) << o.err;
    EXPECT_LT(o.seconds, kMaxSeconds);
    EXPECT_LT(o.max_resident_kib, kMaxResidentKiB);
    EXPECT_FALSE(fs::exists(dir_ / "attn-bench.db")) << "a database was opened first";
    EXPECT_EQ(o.out.find("running"), std::string::npos) << o.out;
  }

  fs::path write_bytes(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return dir_ / name;
  }
  fs::path write_json(const std::string& name, const json& doc) {
    return write_bytes(name, doc.dump(2));
  }
};

// A file far over the 16 MiB limit (8 GiB, sparse) is refused without reading it; an endless
// one (/dev/zero) is not a regular file and is not read at all (tests/apps/special_files_test.cpp
// has the others).
TEST_F(HostileInput, HugeAndEndlessFilesAreRefusedAfterTheLimit) {
  const fs::path huge = dir_ / "huge.json";
  { std::ofstream(huge) << valid_workload().dump(); }
  fs::resize_file(huge, uintmax_t(8) << 30);
  expect_refused(huge, "larger than the limit of 16777216 bytes");
  expect_refused("/dev/zero", "the file is a character device, not a regular file");
}

// 16 MiB of small numbers would grow a DOM of ~300 MB; the parser stops at 2^21 values.
TEST_F(HostileInput, ManyValuesAreRefusedWithBoundedMemory) {
  std::string text = R"({"schema_version": 2, "values": [0)";
  while (text.size() < (size_t(16) << 20) - 16) text += ",0";
  text += "]}";
  expect_refused(write_bytes("many.json", text), "the document holds more than 2097152 values");
}

// Nesting a million levels deep (arrays or objects) is refused at level 65, without recursion.
TEST_F(HostileInput, DeepNestingIsRefusedAtLevel65) {
  expect_refused(
      write_bytes("deep-arrays.json", std::string(1000000, '[') + std::string(1000000, ']')),
      "nested deeper than 64 levels");
  std::string objects;
  for (int i = 0; i < 200000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(200000, '}');
  expect_refused(write_bytes("deep-objects.json", objects), "nested deeper than 64 levels");
}

TEST_F(HostileInput, DuplicateKeysAreRefused) {
  std::string text = valid_workload().dump();
  text.insert(text.size() - 1, R"(, "seed": 8, "model": {"num_q_heads": 1})");
  expect_refused(write_bytes("duplicates.json", text), "/seed: duplicate key");
  expect_refused(write_bytes("duplicates.json", text), "/model: duplicate key");
}

// A raw NUL byte is a syntax error with its line and column; an escaped one (\u0000) in a name
// breaks the no-control-characters rule. Neither is cut short at the NUL.
TEST_F(HostileInput, NulBytesAreRefused) {
  std::string text = valid_workload().dump(2);
  std::string in_string = text;
  in_string.insert(in_string.find("hostile") + 3, std::string(1, '\0'));
  expect_refused(write_bytes("nul-in-string.json", in_string),
                 "control character U+0000 (NUL) must be escaped");
  std::string between = text;
  between.insert(between.find("\"seed\""), std::string(1, '\0'));
  expect_refused(write_bytes("nul-between.json", between), "line ");
  json doc = valid_workload();
  doc["name"] = std::string("nul\0name", 8);
  expect_refused(write_json("nul-escaped.json", doc),
                 "/name: must not contain control characters (found U+0000 at character 4)");
}

// Absurd sizes: 2^40 pages, lengths that overflow 32 (and 64) bits, and 32-bit wrap-arounds of
// small fields (2^32 + 64 must not become head_dim 64). Each is named with its value.
TEST_F(HostileInput, AbsurdSizesAreRefusedBeforeAllocating) {
  struct Case {
    const char* pointer;
    json value;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"/kv_cache/num_pages", int64_t(1) << 40,
       "/kv_cache/num_pages: must be in 1..2147483646, got 1099511627776"},
      {"/sequences/0/context_len", int64_t(1) << 40,
       "the total of kv tokens (sum of count * (context_len + query_len)) is"},
      {"/sequences/0/context_len", int64_t(1) << 32, "is 8589934608; the limit is < 2^31"},
      {"/sequences/0/query_len", (int64_t(1) << 32) + 1,
       "the total of query tokens (sum of count * query_len) is 8589934594"},
      {"/sequences/0/context_len", INT64_MAX, "is at least 9223372036854775807"},
      {"/sequences/0/count", (int64_t(1) << 32) + 1,
       "/sequences/0/count: must be in 1..1048576, got 4294967297"},
      {"/model/head_dim", (int64_t(1) << 32) + 64,
       "/model/head_dim: must be one of 64, 80, 96, 128, 192, 256, got 4294967360"},
      {"/model/num_q_heads", (int64_t(1) << 32) + 4,
       "/model/num_q_heads: must be in 1..256, got 4294967300"},
      {"/kv_cache/page_size", (int64_t(1) << 32) + 16,
       "/kv_cache/page_size: must be in 1..256, got 4294967312"},
      {"/seed", -1, "/seed: expected an unsigned integer, got integer -1"},
      {"/sequences/0/context_len",
       json::parse(R"({"distribution": "uniform", "min": 0, "max": 1099511627776})"),
       "the total of kv tokens"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    json doc = valid_workload();
    doc[json::json_pointer(cases[i].pointer)] = cases[i].value;
    expect_refused(write_json("absurd" + std::to_string(i) + ".json", doc), cases[i].message);
  }
  // 2^64 is not an integer JSON keeps; count x length overflows 64 bits and saturates.
  std::string text = valid_workload().dump();
  text.replace(text.find("\"seed\":7"), 8, "\"seed\":18446744073709551616");
  expect_refused(write_bytes("seed-2-64.json", text), "/seed: expected an unsigned integer");
  json doc = valid_workload();
  doc["sequences"] = json::parse(R"([{"context_len": 9223372036854775807, "count": 1048576}])");
  expect_refused(write_json("overflow-64.json", doc), "is at least 9223372036854775807");
}

// A name written to break out of a shell, SQL or a path is stored verbatim in the database (every
// value is bound, never formatted into SQL), shown as written, runs nothing, and writes no file
// outside the working folder; attn-tune tune and report over it (gnuplot included) likewise.
TEST_F(HostileInput, NamesWithShellSqlAndPathMetacharactersAreStoredVerbatimAndHarmless) {
  const std::string name =
      "x'); DROP TABLE runs;-- \"$(touch PWNED1)\" `touch PWNED2` ../../../tmp/PWNED3 %s%n\\ ;|&";
  ASSERT_LE(name.size(), 128u);
  fs::create_directories(dir_ / "work" / "sub");
  json doc = valid_workload();
  doc["name"] = name;
  { std::ofstream(dir_ / "work" / "sub" / "hostile.json") << doc.dump(2); }
  const std::set<fs::path> before = [&] {
    std::set<fs::path> seen;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) seen.insert(e.path());
    return seen;
  }();

  // The file named through "../" (a path the user chose is used as given).
  const std::string file = (dir_ / "work" / "sub" / ".." / "sub" / "hostile.json").string();
  const std::string db = (dir_ / "work" / "results.db").string();
  HostileOutcome o = run_measured(ATTN_BENCH_BINARY, {"run", "--cpu", "--samples", "2", "--warmup",
                                                      "0", "--noise", "0.9", "--db", db, file});
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("workload  " + name + " ("), std::string::npos) << o.out;

  ::setenv("ATTN_BENCH_TEST_VARIANTS", "1", 1);
  o = run_measured(ATTN_TUNE_BINARY,
                   {"tune", file, "--variant", "test.cpu_reference_copies", "--strategy", "halving",
                    "--db", db, "--cpu", "--threads", "1"});
  ::unsetenv("ATTN_BENCH_TEST_VARIANTS");
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const std::string report = (dir_ / "work" / "report").string();
  o = run_measured(ATTN_TUNE_BINARY, {"report", "--db", db, "-o", report});
  // 0 with gnuplot; 4 (plots not rendered, the markdown and scripts written) without it.
  EXPECT_TRUE(o.exit_code == 0 || o.exit_code == int(ExitCode::environment)) << o.out << o.err;
  EXPECT_TRUE(fs::exists(fs::path(report) / "report.md"));
  // The sweep's heatmap carries the name in its title, as inert single-quoted text; gnuplot (when
  // installed) rendered it without running the backquotes.
  size_t heatmaps = 0;
  for (const auto& e : fs::directory_iterator(report)) {
    const std::string leaf = e.path().filename().string();
    if (leaf.rfind("heatmap-", 0) != 0 || e.path().extension() != ".gp") continue;
    ++heatmaps;
    const std::string script = testing::slurp(e.path());
    EXPECT_NE(script.find("set title 'x''); DROP TABLE runs;-- \"$(touch PWNED1)\" `touch PWNED2`"),
              std::string::npos)
        << script;
    if (o.exit_code == 0) {
      fs::path svg = e.path();
      EXPECT_TRUE(fs::exists(svg.replace_extension(".svg"))) << svg;
    }
  }
  EXPECT_EQ(heatmaps, 1u);

  {
    Database d(db, SQLITE_OPEN_READONLY);
    Statement names(d, "SELECT name, canonical_json FROM workloads");
    ASSERT_TRUE(names.step());
    EXPECT_EQ(names.column_text(0), name);
    EXPECT_EQ(json::parse(names.column_text(1))["name"], name);
    EXPECT_FALSE(names.step()) << "one workload";
    Statement runs(d, "SELECT count(*), min(command_line) FROM runs");
    ASSERT_TRUE(runs.step());
    EXPECT_EQ(runs.column_int64(0), 2) << "the runs table is still there, with both runs";
    EXPECT_NE(runs.column_text(1).find("sub/../sub/hostile.json"), std::string::npos)
        << runs.column_text(1);
  }
  // Nothing ran, and nothing was written outside the working folder: every new file is the
  // database, the report's (slugged names only) or the test's own output files.
  for (const char* pwned : {"PWNED1", "PWNED2", "PWNED3"}) {
    for (const fs::path& where : {dir_, dir_ / "work", dir_ / "work" / "sub", fs::path(report),
                                  fs::path("/tmp"), fs::current_path()}) {
      EXPECT_FALSE(fs::exists(where / pwned)) << (where / pwned);
    }
  }
  for (const auto& e : fs::recursive_directory_iterator(dir_)) {
    if (before.count(e.path())) continue;
    const fs::path relative = fs::relative(e.path(), dir_);
    const std::string first = relative.begin()->string();
    EXPECT_TRUE(first == "work" || first == "stdout" || first == "stderr" || first == "jit" ||
                first == "peak-rss")  // attn_peak_rss's report (tests/apps/cli_runner.hpp)
        << relative;
    if (e.path().parent_path() == fs::path(report)) {
      const std::string leaf = e.path().filename().string();
      EXPECT_EQ(leaf.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-"),
                std::string::npos)
          << leaf;
    }
  }
}

}  // namespace
}  // namespace attn
