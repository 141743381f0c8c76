// prefix_prefill.sm90_wgmma's in-kernel conversion of an fp8 cache (fp8_dequant=1) across launches,
// on a Hopper GPU (skipped elsewhere): one prepared launch runs three times. Between the first and
// the second every code of the cache outside the new tokens' slots changes (prepare() gathered the
// new tokens once), so the second launch is right only if it converts the blocks again and waits
// for its own conversion, not for flags the first launch raised; the third reads the same codes as
// the second. Each output, on a poisoned buffer, against the CPU reference of the codes it read.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "kernels/registry.hpp"
#include "measure/verify.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

// New finite codes (magnitudes below 2) in every row of `pool` ([pages][page_size][kv heads]
// [dims], NHD) except the rows of `kept` slots (page x page_size + offset).
void change_codes(std::vector<uint8_t>& pool, int64_t row_bytes, const std::set<int64_t>& kept,
                  uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t rows = int64_t(pool.size()) / row_bytes;
  for (int64_t slot = 0; slot < rows; ++slot) {
    if (kept.count(slot) != 0) continue;
    for (int64_t i = 0; i < row_bytes; ++i)
      pool[size_t(slot * row_bytes + i)] = uint8_t(rng() & 0xBF);
  }
}

TEST(PrefixPrefillFp8CopiesGpu, EachLaunchConvertsTheCodesItReads) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  if (env.device().arch() != "sm_90a")
    GTEST_SKIP() << "prefix_prefill.sm90_wgmma needs sm_90a; this GPU is " << env.device().arch();
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  WorkloadSpec spec =
      testing::make_spec(shape, {{300, 40}, {0, 20}, {1000, 70}, {17, 1}}, "fp8-launches");
  spec.model.kv_dtype = DType::fp8_e4m3;
  spec.model.kv_scale = KvScaleGranularity::per_head;
  const Batch batch = generate_batch(spec);

  const Registry registry = make_registry();
  const Variant* variant = registry.find("prefix_prefill.sm90_wgmma");
  ASSERT_NE(variant, nullptr);
  const Target target = Target::cuda(env.device());
  KernelConfig config = variant->default_config(batch, target);
  ASSERT_EQ(config.get("fp8_dequant"), 1) << config.key();
  ASSERT_TRUE(variant->check(batch, config, target)) << config.key();

  const Problem host = Problem::on_host(batch);
  Problem device = Problem::on_device(host, *env.context);
  // The same batch with other codes outside the new tokens' slots.
  const std::set<int64_t> kept(batch.slot_mapping.begin(), batch.slot_mapping.end());
  const int64_t row_bytes = int64_t(shape.kv_heads) * shape.head_dim;  // one slot, every kv head
  std::vector<uint8_t> k_changed = host.download(Problem::kKPool);
  std::vector<uint8_t> v_changed = host.download(Problem::kVPool);
  change_codes(k_changed, row_bytes, kept, 1);
  change_codes(v_changed, row_bytes, kept, 2);
  Problem changed_host = Problem::on_host(batch);
  std::copy(k_changed.begin(), k_changed.end(),
            static_cast<uint8_t*>(const_cast<void*>(changed_host.k_pool())));
  std::copy(v_changed.begin(), v_changed.end(),
            static_cast<uint8_t*>(const_cast<void*>(changed_host.v_pool())));
  const testing::OracleOutput first = testing::oracle_output(host, device, false);
  const testing::OracleOutput changed = testing::oracle_output(changed_host, device, false);
  ASSERT_EQ(first.name, "cpu_reference");

  testing::DeviceExec exec(target);
  ExecContext& context = exec.context;
  Stream& stream = exec.stream;
  const std::unique_ptr<Launcher> launcher = variant->prepare(device, config, context);
  auto launch_and_check = [&](const testing::OracleOutput& oracle, const std::string& what) {
    device.poison_output(&stream);
    launcher->launch();
    stream.synchronize();
    const std::vector<uint8_t> output = device.read_output();
    const Verification v = verify_output(output.data(), batch.spec.model.dtype, oracle.out,
                                         batch.spec.model.head_dim, oracle.name);
    EXPECT_EQ(v.nonfinite, 0) << what;
    EXPECT_TRUE(verification_passed(v)) << what << ": " << attn::describe(v);
  };
  launch_and_check(first, "first launch");
  const DriverApi& api = env.context->api();
  env.context->make_current();
  ATTN_CU_CHECK(api,
                cuMemcpyHtoD(CUdeviceptr(device.k_pool()), k_changed.data(), k_changed.size()));
  ATTN_CU_CHECK(api,
                cuMemcpyHtoD(CUdeviceptr(device.v_pool()), v_changed.data(), v_changed.size()));
  launch_and_check(changed, "second launch, other codes");
  launch_and_check(changed, "third launch, the same codes");
  // (The first oracle differs from the changed one, so the second check could fail.)
  EXPECT_NE(first.out, changed.out);
}

}  // namespace
}  // namespace attn
