// The GPU fill of a batch whose V is narrower than Q and K (model.v_head_dim): the V pool is
// filled v_head_dim wide, byte for byte as the host fills it, in every layout and over fp8.
#include <gtest/gtest.h>

#include "base/sha256.hpp"
#include "kernels/problem.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

std::string digest_of(const std::vector<uint8_t>& bytes) {
  Sha256 hash;
  hash.update(bytes.data(), bytes.size());
  return hash.hex_digest();
}

TEST(NarrowVFillGpu, DeviceFillEqualsHostFillByteForByte) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  KernelLoader loader(*env.context, *env.jit);
  Stream stream(*env.context);
  struct Case {
    KvLayout layout;
    bool fp8;
    int head_dim, v_head_dim;
  };
  const Case cases[] = {{KvLayout::nhd, false, 192, 128},
                        {KvLayout::hnd, true, 192, 128},
                        {KvLayout::vllm, false, 128, 64},
                        {KvLayout::vllm, true, 192, 128}};
  for (const Case& c : cases) {
    testing::SpecShape shape;
    shape.q_heads = 8;
    shape.kv_heads = 4;
    shape.head_dim = c.head_dim;
    shape.layout = c.layout;
    shape.page_size = 16;
    WorkloadSpec spec = testing::make_spec(shape, {{0, 3}, {37, 5}, {100, 1}});
    spec.model.v_head_dim = c.v_head_dim;
    if (c.fp8) {
      spec.model.kv_dtype = DType::fp8_e4m3;
      spec.model.kv_scale = KvScaleGranularity::per_head;
    }
    const Batch batch = generate_batch(spec);
    const std::string what = canonical_json(batch.spec);
    const Problem host = Problem::on_host(batch);
    const Problem device = Problem::generated_on_device(batch, *env.context, loader, stream);
    EXPECT_EQ(device.download(Problem::kVPool).size(),
              size_t(batch.num_pages * 16 * 4 * c.v_head_dim) * size_of(batch.kv_dtype))
        << what;
    for (Problem::Tensor t : {Problem::kQ, Problem::kKPool, Problem::kVPool}) {
      EXPECT_EQ(digest_of(host.download(t)), digest_of(device.download(t)))
          << "tensor " << int(t) << "; " << what;
    }
  }
}

}  // namespace
}  // namespace attn
