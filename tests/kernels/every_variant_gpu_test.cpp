// Every CUDA variant once, on its small batch (tests/kernels/variant_smoke_cases.hpp) with its
// default config, the way `attn-bench run` runs it: the Evaluator compiles it, poisons the output,
// launches it once, verifies every row against the CPU reference and takes one timed sample.
// These are the `gpu-quick` CTest label's tests (with the tiled GPU reference's check): a first
// look at a GPU machine, or after a change, in about a minute (docs/gpu-testing.md).
#include <gtest/gtest.h>

#include <string>

#include "kernels/registry.hpp"
#include "measure/evaluator.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/kernels/variant_smoke_cases.hpp"

namespace attn {
namespace {

class EveryVariantGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryVariantGpu, DefaultConfigMatchesTheReferenceOnASmallBatch) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  const Registry registry = make_registry();
  const Variant* variant = registry.find(GetParam());
  ASSERT_NE(variant, nullptr) << GetParam();
  const Batch batch = testing::smoke_batch(GetParam());
  auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit,
                                      testing::test_evaluator_options());
  const Target& target = evaluator->target();
  const KernelConfig config = variant->default_config(batch, target);
  const Support support = variant->check(batch, config, target);
  if (!support.ok && GetParam().find("sm90") != std::string::npos && target.cc_major < 9) {
    GTEST_SKIP() << GetParam() << " needs a Hopper GPU; this one is " << target.arch;
  }
  ASSERT_TRUE(support.ok) << GetParam() << ": " << support.reason;
  const Measurement m = evaluator->evaluate(*variant, config);
  EXPECT_EQ(m.disposition, Disposition::passed) << variant->full_name(config) << ": " << m.reason;
  EXPECT_TRUE(m.verification.checked);
  EXPECT_EQ(m.verification.nonfinite, 0);
  EXPECT_EQ(m.verification.reference, "cpu_reference");
}

// Test names from variant names: paged_decode.sm80_simt -> paged_decode_sm80_simt.
std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (c == '.') c = '_';
  }
  return name;
}

// The `Quick/` prefix is what tests/CMakeLists.txt gives the `gpu-quick` label.
INSTANTIATE_TEST_SUITE_P(Quick, EveryVariantGpu,
                         ::testing::ValuesIn(testing::smoke_variant_names()), test_name);

}  // namespace
}  // namespace attn
