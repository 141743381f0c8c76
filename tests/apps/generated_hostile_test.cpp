// Hostile inputs too large to keep in the repository, generated at test time and given to the real
// binary (docs/reliability.md): a million unknown keys, a hundred thousand duplicate keys, a
// one-head layout file of a million blocks for a model of 256 q heads, an explicit mask file with
// thousands of wrong rows. Each is refused with the invalid-input exit code, a message of at most
// 50 problems and a count of the rest, in bounded time and memory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kGeneratedSeconds = 5.0;
constexpr long kGeneratedResidentKiB = 512 * 1024;

json generated_base_workload() {
  return json::parse(R"({
    "schema_version": 2,
    "name": "generated",
    "model": {"num_q_heads": 4, "num_kv_heads": 2, "head_dim": 64, "dtype": "bf16"},
    "kv_cache": {"page_size": 16},
    "sequences": [{"context_len": 40, "query_len": 8, "count": 2}],
    "seed": 7
  })");
}

class GeneratedHostile : public testing::Cli {
 protected:
  // `validate` and `run --cpu` of `workload` (with `extra` flags): both refused, the message
  // holding `message`, in bounded time, memory and output.
  void expect_refused(const fs::path& workload, const std::string& message,
                      const std::vector<std::string>& extra = {}) {
    for (const bool validate : {true, false}) {
      SCOPED_TRACE(workload.filename().string() + (validate ? " (validate)" : " (run --cpu)"));
      std::vector<std::string> argv = {binary_};
      if (validate) {
        argv.insert(argv.end(), {"workload", "validate"});
      } else {
        argv.insert(argv.end(), {"run", "--cpu", "--db", (dir_ / "results.db").string()});
      }
      argv.insert(argv.end(), extra.begin(), extra.end());
      argv.push_back(workload.string());
      const testing::MeasuredRun r =
          testing::run_measured(argv, {"ATTN_DB=", "ATTN_JIT_CACHE_DIR=" + (dir_ / "jit").string()},
                                dir_, kGeneratedSeconds * 2);
      EXPECT_FALSE(r.killed);
      EXPECT_EQ(r.exit_code, testing::kInvalidInput) << r.out << r.err.substr(0, 4000);
      EXPECT_LT(r.seconds, kGeneratedSeconds);
      EXPECT_LT(r.max_resident_kib, kGeneratedResidentKiB);
      EXPECT_NE(r.err.find(message), std::string::npos) << r.err.substr(0, 4000);
      EXPECT_LT(r.err.size(), size_t(16) << 10) << "the message is bounded";
      EXPECT_FALSE(fs::exists(dir_ / "results.db"));
    }
  }

  fs::path write_text(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }
};

// 1.3 million unknown keys once gave 1.3 million lines (229 MB) on stderr.
TEST_F(GeneratedHostile, AMillionUnknownKeysGiveFiftyProblemsAndACount) {
  std::string text = generated_base_workload().dump();
  text.pop_back();  // the closing brace
  for (int i = 0; i < 1000000; ++i) text += ",\"k" + std::to_string(i) + "\":0";
  text += "}";
  ASSERT_LT(text.size(), size_t(16) << 20);
  expect_refused(write_text("unknown-keys.json", text), "1000000 problems");
  expect_refused(write_text("unknown-keys.json", text), "\n  ... and 999950 more problems\n");
}

TEST_F(GeneratedHostile, AHundredThousandDuplicateKeysGiveFiftyProblemsAndACount) {
  std::string text = generated_base_workload().dump();
  text.pop_back();
  for (int i = 0; i < 100000; ++i) text += ",\"seed\":" + std::to_string(i);
  text += "}";
  expect_refused(write_text("duplicate-keys.json", text), "/seed: duplicate key");
  expect_refused(write_text("duplicate-keys.json", text), "... and 99950 more problems");
}

// A layout file of one head is repeated for every q head: with 256 of them, a million blocks
// once reserved 1 GiB of row offsets after the file's own head count passed the entry limit.
TEST_F(GeneratedHostile, AOneHeadLayoutIsCheckedAgainstTheQHeadsItServes) {
  const int64_t blocks = int64_t(1) << 20;
  std::string crow = "[0";
  for (int64_t i = 0; i < blocks; ++i) crow += ",0";
  crow += "]";
  write_text("one-head.layout.json",
             "{\"block_size\": 64, \"num_heads\": 1, \"num_blocks\": " + std::to_string(blocks) +
                 ", \"crow\": [" + crow + "], \"col\": [[]]}");
  json doc = generated_base_workload();
  doc["model"]["num_q_heads"] = 256;
  doc["model"]["num_kv_heads"] = 8;
  doc["mask"] = {{"block_sparse", {{"file", "one-head.layout.json"}}}};
  // A budget high enough that the layout file itself is what refuses it.
  expect_refused(write_text("one-head-layout.json", doc.dump()),
                 "/num_blocks: 256 q heads of 1048576 blocks exceed the limit of 268435456 "
                 "layout entries",
                 {"--max-host-memory", "64GiB"});
}

TEST_F(GeneratedHostile, AMaskFileWithThousandsOfWrongRowsGivesFiftyProblems) {
  // A thousand sequences of 8 rows of 48 keys, every row of the wrong characters: 8000 problems.
  json rows = json::array();
  for (int i = 0; i < 8; ++i) rows.push_back(std::string(48, 'x'));
  json entries = json::array();
  for (int s = 0; s < 1000; ++s) entries.push_back({{"rows", rows}});
  json doc = generated_base_workload();
  doc["sequences"] = json::array({{{"context_len", 40}, {"query_len", 8}, {"count", 1000}}});
  write_text("bad.mask.json", json({{"sequences", entries}}).dump());
  doc["mask"] = {{"explicit", {{"kind", "file"}, {"file", "bad.mask.json"}}}};
  expect_refused(write_text("bad-mask.json", doc.dump()), "... and 7950 more problems");
}

}  // namespace
}  // namespace attn
