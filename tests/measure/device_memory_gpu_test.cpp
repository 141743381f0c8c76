// The device-memory check on a real GPU (label gpu): with most of the free memory taken by this
// process, an evaluator for a batch that needs more than is left is refused before it allocates,
// with the invalid-input error naming the need and what is free; one that fits opens.
#include <gtest/gtest.h>

#include <string>

#include "measure/device_memory.hpp"
#include "measure/evaluator.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

TEST(DeviceMemoryGpu, ABatchOverTheFreeMemoryIsRefusedBeforeAllocating) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  env.context->make_current();
  size_t free_bytes = 0, total_bytes = 0;
  ATTN_CU_CHECK(env.context->api(), cuMemGetInfo(&free_bytes, &total_bytes));
  // Leave 3 GiB free: the small batch fits, the 6 GiB one does not.
  const size_t keep = size_t(3) << 30;
  ASSERT_GT(free_bytes, keep + (size_t(1) << 30)) << "too little free memory to test with";
  DeviceBuffer hog(*env.context, free_bytes - keep);

  testing::SpecShape shape;
  shape.head_dim = 128;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  WorkloadSpec large = testing::make_decode_spec(shape, {1000});
  large.kv_cache.num_pages = 90000;  // 2 x 90001 x 16 x 8 x 128 x 2 bytes: 5.5 GiB of pools
  const Batch large_batch = generate_batch(large);
  Evaluator::Options options = testing::test_evaluator_options();
  try {
    Evaluator::on_cuda(large_batch, env.discovery.api, env.device(), *env.jit, options);
    FAIL() << "an evaluator over the free memory was made";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("(device memory): the batch needs about "), std::string::npos) << what;
    EXPECT_NE(what.find(" are free; use a smaller batch"), std::string::npos) << what;
  }
  size_t free_after = 0;
  ATTN_CU_CHECK(env.context->api(), cuMemGetInfo(&free_after, &total_bytes));
  EXPECT_GE(free_after + (size_t(64) << 20), keep) << "something was allocated before the check";

  const Batch small = generate_batch(testing::make_decode_spec(shape, {1000, 2000}));
  EXPECT_NO_THROW(Evaluator::on_cuda(small, env.discovery.api, env.device(), *env.jit, options));
}

}  // namespace
}  // namespace attn
