// Determinism across CPU and GPU generation: a batch's Q and K/V pools generated on the GPU
// (kernels/fill) hold exactly the bytes of the host fill, for every layout, dtype, fp8 scale
// granularity, page size and allocation including shared prefixes.
#include <gtest/gtest.h>

#include <optional>
#include <sstream>

#include "base/sha256.hpp"
#include "kernels/problem.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

std::string sha256_of(const std::vector<uint8_t>& bytes) {
  Sha256 hash;
  hash.update(bytes.data(), bytes.size());
  return hash.hex_digest();
}

// The first differing byte, for a message that says where a mismatch starts.
std::string first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size())
    return "sizes " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      std::ostringstream out;
      out << "byte " << i << ": host 0x" << std::hex << int(a[i]) << ", device 0x" << int(b[i]);
      return out.str();
    }
  }
  return "none";
}

struct FillCase {
  KvLayout layout;
  DType dtype;
  std::optional<DType> kv_dtype;
  KvScaleGranularity scale;
  int page_size;
  PageAllocation allocation;
};

WorkloadSpec case_spec(const FillCase& c, uint64_t seed) {
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 4;  // four heads: every fp8 amplitude step appears
  shape.head_dim = 128;
  shape.dtype = c.dtype;
  shape.page_size = c.page_size;
  shape.layout = c.layout;
  shape.allocation = c.allocation;
  shape.seed = seed;
  WorkloadSpec spec =
      testing::make_spec(shape, {{0, 1}, {1, 1}, {37, 5}, {100, 1}, {15, 16}, {64, 3}});
  spec.model.kv_dtype = c.kv_dtype;
  spec.model.kv_scale = c.scale;
  if (c.allocation == PageAllocation::shared_prefix) {
    spec.sequences = {{LengthSpec(48), LengthSpec(1), 4}, {LengthSpec(70), LengthSpec(9), 3}};
    spec.kv_cache.shared_prefix = SharedPrefixSpec{32, 2};
  }
  return spec;
}

TEST(BatchFillGpu, DeviceFillEqualsHostFillByteForByte) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  KernelLoader loader(*env.context, *env.jit);
  Stream stream(*env.context);
  const auto fp8 = DType::fp8_e4m3;
  const auto tensor = KvScaleGranularity::per_tensor, head = KvScaleGranularity::per_head;
  const std::vector<FillCase> cases = {
      {KvLayout::nhd, DType::bf16, std::nullopt, tensor, 16, PageAllocation::shuffled},
      {KvLayout::hnd, DType::fp16, std::nullopt, tensor, 7, PageAllocation::sequential},
      {KvLayout::vllm, DType::bf16, std::nullopt, tensor, 16, PageAllocation::shuffled},
      {KvLayout::vllm, DType::fp16, std::nullopt, tensor, 1, PageAllocation::fragmented},
      {KvLayout::nhd, DType::bf16, fp8, tensor, 1, PageAllocation::shuffled},
      {KvLayout::hnd, DType::bf16, fp8, head, 16, PageAllocation::fragmented},
      {KvLayout::vllm, DType::fp16, fp8, head, 7, PageAllocation::shuffled},
      {KvLayout::nhd, DType::bf16, std::nullopt, tensor, 7, PageAllocation::shared_prefix},
      {KvLayout::vllm, DType::bf16, fp8, head, 16, PageAllocation::shared_prefix},
      {KvLayout::hnd, DType::fp16, std::nullopt, tensor, 1, PageAllocation::shared_prefix},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Batch batch = generate_batch(case_spec(cases[i], 1000 + i));
    const std::string what = "case " + std::to_string(i) + ": " + canonical_json(batch.spec);
    if (batch.kv_dtype == fp8) {
      ASSERT_FALSE(batch.k_scales.empty()) << what;
    }
    if (cases[i].allocation == PageAllocation::shared_prefix) {
      bool shared = false;
      for (int64_t n : batch.shared_prefix_len) shared |= n > 0;
      ASSERT_TRUE(shared) << "no sequence shares a prefix: " << what;
    }
    // The host fill uploaded against the device fill (a host problem has no block table; its
    // upload builds one).
    const Problem host = Problem::on_host(batch);
    const Problem uploaded = Problem::on_device(host, *env.context);
    const Problem device = Problem::generated_on_device(batch, *env.context, loader, stream);
    for (Problem::Tensor t : {Problem::kQ, Problem::kKPool, Problem::kVPool, Problem::kBlockTable,
                              Problem::kKvLens, Problem::kCuSeqlensQ}) {
      const std::vector<uint8_t> a = uploaded.download(t), b = device.download(t);
      EXPECT_EQ(sha256_of(a), sha256_of(b))
          << "tensor " << int(t) << ", first difference " << first_difference(a, b) << "; " << what;
    }
  }
}

// A batch over the threshold takes the device fill in the Evaluator; it must still verify
// against the CPU reference (which reads the host fill), end to end.
TEST(BatchFillGpu, LargeBatchPrefersTheDeviceFill) {
  ATTN_REQUIRE_GPU();
  testing::SpecShape shape;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  shape.head_dim = 128;
  const Batch batch =
      generate_batch(testing::make_decode_spec(shape, std::vector<int64_t>(64, 4096)));
  EXPECT_TRUE(Problem::prefers_device_fill(batch));
  auto& env = testing::gpu();
  KernelLoader loader(*env.context, *env.jit);
  Stream stream(*env.context);
  const Problem host = Problem::on_host(batch);
  const Problem device = Problem::generated_on_device(batch, *env.context, loader, stream);
  EXPECT_EQ(sha256_of(host.download(Problem::kKPool)), sha256_of(device.download(Problem::kKPool)));
  EXPECT_EQ(sha256_of(host.download(Problem::kVPool)), sha256_of(device.download(Problem::kVPool)));
}

}  // namespace
}  // namespace attn
