// The test-only faulting variants: absent from the registry unless ATTN_BENCH_TEST_VARIANTS=1;
// with it, each takes decode batches with a two-value `fault` axis, declines prefill, and NVRTC
// compiles every faulting kernel (no GPU needed).
#include "kernels/test_faults/fault_variants.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "kernels/jit/jit_compiler.hpp"
#include "kernels/registry.hpp"
#include "tests/target_fixtures.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

class FaultVariants : public ::testing::Test {
 protected:
  void TearDown() override { ::unsetenv("ATTN_BENCH_TEST_VARIANTS"); }
};

TEST_F(FaultVariants, RegisteredOnlyWhenTheEnvironmentAsks) {
  ::unsetenv("ATTN_BENCH_TEST_VARIANTS");
  EXPECT_TRUE(make_registry().matching("test.*").empty());
  ::setenv("ATTN_BENCH_TEST_VARIANTS", "0", 1);
  EXPECT_TRUE(make_registry().matching("test.*").empty());
  ::setenv("ATTN_BENCH_TEST_VARIANTS", "1", 1);
  const Registry registry = make_registry();
  std::vector<std::string> names;
  for (const Variant* v : registry.matching("test.fault_*")) names.push_back(v->name());
  EXPECT_EQ(names, std::vector<std::string>({"test.fault_oob_write", "test.fault_hang",
                                             "test.fault_smem", "test.fault_nan"}));
}

TEST_F(FaultVariants, TakeDecodeBatchesWithAFaultAxisAndCompile) {
  ::setenv("ATTN_BENCH_TEST_VARIANTS", "1", 1);
  const Registry registry = make_registry();
  testing::SpecShape shape;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  shape.head_dim = 128;
  const Batch decode = generate_batch(testing::make_decode_spec(shape, {5, 300, 4096}));
  const Batch prefill = generate_batch(testing::make_spec(shape, {{64, 16}}, "prefill"));
  const Target target = testing::hopper_target();
  const fs::path dir = fs::temp_directory_path() / ("attn-fault-jit-" + std::to_string(::getpid()));
  JitCompiler jit(JitOptions{dir.string(), /*use_cache=*/false});
  for (const Variant* v : registry.matching("test.fault_*")) {
    const std::vector<ConfigAxis> axes = v->space(decode, target);
    ASSERT_EQ(axes.size(), 1u);
    EXPECT_EQ(axes[0].name, "fault");
    EXPECT_EQ(axes[0].values, std::vector<int64_t>({0, 1}));
    for (int64_t fault : {0, 1}) {
      const KernelConfig config{{"fault", fault}};
      EXPECT_TRUE(v->supports(decode, config, target).ok) << v->name() << " fault=" << fault;
      EXPECT_FALSE(v->supports(prefill, config, target).ok) << v->name();
    }
    const KernelConfig faulting{{"fault", 1}};
    for (const JitProgram& program : v->programs(decode, faulting, target)) {
      EXPECT_NO_THROW(jit.compile(program)) << program.name;
    }
    EXPECT_EQ(v->programs(decode, KernelConfig{{"fault", 0}}, target)
                      .front()
                      .source.find("splitkv.cuh") != std::string::npos,
              true)
        << "fault=0 runs paged_decode.splitkv";
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attn
