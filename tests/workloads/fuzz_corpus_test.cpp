// The fuzz target's checks (tests/fuzz/workload_input_check.hpp) over every kept input: the seed
// corpus, the crashers kept as regressions and the presets. Runs in every `make test` (and under
// ASan and UBSan in `make test-asan`), so a fixed crasher stays fixed without libFuzzer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/fuzz/workload_input_check.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

TEST(FuzzCorpus, EveryKeptInputKeepsTheLoadersPromises) {
  size_t inputs = 0;
  for (const char* folder : {"tests/fuzz/corpus", "tests/fuzz/regressions", "workloads/presets"}) {
    for (const auto& entry : fs::directory_iterator(fs::path(ATTN_SOURCE_DIR) / folder)) {
      if (!entry.is_regular_file() || entry.path().extension() == ".md") continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream bytes;
      bytes << in.rdbuf();
      ++inputs;
      try {
        fuzz::check_workload_input(bytes.str());
      } catch (const std::exception& e) {
        ADD_FAILURE() << entry.path() << ": " << e.what();
      }
    }
  }
  EXPECT_GE(inputs, 50u);  // the seeds and the presets at least
}

// A refused input is what bad input should get (no failure); a valid one passes every check and
// its canonical form round-trips.
TEST(FuzzCorpus, RefusedInputsAreNotFailuresAndValidOnesRoundTrip) {
  EXPECT_NO_THROW(fuzz::check_workload_input("not json"));
  EXPECT_NO_THROW(fuzz::check_workload_input(R"({"schema_version": 2})"));
  const std::string valid = R"({"schema_version": 2, "name": "x",
    "model": {"num_q_heads": 4, "num_kv_heads": 2, "head_dim": 64, "dtype": "bf16"},
    "sequences": [{"context_len": 40, "query_len": 8}]})";
  EXPECT_NO_THROW(fuzz::check_workload_input(valid));
  const WorkloadSpec spec = parse_workload(valid, "t", fuzz::kNoBaseDir);
  EXPECT_EQ(canonical_json(parse_workload(canonical_json(spec), "t", fuzz::kNoBaseDir)),
            canonical_json(spec));
}

}  // namespace
}  // namespace attn
