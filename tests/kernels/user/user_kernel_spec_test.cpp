// Kernel spec files: each tests/kernels/user/malformed/NAME.json must be refused with exactly the
// problems in NAME.expected (first line: the exit code), and a good spec gives the variant's
// axes, features and expressions. Adding a malformed case is adding two files;
// ATTN_REGENERATE_GOLDEN=1 rewrites the .expected files from the current messages (review the
// diff before committing it).
#include "kernels/user/user_kernel_spec.hpp"

#include <dirent.h>
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "workloads/batch.hpp"
#include "workloads/batch_features.hpp"
#include "workloads/presets.hpp"

namespace attn {
namespace {

const std::string kMalformedDir = std::string(ATTN_SOURCE_DIR) + "/tests/kernels/user/malformed";
const std::string kExampleSpec =
    std::string(ATTN_SOURCE_DIR) + "/examples/user_kernels/simple_decode.json";

std::vector<std::string> malformed_case_names() {
  std::vector<std::string> names;
  if (DIR* dir = opendir(kMalformedDir.c_str())) {
    while (dirent* entry = readdir(dir)) {
      const std::string file = entry->d_name;
      if (file.size() > 5 && file.compare(file.size() - 5, 5, ".json") == 0) {
        names.push_back(file.substr(0, file.size() - 5));
      }
    }
    closedir(dir);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_whole_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string spec_outcome(const std::string& path) {
  std::string out;
  try {
    load_user_kernel_spec(path);
    return "exit 0\n";
  } catch (const InputError& e) {
    out = "exit " + std::to_string(int(e.code())) + "\n";
    for (const std::string& problem : e.problems()) out += problem + "\n";
  }
  for (size_t at = out.find(kMalformedDir); at != std::string::npos;
       at = out.find(kMalformedDir, at)) {
    out.replace(at, kMalformedDir.size(), "<malformed>");
  }
  return out;
}

TEST(UserKernelSpec, EachMalformedSpecGivesItsGoldenProblems) {
  const std::vector<std::string> names = malformed_case_names();
  EXPECT_GE(names.size(), 25u);
  const bool regenerate = std::getenv("ATTN_REGENERATE_GOLDEN") != nullptr;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const std::string outcome = spec_outcome(kMalformedDir + "/" + name + ".json");
    const std::string expected_path = kMalformedDir + "/" + name + ".expected";
    if (regenerate) std::ofstream(expected_path, std::ios::binary) << outcome;
    EXPECT_EQ(outcome, read_whole_file(expected_path));
    EXPECT_EQ(outcome.rfind("exit 3\n", 0), 0u) << "a malformed spec must exit with 3";
  }
}

TEST(UserKernelSpec, TheExampleSpecLoads) {
  const UserKernelSpec spec = load_user_kernel_spec(kExampleSpec);
  EXPECT_EQ(spec.variant_name(), "user.simple_decode");
  EXPECT_EQ(spec.family, Family::paged_decode);
  ASSERT_EQ(spec.sources.size(), 1u);
  EXPECT_NE(spec.sources[0].text.find("attn_bench/user_kernel.h"), std::string::npos);
  EXPECT_EQ(spec.grid.size(), 3u);
  EXPECT_EQ(spec.block.size(), 3u);
  EXPECT_EQ(spec.shared_bytes.size(), 1u);
  EXPECT_GE(spec.axes.size(), 2u);
  EXPECT_TRUE(spec.features.has("kv_layout"));
  // A list of numbers declares each of them (not only the last one).
  for (int64_t head_dim : {64, 96, 128, 192, 256}) {
    EXPECT_TRUE(spec.features.implements(FeatureUse::integer("head_dim", head_dim, "head dim")))
        << head_dim;
  }
  EXPECT_FALSE(spec.features.implements(FeatureUse::integer("head_dim", 80, "head dim 80")));
  EXPECT_TRUE(spec.features.implements(FeatureUse::integer("page_size", 1, "page size 1")));
  EXPECT_TRUE(spec.features.implements(FeatureUse::choice("kv_layout", "hnd", "HND")));
  EXPECT_FALSE(spec.features.implements(FeatureUse::choice("kv_layout", "vllm", "vLLM")));
}

TEST(UserKernelSpec, BatchQuantitiesHaveAValueForEveryName) {
  const Batch batch = generate_batch(load_preset("decode-llama3-8b-64x4096"));
  Target target;
  target.sm_count = 132;
  target.cc_major = 9;
  const auto values = batch_quantities(batch, target);
  for (const std::string& name : batch_quantity_names()) {
    EXPECT_EQ(values.count(name), 1u) << name;
  }
  EXPECT_EQ(values.size(), batch_quantity_names().size());
  EXPECT_EQ(values.at("num_seqs"), batch.num_seqs);
  EXPECT_EQ(values.at("group"), batch.spec.model.num_q_heads / batch.spec.model.num_kv_heads);
  EXPECT_EQ(values.at("sm_count"), 132);
  EXPECT_EQ(values.at("compute_capability"), 90);
}

}  // namespace
}  // namespace attn
