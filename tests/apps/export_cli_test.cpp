// attn-tune db info and attn-tune export as a user runs them, on fixture databases written through
// the Store API (tests/results/export_fixture.hpp): the summary, that neither command changes the
// file, the refusals and their exit codes, and the round trip: the exported C++ header compiles
// with the system compiler and its select() returns, for every measured workload, the config the
// fixture's times make best for its bucket.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/exit_codes.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"
#include "tests/apps/cli_runner.hpp"
#include "tests/results/export_fixture.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::ExportFixture;
using testing::quote;
using testing::slurp;

using testing::kEnvironment;
using testing::kUsage;

class ExportCli : public testing::Cli {
 protected:
  ExportCli() { binary_ = ATTN_TUNE_BINARY; }

  // The fixture database in the test's folder, with the H200's result when asked.
  std::string make_db(const std::string& name, bool with_h200) {
    const std::string path = (dir_ / name).string();
    Store store(path);
    ExportFixture fixture(store);
    fixture.add_h100_results();
    store.add_ceiling(testing::export_h100().fingerprint(),
                      {kReadGbps, 3021.5, "read16 4 GiB", 40, 0.001, false, "0.3.0", "c0ffee", ""});
    if (with_h200) fixture.add_h200_results();
    return path;
  }

  std::string bytes(const std::string& path) { return slurp(path); }

  // Compiles `source` (beside the header in the test folder) with the compiler CMake uses and
  // runs it; returns the program's exit code, -1 when it did not compile.
  int compile_and_run(const std::string& source, std::string& log) {
    std::ofstream(dir_ / "main.cpp") << source;
    const std::string compile =
        std::string(ATTN_CXX_COMPILER) + " -std=c++17 -Wall -Wextra -Werror -pedantic -I " +
        quote(dir_.string()) + " " + quote((dir_ / "main.cpp").string()) + " -o " +
        quote((dir_ / "main").string()) + " > " + quote((dir_ / "compile.log").string()) + " 2>&1";
    const int built = std::system(compile.c_str());
    log = slurp(dir_ / "compile.log");
    if (built != 0) return -1;
    const int status = std::system(
        (quote((dir_ / "main").string()) + " > " + quote((dir_ / "run.log").string()) + " 2>&1")
            .c_str());
    log += slurp(dir_ / "run.log");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
};

TEST_F(ExportCli, DbInfoSummarisesTheDatabaseWithoutChangingIt) {
  const std::string db = make_db("results.db", true);
  const std::string before = bytes(db);
  const CliResult r = run({"db", "info", "--db", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.out.find("schema      version " + std::to_string(Store::kSchemaVersion) + ", current"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("0x6174746e (attn-bench)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 devices, 9 workloads, 21 measurements"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("19 passed (1 unstable), 1 incorrect, 1 unsupported"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("NVIDIA H100 80GB HBM3 (gpu, compute 9.0)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NVIDIA H200"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(testing::export_h100().uuid), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(testing::export_h100().fingerprint()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("driver unknown (supports CUDA 13.0), CUDA 13.0, NVRTC 13.0"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("read_gbps 3021.5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("none measured"), std::string::npos) << r.out;  // the H200
  EXPECT_NE(r.out.find("attn-tune tune 0.3.0 (feedc0de, Release)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("attn-tune tune decode --variant 'paged_decode.*' --db x.db"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("decode-b40-c4000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("prefix_prefill: 1 variants, 2 configs"), std::string::npos) << r.out;
  EXPECT_EQ(bytes(db), before);

  const CliResult j = run({"db", "info", "--db", db, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json info = nlohmann::json::parse(j.out);
  EXPECT_EQ(info["schema_version"], Store::kSchemaVersion);
  EXPECT_EQ(info["counts"]["measurements"], 21);
  EXPECT_EQ(info["counts"]["measurements_by_disposition"]["passed"], 19);
  ASSERT_EQ(info["devices"].size(), 2u);
  EXPECT_EQ(info["devices"][0]["ceilings"]["read_gbps"]["value"], 3021.5);
  EXPECT_EQ(info["devices"][1]["sm_count"], 132);
  EXPECT_EQ(info["runs"][0]["git_commit"], "feedc0de");
  EXPECT_EQ(info["workloads"].size(), 9u);
  EXPECT_EQ(bytes(db), before);
}

TEST_F(ExportCli, DbInfoOnAnOlderSchemaSaysSoAndLeavesItOlder) {
  const std::string db = (dir_ / "v1.db").string();
  {
    std::stringstream sql;
    sql << std::ifstream(std::string(ATTN_RESULTS_FIXTURES) + "/schema_v1.sql").rdbuf();
    ASSERT_FALSE(sql.str().empty());
    Database raw(db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    raw.exec(sql.str().c_str());
  }
  const std::string before = bytes(db);
  const CliResult r = run({"db", "info", "--db", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("schema      version 1, older than this attn-tune's"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the file was not changed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(in memory only)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 measurements"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("default-decode-small"), std::string::npos) << r.out;
  // The JSON marks the same steps, with no time: they are not in the file.
  const CliResult j = run({"db", "info", "--db", db, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json info = nlohmann::json::parse(j.out);
  ASSERT_GE(info.at("migrations").size(), 2u);
  EXPECT_FALSE(info["migrations"][0]["in_memory"].get<bool>());
  EXPECT_TRUE(info["migrations"][0]["applied_at"].is_string());
  EXPECT_TRUE(info["migrations"][1]["in_memory"].get<bool>());
  EXPECT_TRUE(info["migrations"][1]["applied_at"].is_null());
  EXPECT_EQ(bytes(db), before);
  Database check(db, SQLITE_OPEN_READONLY);
  Statement version(check, "PRAGMA user_version");
  ASSERT_TRUE(version.step());
  EXPECT_EQ(version.column_int64(0), 1);
}

TEST_F(ExportCli, NewerMissingAndForeignDatabasesAreRefused) {
  const std::string db = make_db("results.db", false);
  {
    Database raw(db, SQLITE_OPEN_READWRITE);
    raw.exec("PRAGMA user_version = 99");
  }
  const std::string before = bytes(db);
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"db", "info", "--db", db},
        std::vector<std::string>{"export", "--db", db}}) {
    const CliResult r = run(command);
    EXPECT_EQ(r.exit_code, kEnvironment) << r.err;
    EXPECT_NE(r.err.find("newer attn-bench"), std::string::npos) << r.err;
    EXPECT_EQ(bytes(db), before);
  }
  CliResult r = run({"db", "info", "--db", (dir_ / "none.db").string()});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_NE(r.err.find("no such database"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "none.db"));
  EXPECT_EQ(run({"export", "--db", (dir_ / "none.db").string()}).exit_code, kUsage);
  write("notes.db", "not a database at all, just some text that is long enough to be read\n");
  r = run({"export", "--db", (dir_ / "notes.db").string()});
  EXPECT_EQ(r.exit_code, kEnvironment);
  EXPECT_NE(r.err.find("not an attn-bench database"), std::string::npos) << r.err;
  EXPECT_EQ(run({"db"}).exit_code, kUsage);
}

TEST_F(ExportCli, ExportRefusesToMixDevicesAndNamesThem) {
  const std::string db = make_db("results.db", true);
  CliResult r = run({"export", "--db", db});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_NE(r.err.find("NVIDIA H100 80GB HBM3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("NVIDIA H200"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--all-devices"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  r = run({"export", "--db", db, "--device", "NVIDIA"});
  EXPECT_EQ(r.exit_code, kUsage);
  EXPECT_NE(r.err.find("matches 2 devices"), std::string::npos) << r.err;
  EXPECT_EQ(run({"export", "--db", db, "--device", "H200", "--all-devices"}).exit_code, kUsage);
  EXPECT_EQ(run({"export", "--db", db, "--device", "H200", "--format", "yaml"}).exit_code, kUsage);
  EXPECT_EQ(run({"export", "--db", db, "--device", "H200", "--namespace", "9x"}).exit_code, kUsage);
  EXPECT_EQ(run({"export", "--db", db, "--device", "H200", "--family", "nope"}).exit_code, kUsage);

  r = run({"export", "--db", db, "--device", "H200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["devices"].size(), 1u);
  EXPECT_EQ(j["devices"][0]["device"]["name"], "NVIDIA H200");
  EXPECT_NE(r.err.find("1 buckets for NVIDIA H200"), std::string::npos) << r.err;
}

TEST_F(ExportCli, JsonExportHasEntriesCoverageAndProvenance) {
  const std::string db = make_db("results.db", false);
  const std::string before = bytes(db);
  const CliResult r = run({"export", "--db", db, "-o", "tuned.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(bytes(db), before);
  const nlohmann::json j = nlohmann::json::parse(slurp(dir_ / "tuned.json"));
  EXPECT_EQ(j["format"], "attn-tune export");
  EXPECT_NE(j["tool"]["command_line"].get<std::string>().find("-o tuned.json"), std::string::npos);
  ASSERT_EQ(j["devices"].size(), 1u);
  EXPECT_EQ(j["devices"][0]["entries"].size(), 6u);
  EXPECT_EQ(j["devices"][0]["unstable_left_out"], 1);
  EXPECT_EQ(j["devices"][0]["device"]["ceilings"]["read_gbps"]["value"], 3021.5);
  EXPECT_EQ(j["devices"][0]["coverage"][0]["no_passed"], 1);
  // What was exported and what is missing goes to stderr.
  EXPECT_NE(r.err.find("6 buckets for NVIDIA H100 80GB HBM3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 unstable ones left out"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 partial"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("paged_decode: 5 of 120 buckets exported"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wrote tuned.json"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// The expectations below are the fixture's bucket choices (tests/results/export_fixture.hpp works
// them out), written independently of the exporter.
const char* const kRoundTripProgram = R"program(
#include <cmath>
#include <cstdio>
#include <string_view>

#include "tuned.hpp"

using namespace tuned;

struct Expect {
  const char* workload;
  Query query;
  const char* variant;
  const char* config;
  bool exact;
};

constexpr Query kA{"paged_decode", 40, 4000, 4, 128, "bf16", "", 16};
// Usable at compile time.
static_assert(select(kA) != nullptr, "select() is constexpr");
static_assert(select(kA)->config_key == "tile_tokens=128,warps=4", "the a/b bucket's choice");

int main() {
  const Expect expects[] = {
      // Every measured workload: its bucket's entry.
      {"decode-b40-c4000", kA, "paged_decode.sm80_simt", "tile_tokens=128,warps=4", true},
      {"decode-b64-c3000", {"paged_decode", 64, 3000, 4, 128, "bf16", "bf16", 16},
       "paged_decode.sm80_simt", "tile_tokens=128,warps=4", true},
      {"decode-b1-c1000", {"paged_decode", 1, 1000, 4, 128, "bf16", "", 16},
       "paged_decode.sm80_simt", "tile_tokens=128,warps=4", true},
      {"decode-b8-c8000-p32", {"paged_decode", 8, 8000, 4, 128, "bf16", "", 32},
       "paged_decode.sm80_simt", "tile_tokens=128,warps=4", true},
      {"decode-b8-c2000-fp8", {"paged_decode", 8, 2000, 4, 128, "bf16", "fp8_e4m3", 16},
       "paged_decode.sm80_simt", "tile_tokens=64,warps=4", true},
      {"decode-b2-c100", {"paged_decode", 2, 100, 4, 128, "bf16", "", 16},
       "paged_decode.sm80_mma", "tile_tokens=64,warps=4", true},
      {"decode-b2-c120", {"paged_decode", 2, 120, 4, 128, "bf16", "", 16},
       "paged_decode.sm80_mma", "tile_tokens=64,warps=4", true},
      {"prefill-2x512", {"prefix_prefill", 2, 0, 8, 64, "fp16", "", 16},
       "prefix_prefill.sm80_mma", "block_m=128,warps=4", true},
      // Buckets without an entry: the nearest of the same class.
      {"batch 100 (bucket [65, 128])", {"paged_decode", 100, 4000, 4, 128, "bf16", "", 16},
       "paged_decode.sm80_simt", "tile_tokens=128,warps=4", false},
      {"decode-b16-c16000 (nothing passed)", {"paged_decode", 16, 16000, 4, 128, "bf16", "", 16},
       "paged_decode.sm80_simt", "tile_tokens=128,warps=4", false},
      {"batch 1, context 2000", {"paged_decode", 1, 2000, 4, 128, "bf16", "", 16},
       "paged_decode.sm80_simt", "tile_tokens=128,warps=4", false},
      // The fp8 KV cache has one entry: every fp8 query of that class gets it, no bf16 one.
      {"fp8 KV, batch 40, context 4000",
       {"paged_decode", 40, 4000, 4, 128, "bf16", "fp8_e4m3", 16}, "paged_decode.sm80_simt",
       "tile_tokens=64,warps=4", false},
  };
  int failures = 0;
  for (const Expect& x : expects) {
    const Entry* e = select(x.query);
    if (e == nullptr || e->variant != x.variant || e->config_key != x.config) {
      std::printf("FAIL %s: got %s %s\n", x.workload,
                  e ? std::string_view(e->variant).data() : "nullptr",
                  e ? std::string_view(e->config_key).data() : "");
      ++failures;
    }
    if ((select_exact(x.query) != nullptr) != x.exact || (x.exact && select_exact(x.query) != e)) {
      std::printf("FAIL %s: select_exact disagrees\n", x.workload);
      ++failures;
    }
  }
  // No entry for another head dim, GQA ratio, dtype, page size or family: nullptr, not a guess.
  const Query other[] = {{"paged_decode", 40, 4000, 4, 64, "bf16", "", 16},
                         {"paged_decode", 40, 4000, 8, 128, "bf16", "", 16},
                         {"paged_decode", 40, 4000, 4, 128, "fp16", "", 16},
                         {"paged_decode", 40, 4000, 4, 128, "bf16", "", 64},
                         {"flash_fwd", 40, 4000, 4, 128, "bf16", "", 16}};
  bool any = false;
  for (const Query& q : other) any = any || select(q) != nullptr;
  if (any) {
    std::printf("FAIL: a query of another class got an entry\n");
    ++failures;
  }
  // The stored values: config fields, regret, provenance.
  const Entry* ab = select(kA);
  const ConfigValue* tile = ab->find("tile_tokens");
  if (tile == nullptr || tile->value != 128 || ab->find("warps")->value != 4 ||
      ab->find("stages") != nullptr || ab->config_count != 2) {
    std::printf("FAIL: config fields\n");
    ++failures;
  }
  if (std::fabs(ab->max_regret - 0.1) > 1e-9 || std::fabs(ab->mean_regret - 0.1) > 1e-9 ||
      ab->workloads != 2 || ab->covered_workloads != 2 || ab->partial) {
    std::printf("FAIL: regret %g %g\n", ab->max_regret, ab->mean_regret);
    ++failures;
  }
  const Measured& first = kDevices[0].measured[ab->first_measured];
  if (first.workload != "decode-b40-c4000" || first.best_median_us != 10.0 ||
      first.chosen_median_us != 11.0 || first.best_config_key != "tile_tokens=64,warps=4" ||
      first.chosen_run_uid.size() != 32 || first.chosen_measurement_uid.size() != 32) {
    std::printf("FAIL: provenance of the a/b bucket\n");
    ++failures;
  }
  // A bucket of one workload: the entry is that workload's own best, with no regret.
  const Entry* c = select(Query{"paged_decode", 1, 1000, 4, 128, "bf16", "", 16});
  const Measured& cm = kDevices[0].measured[c->first_measured];
  if (c->max_regret != 0.0 || cm.best_median_us != 4.0 || cm.chosen_median_us != 4.0 ||
      cm.best_config_key != c->config_key) {
    std::printf("FAIL: single-workload bucket\n");
    ++failures;
  }
  const Entry* gh = select(Query{"paged_decode", 2, 100, 4, 128, "bf16", "", 16});
  if (!gh->partial || gh->covered_workloads != 1 || gh->workloads != 2) {
    std::printf("FAIL: partial bucket\n");
    ++failures;
  }
  if (std::size(kDevices) != 1 || kDevices[0].entry_count != 6 ||
      kDevices[0].uuid != "GPU-11111111-2222-3333-4444-555555555555" ||
      find_device(kDevices[0].fingerprint) != &kDevices[0]) {
    std::printf("FAIL: device table\n");
    ++failures;
  }
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
)program";

TEST_F(ExportCli, CppHeaderCompilesAndSelectReturnsEachWorkloadsStoredBest) {
  const std::string db = make_db("results.db", false);
  const CliResult r =
      run({"export", "--db", db, "--format", "cpp", "--namespace", "tuned", "-o", "tuned.hpp"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string header = slurp(dir_ / "tuned.hpp");
  EXPECT_NE(header.find("// Device 0: NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(header.find("//   run 1 ("), std::string::npos);
  EXPECT_NE(header.find("attn-tune tune decode --variant 'paged_decode.*' --db x.db"),
            std::string::npos);
  EXPECT_NE(header.find("// Coverage:"), std::string::npos);
  EXPECT_NE(header.find("//   paged_decode: 5 of 120 buckets exported"), std::string::npos);
  // Self-contained: only standard headers.
  std::istringstream lines(header);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#include", 0) == 0) {
      EXPECT_NE(line.find('<'), std::string::npos) << line;
    }
  }
  std::string log;
  EXPECT_EQ(compile_and_run(kRoundTripProgram, log), 0) << log;
}

// The round trip of the bucket key: a database of workloads whose cached tokens sit on and next
// to bucket edges (a decode step over exactly 4096 cached tokens, over 4097, over 1 and 0, a
// prefill without a prefix, a prefix prefill, a batch of mixed lengths), exported as a header; a
// program asks select_exact() with each workload's own shape, written here from its spec (the
// cached tokens per sequence, the mean rounded up for mixed lengths), and must get the entry whose
// measured workloads include it.
TEST_F(ExportCli, SelectExactFindsEveryStoredWorkloadByItsOwnShape) {
  struct Stored {
    std::string name, family, sequences;  // sequences: the spec's JSON array
    int batch;
    int64_t cached;  // per sequence, the mean rounded up: what a caller passes as context_len
    int q_heads, kv_heads, head_dim;
  };
  const std::vector<Stored> stored = {
      {"decode-b8-c4096", "paged_decode", R"([{"context_len": 4096, "query_len": 1, "count": 8}])",
       8, 4096, 32, 8, 128},
      {"decode-b8-c4097", "paged_decode", R"([{"context_len": 4097, "query_len": 1, "count": 8}])",
       8, 4097, 32, 8, 128},
      {"decode-b64-c2048", "paged_decode",
       R"([{"context_len": 2048, "query_len": 1, "count": 64}])", 64, 2048, 32, 8, 128},
      {"decode-b2-c1", "paged_decode", R"([{"context_len": 1, "query_len": 1, "count": 2}])", 2, 1,
       32, 8, 128},
      {"decode-b4-c0", "paged_decode", R"([{"context_len": 0, "query_len": 1, "count": 4}])", 4, 0,
       32, 8, 128},
      {"decode-mixed", "paged_decode",
       R"([{"context_len": 1000, "query_len": 1, "count": 3}, {"context_len": 3001, "query_len": 1}])",
       4, 1501, 32, 8, 128},  // (3 x 1000 + 3001) / 4 = 1500.25
      {"prefill-4x1024", "flash_fwd", R"([{"context_len": 0, "query_len": 1024, "count": 4}])", 4,
       0, 32, 32, 128},
      {"prefix-2x4096+128", "prefix_prefill",
       R"([{"context_len": 4096, "query_len": 128, "count": 2}])", 2, 4096, 32, 8, 128},
  };
  const std::string db = (dir_ / "shapes.db").string();
  {
    Store store(db);
    ExportFixture fixture(store);
    for (const Stored& w : stored) {
      const WorkloadSpec spec = parse_workload(
          R"({"schema_version": 2, "name": ")" + w.name + R"(", "model": {"num_q_heads": )" +
              std::to_string(w.q_heads) + R"(, "num_kv_heads": )" + std::to_string(w.kv_heads) +
              R"(, "head_dim": )" + std::to_string(w.head_dim) +
              R"(, "dtype": "bf16"}, "sequences": )" + w.sequences + "}",
          w.name);
      const int64_t id = fixture.workload(spec);
      const std::string variant = w.family + ".some_variant";
      fixture.passed(id, variant, "warps=4", 10, "confirm", false, w.family);
      fixture.passed(id, variant, "warps=8", 12, "confirm", false, w.family);
    }
  }
  const CliResult r =
      run({"export", "--db", db, "--format", "cpp", "--namespace", "tuned", "-o", "tuned.hpp"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string header = slurp(dir_ / "tuned.hpp");
  EXPECT_NE(header.find("cached tokens per sequence"), std::string::npos);

  std::string queries;
  for (const Stored& w : stored) {
    queries += "      {\"" + w.name + "\", {\"" + w.family + "\", " + std::to_string(w.batch) +
               ", " + std::to_string(w.cached) + ", " + std::to_string(w.q_heads / w.kv_heads) +
               ", " + std::to_string(w.head_dim) + ", \"bf16\", \"\", 16}},\n";
  }
  std::string program = R"program(
#include <cstdio>
#include <string_view>
#include "tuned.hpp"
using namespace tuned;
struct Own {
  std::string_view workload;
  Query query;
};
int main() {
  const Own own[] = {
QUERIES  };
  int failures = 0;
  for (const Own& w : own) {
    const Entry* e = select_exact(w.query);
    bool found = false;
    for (std::size_t i = 0; e != nullptr && i < e->measured_count; ++i) {
      found = found || kDevices[0].measured[e->first_measured + i].workload == w.workload;
    }
    if (!found || select(w.query) != e) {
      std::printf("FAIL %.*s: %s\n", int(w.workload.size()), w.workload.data(),
                  e == nullptr ? "no entry" : "another bucket's entry");
      ++failures;
    }
  }
  std::printf("%d failures\n", failures);
  return failures;
}
)program";
  program.replace(program.find("QUERIES"), 7, queries);
  std::string log;
  EXPECT_EQ(compile_and_run(program, log), 0) << log;

  // The JSON says the same: each workload's stored context length is its cached tokens and lies
  // in its entry's context range.
  ASSERT_EQ(run({"export", "--db", db, "-o", "tuned.json"}).exit_code, 0);
  const nlohmann::json j = nlohmann::json::parse(slurp(dir_ / "tuned.json"));
  size_t checked = 0;
  for (const auto& entry : j["devices"][0]["entries"]) {
    for (const auto& m : entry["measured"]) {
      for (const Stored& w : stored) {
        if (m["workload"] != w.name) continue;
        EXPECT_EQ(m["shape"]["context_len"], w.cached) << w.name;
        EXPECT_LE(entry["bucket"]["context_len"][0].get<int64_t>(), w.cached) << w.name;
        EXPECT_GE(entry["bucket"]["context_len"][1].get<int64_t>(), w.cached) << w.name;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, stored.size());
}

TEST_F(ExportCli, AllDevicesHeaderSelectsByDeviceKey) {
  const std::string db = make_db("results.db", true);
  const CliResult r = run({"export", "--db", db, "--all-devices", "--format", "cpp", "--family",
                           "paged_decode", "-o", "tuned.hpp"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string header = slurp(dir_ / "tuned.hpp");
  EXPECT_NE(header.find("// Device 0: NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(header.find("// Device 1: NVIDIA H200"), std::string::npos);
  // With two tables there is no select() without a device.
  EXPECT_EQ(header.find("select(const Query& q)"), std::string::npos);
  // The keys are filled in below (raw strings are not concatenated, so clang-format leaves
  // the program as written).
  std::string program = R"program(
#include <cstdio>
#include "tuned.hpp"
using namespace attn_tuned;
int main() {
  const Query q{"paged_decode", 40, 4000, 4, 128, "bf16", "", 16};
  const Entry* h100 = select("H100_FINGERPRINT", q);
  const Entry* h200 = select("H200_UUID", q);
  int failures = 0;
  auto check = [&](bool ok, const char* what) {
    if (!ok) std::printf("FAIL: %s\n", what);
    failures += !ok;
  };
  check(h100 != nullptr && h100->config_key == "tile_tokens=128,warps=4", "the H100's choice");
  check(h200 != nullptr && h200->config_key == "tile_tokens=64,warps=4", "the H200's choice");
  check(h200 != nullptr && kDevices[1].measured[h200->first_measured].chosen_median_us == 8.0,
        "the H200's time");
  check(select("GPU-unknown", q) == nullptr, "an unknown device");
  // prefix_prefill was not exported (--family paged_decode).
  check(select(kDevices[0], Query{"prefix_prefill", 2, 512, 8, 64, "fp16", "", 16}) == nullptr,
        "a family left out");
  std::printf("%d failures\n", failures);
  return failures;
}
)program";
  auto fill = [&](const std::string& placeholder, const std::string& value) {
    program.replace(program.find(placeholder), placeholder.size(), value);
  };
  fill("H100_FINGERPRINT", testing::export_h100().fingerprint());
  fill("H200_UUID", testing::export_h200().uuid);
  std::string log;
  EXPECT_EQ(compile_and_run(program, log), 0) << log;
}

}  // namespace
}  // namespace attn
