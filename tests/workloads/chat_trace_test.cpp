// The shipped sample trace is the generator's output, byte for byte. To regenerate it after
// changing the parameters: ATTN_REGENERATE_TRACES=1 build/tests/attn_workloads_tests
// --gtest_filter='ChatTrace.*' (then update docs/workload.md).
#include "workloads/chat_trace.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "workloads/referenced_file.hpp"
#include "workloads/trace_file.hpp"

namespace attn {
namespace {

const std::string kPath = std::string(ATTN_SOURCE_DIR) + "/workloads/traces/chat-sample.csv";

TEST(ChatTrace, ShippedFileIsTheGeneratorsOutput) {
  const std::string expected = format_trace_csv(generate_chat_trace());
  if (std::getenv("ATTN_REGENERATE_TRACES") != nullptr) {
    std::ofstream(kPath, std::ios::binary) << expected;
  }
  std::ifstream file(kPath, std::ios::binary);
  std::stringstream on_disk;
  on_disk << file.rdbuf();
  EXPECT_EQ(on_disk.str(), expected) << kPath << " differs from generate_chat_trace()";
  std::string problem;
  auto builtin = read_referenced_file("builtin:chat-sample", "", problem);
  ASSERT_TRUE(builtin) << problem;
  EXPECT_EQ(builtin->bytes, expected);
}

TEST(ChatTrace, LengthsFollowTheParameters) {
  auto rows = generate_chat_trace();
  ASSERT_EQ(rows.size(), 1000u);
  std::vector<int64_t> prompts, outputs;
  for (auto [p, o] : rows) {
    ASSERT_GE(p, 8);
    ASSERT_LE(p, 16384);
    ASSERT_GE(o, 1);
    ASSERT_LE(o, 4096);
    prompts.push_back(p);
    outputs.push_back(o);
  }
  std::nth_element(prompts.begin(), prompts.begin() + 500, prompts.end());
  std::nth_element(outputs.begin(), outputs.begin() + 500, outputs.end());
  EXPECT_NEAR(double(prompts[500]), 600.0, 90.0);
  EXPECT_NEAR(double(outputs[500]), 220.0, 30.0);
}

}  // namespace
}  // namespace attn
