// The search space: the product of a variant's axes with overrides, pruned by check() with the
// refusals counted by reason; the described CUDA target.
#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "kernels/registry.hpp"
#include "tuner/search_space.hpp"
#include "workloads/presets.hpp"

namespace attn {
namespace {

class SearchSpaceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { batch_ = new Batch(generate_batch(load_preset("default"))); }
  static void TearDownTestSuite() { delete batch_; }
  static Batch* batch_;
  Registry registry_ = make_registry();
};
Batch* SearchSpaceTest::batch_ = nullptr;

size_t product(const std::vector<ConfigAxis>& axes) {
  size_t n = 1;
  for (const ConfigAxis& a : axes) n *= a.values.size();
  return n;
}

TEST_F(SearchSpaceTest, ProductIsPrunedAndEveryRefusalCounted) {
  const Variant* v = registry_.find("paged_decode.sm80_simt");
  ASSERT_NE(v, nullptr);
  const Target h100 = described_cuda_target({});
  const SearchSpace s = build_space(*v, *batch_, h100, {});
  EXPECT_EQ(s.total, product(v->space(*batch_, h100)));
  EXPECT_GT(s.configs.size(), 0u);
  EXPECT_GT(s.pruned(), 0u);
  size_t refused = 0;
  for (const auto& [reason, count] : s.refusals) refused += count;
  EXPECT_EQ(refused, s.pruned());
  for (const KernelConfig& c : s.configs) EXPECT_TRUE(v->check(*batch_, c, h100)) << c.key();
  // The first axis varies slowest: the product order.
  for (size_t i = 1; i < s.configs.size(); ++i) {
    EXPECT_LE(s.configs[i - 1].get(s.axes[0].name), s.configs[i].get(s.axes[0].name));
  }
  // Less shared memory per block prunes more.
  TargetDescription small;
  small.max_shared_per_block = 16 * 1024;
  const SearchSpace tight = build_space(*v, *batch_, described_cuda_target(small), {});
  EXPECT_EQ(tight.total, s.total);
  EXPECT_LT(tight.configs.size(), s.configs.size());
}

TEST_F(SearchSpaceTest, OverridesReplaceAnAxisAndUnknownAxesAreIgnored) {
  const Variant* v = registry_.find("paged_decode.sm80_simt");
  const Target h100 = described_cuda_target({});
  const SearchSpace s =
      build_space(*v, *batch_, h100,
                  {parse_axis_override("warps=4"), parse_axis_override("tile_tokens=32,64"),
                   parse_axis_override("no_such_axis=1")});
  EXPECT_EQ(s.total, product(v->space(*batch_, h100)) / 4 / 2);
  for (const KernelConfig& c : s.configs) {
    EXPECT_EQ(c.get("warps"), 4);
    EXPECT_TRUE(c.get("tile_tokens") == 32 || c.get("tile_tokens") == 64);
    EXPECT_FALSE(c.find("no_such_axis"));
  }
}

TEST_F(SearchSpaceTest, CpuReferenceHasOneConfigOrOneRefusal) {
  const SearchSpace decode =
      build_space(*registry_.find("paged_decode.cpu_reference"), *batch_, Target::cpu(), {});
  EXPECT_EQ(decode.total, 1u);
  EXPECT_EQ(decode.configs.size(), 1u);
  const SearchSpace dense =
      build_space(*registry_.find("flash_fwd.cpu_reference"), *batch_, Target::cpu(), {});
  EXPECT_EQ(dense.total, 1u);
  EXPECT_TRUE(dense.configs.empty());
  ASSERT_EQ(dense.refusals.size(), 1u);
  EXPECT_NE(dense.refusals.begin()->first.find("query token"), std::string::npos);
}

TEST(AxisOverride, ParsesAndRejects) {
  const AxisOverride o = parse_axis_override("block_n=32,64");
  EXPECT_EQ(o.axis, "block_n");
  EXPECT_EQ(o.values, (std::vector<int64_t>{32, 64}));
  for (const char* bad : {"block_n", "=1", "block_n=", "block_n=a", "block_n=1,,2", "b=1,1"}) {
    EXPECT_THROW(parse_axis_override(bad), UsageError) << bad;
  }
}

TEST(DescribedTarget, ParsesArchAndRejectsNonsense) {
  TargetDescription d;
  d.arch = "sm_86";
  const Target t = described_cuda_target(d);
  EXPECT_EQ(t.backend, Backend::cuda);
  EXPECT_EQ(t.cc_major, 8);
  EXPECT_EQ(t.cc_minor, 6);
  d.arch = "sm_100a";
  EXPECT_EQ(described_cuda_target(d).cc_major, 10);
  const Target h100 = described_cuda_target({});
  EXPECT_EQ(h100.arch, "sm_90a");
  EXPECT_EQ(h100.compute_capability(), 90);
  EXPECT_EQ(h100.sm_count, 132);
  for (const char* bad : {"90", "sm_9", "sm_90b", "sm_x0"}) {
    d.arch = bad;
    EXPECT_THROW(described_cuda_target(d), UsageError) << bad;
  }
  d = {};
  d.sm_count = 0;
  EXPECT_THROW(described_cuda_target(d), UsageError);
}

}  // namespace
}  // namespace attn
