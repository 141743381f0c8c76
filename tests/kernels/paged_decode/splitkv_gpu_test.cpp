// paged_decode.splitkv on the GPU: random batches, configs and data, each verified against the CPU
// reference on a poisoned output (the Evaluator does both before it times anything).
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "kernels/registry.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/test_support.hpp"
#include "tuner/evaluator.hpp"

namespace attn {
namespace {

template <typename T>
const T& pick(std::mt19937_64& rng, const std::vector<T>& values) {
  return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
}

Measurement evaluate_once(const Batch& batch, const KernelConfig& config) {
  Evaluator::Options options;
  options.policy = screen_policy();
  options.policy.min_samples = options.policy.max_samples = 1;
  options.policy.warmup_min = 0;
  options.policy.warmup_max_seconds = 0;
  options.policy.timer = TimerMode::events;
  auto& env = testing::gpu();
  auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit, options);
  const Registry registry = make_registry();
  return evaluator->evaluate(*registry.find("paged_decode.splitkv"), config);
}

std::string describe(const WorkloadSpec& spec, const KernelConfig& config) {
  std::ostringstream out;
  out << "q" << spec.model.num_q_heads << "/kv" << spec.model.num_kv_heads << " d"
      << spec.model.head_dim << " " << to_string(spec.model.dtype) << " page "
      << spec.kv_cache.page_size << " " << to_string(spec.kv_cache.layout) << " "
      << to_string(spec.kv_cache.allocation) << " seed " << spec.seed << " contexts [";
  for (const auto& s : spec.sequences) out << s.context_len.value << " ";
  out << "] config " << config.key();
  return out.str();
}

// Random shapes (GQA 1..16 including non powers of two, head dims 64/128/256, page sizes 1..256
// including odd ones, both layouts and dtypes), uneven lengths with edge cases, and a random valid
// config from the variant's space.
TEST(SplitKvGpu, RandomBatchesConfigsAndDataMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& splitkv = *registry.find("paged_decode.splitkv");
  const Target target = Target::cuda(testing::gpu().device());
  std::mt19937_64 rng(20261121);
  int checked = 0;
  for (int trial = 0; trial < 48; ++trial) {
    testing::SpecShape shape;
    shape.kv_heads = pick(rng, std::vector<int>{1, 2, 4});
    shape.q_heads = shape.kv_heads * pick(rng, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 12, 16});
    shape.head_dim = pick(rng, std::vector<int>{64, 128, 256});
    shape.dtype = pick(rng, std::vector<DType>{DType::bf16, DType::fp16});
    shape.page_size = pick(rng, std::vector<int>{1, 2, 5, 16, 31, 64, 128, 256});
    shape.layout = pick(rng, std::vector<KvLayout>{KvLayout::nhd, KvLayout::hnd});
    shape.allocation = pick(
        rng, std::vector<PageAllocation>{PageAllocation::sequential, PageAllocation::shuffled});
    shape.seed = rng();
    std::vector<int64_t> contexts;
    const int seqs = std::uniform_int_distribution<int>(1, 9)(rng);
    for (int s = 0; s < seqs; ++s) {
      contexts.push_back(
          pick(rng, std::vector<int64_t>{0, 1, 2, 15, 16, 17, 97, 255, 256, 1031, 2047, 4099}));
    }
    const Batch batch = generate_batch(testing::make_decode_spec(shape, contexts));

    // A random config the traits accept (the default when the draw is invalid).
    KernelConfig config = splitkv.default_config(batch, target);
    for (int attempt = 0; attempt < 20; ++attempt) {
      KernelConfig candidate;
      for (const ConfigAxis& axis : splitkv.space(batch, target))
        candidate.set(axis.name, pick(rng, axis.values));
      if (splitkv.supports(batch, candidate, target)) {
        config = candidate;
        break;
      }
    }
    const Measurement m = evaluate_once(batch, config);
    EXPECT_EQ(m.disposition, Disposition::passed)
        << describe(batch.spec, config) << ": " << m.reason;
    ++checked;
  }
  EXPECT_EQ(checked, 48);
}

// Every fixed split count, including more splits than tiles, on very uneven lengths.
TEST(SplitKvGpu, EverySplitCountMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  testing::SpecShape shape;
  shape.q_heads = 12;
  shape.kv_heads = 2;  // GQA 6: two head chunks of 4, the second half empty
  shape.head_dim = 128;
  const Batch batch = generate_batch(testing::make_decode_spec(shape, {0, 3, 700, 5000}));
  for (int splits : {1, 2, 3, 7, 16, 64}) {
    KernelConfig config{
        {"tile_tokens", 64}, {"warps", 4}, {"heads_per_cta", 4}, {"num_splits", splits}};
    const Measurement m = evaluate_once(batch, config);
    EXPECT_EQ(m.disposition, Disposition::passed) << "num_splits " << splits << ": " << m.reason;
  }
}

// The acceptance shape: Llama-3-8B heads, 64 sequences of 4096 tokens, bf16, page 16.
TEST(SplitKvGpu, LargeDecodeBatchMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  testing::SpecShape shape;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  shape.head_dim = 128;
  std::vector<int64_t> contexts(64, 4096);
  const Batch batch = generate_batch(testing::make_decode_spec(shape, contexts));
  const Registry registry = make_registry();
  const Variant& splitkv = *registry.find("paged_decode.splitkv");
  const Measurement m =
      evaluate_once(batch, splitkv.default_config(batch, Target::cuda(testing::gpu().device())));
  EXPECT_EQ(m.disposition, Disposition::passed) << m.reason;
  EXPECT_EQ(m.verification.nonfinite, 0);
}

}  // namespace
}  // namespace attn
