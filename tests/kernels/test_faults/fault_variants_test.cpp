// The test-only faulting variants: absent from the registry unless ATTN_BENCH_TEST_VARIANTS=1;
// with it, each takes decode batches with a two-value `fault` axis, declines prefill, and NVRTC
// compiles every faulting kernel (no GPU needed); the CPU test variants.
#include "kernels/test_faults/fault_variants.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "kernels/exec_context.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/problem.hpp"
#include "kernels/registry.hpp"
#include "kernels/test_faults/fault_params.hpp"
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
  EXPECT_EQ(names,
            std::vector<std::string>({"test.fault_oob_write", "test.fault_bad_page",
                                      "test.fault_hang", "test.fault_smem", "test.fault_nan"}));
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
      EXPECT_TRUE(v->check(decode, config, target).ok) << v->name() << " fault=" << fault;
      EXPECT_FALSE(v->check(prefill, config, target).ok) << v->name();
    }
    const KernelConfig faulting{{"fault", 1}};
    for (const JitProgram& program : v->programs(decode, faulting, target)) {
      EXPECT_NO_THROW(jit.compile(program)) << program.name;
    }
    EXPECT_EQ(v->programs(decode, KernelConfig{{"fault", 0}}, target)
                      .front()
                      .source.find("sm80_simt.cuh") != std::string::npos,
              true)
        << "fault=0 runs paged_decode.sm80_simt";
  }
  fs::remove_all(dir);
}

// The bad-page fault reads 2-byte elements of the K pool through a page number far outside any
// pool: it declines an fp8 pool, compiles its own kernel (not sm80_simt's), and the page it reads
// is beyond the largest pool the workload limits allow, at least ~256 GiB past the pool's start.
TEST_F(FaultVariants, BadPageReadsFarOutsideThePoolAndDeclinesAnFp8Pool) {
  ::setenv("ATTN_BENCH_TEST_VARIANTS", "1", 1);
  const Registry registry = make_registry();
  const Variant* v = registry.find("test.fault_bad_page");
  ASSERT_NE(v, nullptr);
  EXPECT_NE(v->summary().find("TEST ONLY"), std::string::npos);
  testing::SpecShape shape;
  const Target target = testing::hopper_target();
  const KernelConfig faulting{{"fault", 1}};
  WorkloadSpec fp8 = testing::make_decode_spec(shape, {100, 200});
  fp8.model.kv_dtype = DType::fp8_e4m3;
  const Batch fp8_batch = generate_batch(fp8);
  const Support declined = v->check(fp8_batch, faulting, target);
  EXPECT_FALSE(declined.ok);
  EXPECT_NE(declined.reason.find("K pool"), std::string::npos) << declined.reason;

  const Batch decode = generate_batch(testing::make_decode_spec(shape, {100, 200}));
  ASSERT_TRUE(v->check(decode, faulting, target).ok);
  const std::vector<JitProgram> programs = v->programs(decode, faulting, target);
  ASSERT_EQ(programs.size(), 1u);
  EXPECT_EQ(programs[0].kernels, std::vector<std::string>({"attn::test_faults::fault_kernel<4>"}));
  EXPECT_EQ(programs[0].arch, "sm_90a");
  const fs::path dir =
      fs::temp_directory_path() / ("attn-badpage-jit-" + std::to_string(::getpid()));
  JitCompiler jit(JitOptions{dir.string(), /*use_cache=*/false});
  const CompiledProgram compiled = jit.compile(programs[0]);
  EXPECT_FALSE(compiled.cubin.empty());
  EXPECT_EQ(compiled.lowered_names.count("attn::test_faults::fault_kernel<4>"), 1u);
  fs::remove_all(dir);

  EXPECT_EQ(test_faults::kBadPage, 4);
  // Above any pool: the limits keep num_pages + 1 below 2^31, so a pool's last page is below this.
  EXPECT_GT(int64_t(test_faults::kBadPageNumber), (int64_t(1) << 31) - 32);
  // The smallest page the bad-page fault reads is 128 bytes (page_size 1, one kv head, head_dim 64,
  // bf16): the read lands at least ~256 GiB past the pool.
  EXPECT_GT(int64_t(test_faults::kBadPageNumber) * 128, int64_t(255) << 30);
}

// test.cpu_reference_copies gives CPU sweep tests a space: 6 x 4 configs that all run
// prefix_prefill.cpu_reference (same batches taken and declined, same work), only with the flag.
TEST_F(FaultVariants, CpuReferenceCopiesIsACpuSpaceOverTheReference) {
  ::unsetenv("ATTN_BENCH_TEST_VARIANTS");
  EXPECT_EQ(make_registry().find("test.cpu_reference_copies"), nullptr);
  ::setenv("ATTN_BENCH_TEST_VARIANTS", "1", 1);
  const Registry registry = make_registry();
  const Variant* v = registry.find("test.cpu_reference_copies");
  ASSERT_NE(v, nullptr);
  const Variant* reference = registry.find("prefix_prefill.cpu_reference");
  ASSERT_NE(reference, nullptr);
  EXPECT_EQ(v->backend(), Backend::cpu);
  EXPECT_EQ(v->family(), Family::prefix_prefill);
  testing::SpecShape shape;
  const Batch prefill = generate_batch(testing::make_spec(shape, {{40, 8}, {0, 5}}, "prefill"));
  const Batch decode = generate_batch(testing::make_decode_spec(shape, {100, 200}));
  const Target cpu = Target::cpu();
  const std::vector<ConfigAxis> axes = v->space(prefill, cpu);
  ASSERT_EQ(axes.size(), 2u);
  EXPECT_EQ(axes[0].name, "copy");
  EXPECT_EQ(axes[1].name, "repeat");
  EXPECT_EQ(axes[0].values.size() * axes[1].values.size(), 24u);
  for (int64_t copy : axes[0].values) {
    for (int64_t repeat : axes[1].values) {
      EXPECT_TRUE(v->check(prefill, KernelConfig{{"copy", copy}, {"repeat", repeat}}, cpu).ok)
          << copy << " " << repeat;
    }
  }
  EXPECT_FALSE(v->check(prefill, KernelConfig{{"copy", 6}, {"repeat", 0}}, cpu).ok);
  EXPECT_FALSE(v->check(prefill, KernelConfig{{"copy", 0}, {"repeat", -1}}, cpu).ok);
  EXPECT_FALSE(v->check(prefill, KernelConfig{{"copy", 0}}, cpu).ok) << "both axes are required";
  const KernelConfig first{{"copy", 0}, {"repeat", 0}};
  EXPECT_EQ(v->check(decode, first, cpu).ok, reference->check(decode, KernelConfig{}, cpu).ok);
  EXPECT_FALSE(v->check(prefill, first, testing::hopper_target()).ok);
  EXPECT_EQ(v->work(prefill).flops, reference->work(prefill).flops);
  EXPECT_EQ(v->work(prefill).bytes, reference->work(prefill).bytes);
}

// test.cpu_incorrect writes every output element, all of them zero: a CPU case that fails
// verification, taking the batches paged_decode.cpu_reference takes, only with the flag.
TEST_F(FaultVariants, CpuIncorrectZeroesTheReferenceOutput) {
  ::unsetenv("ATTN_BENCH_TEST_VARIANTS");
  EXPECT_EQ(make_registry().find("test.cpu_incorrect"), nullptr);
  ::setenv("ATTN_BENCH_TEST_VARIANTS", "1", 1);
  const Registry registry = make_registry();
  const Variant* v = registry.find("test.cpu_incorrect");
  ASSERT_NE(v, nullptr);
  const Variant* reference = registry.find("paged_decode.cpu_reference");
  ASSERT_NE(reference, nullptr);
  EXPECT_EQ(v->backend(), Backend::cpu);
  EXPECT_EQ(v->family(), Family::paged_decode);
  testing::SpecShape shape;
  const Batch decode = generate_batch(testing::make_decode_spec(shape, {100, 200}));
  const Batch prefill = generate_batch(testing::make_spec(shape, {{40, 8}}, "prefill"));
  const Target cpu = Target::cpu();
  EXPECT_TRUE(v->check(decode, {}, cpu).ok);
  EXPECT_EQ(v->check(prefill, {}, cpu).ok, reference->check(prefill, {}, cpu).ok);

  Problem problem = Problem::on_host(decode);
  ExecContext context;
  context.target = cpu;
  context.cpu_threads = 2;
  reference->prepare(problem, {}, context)->launch();
  const std::vector<uint8_t> right = problem.read_output();
  ASSERT_NE(right, std::vector<uint8_t>(right.size(), 0)) << "the reference output is not all zero";
  problem.poison_output(nullptr);
  v->prepare(problem, {}, context)->launch();
  EXPECT_EQ(problem.read_output(), std::vector<uint8_t>(right.size(), 0));
}

}  // namespace
}  // namespace attn
