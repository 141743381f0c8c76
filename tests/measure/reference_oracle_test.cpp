// The choice of oracle for CUDA evaluations: names, the work measure and the `auto` threshold.
#include "measure/reference_oracle.hpp"

#include <gtest/gtest.h>

#include "measure/evaluator.hpp"
#include "tests/test_support.hpp"
#include "workloads/visibility.hpp"

namespace attn {
namespace {

TEST(ReferenceOracle, NamesRoundTripAndUnknownOnesAreRefused) {
  for (ReferenceOracle oracle :
       {ReferenceOracle::cpu, ReferenceOracle::gpu, ReferenceOracle::automatic}) {
    EXPECT_EQ(reference_oracle_from_string(to_string(oracle)), oracle);
  }
  EXPECT_EQ(to_string(ReferenceOracle::automatic), "auto");
  EXPECT_FALSE(reference_oracle_from_string("automatic").has_value());
  EXPECT_FALSE(reference_oracle_from_string("GPU").has_value());
  EXPECT_FALSE(reference_oracle_from_string("").has_value());
}

// One causal prefill of 100 tokens over 8 q heads at head dim 64: 100 * 101 / 2 pairs per head.
TEST(ReferenceOracle, WorkIsVisiblePairsTimesHeadDim) {
  testing::SpecShape shape;  // 8 q heads, head dim 64
  const Batch batch = generate_batch(testing::make_spec(shape, {{0, 100}}));
  EXPECT_EQ(visible_pairs(batch), 5050 * 8);
  EXPECT_EQ(reference_work(batch), 5050.0 * 8 * 64);
}

TEST(ReferenceOracle, AutoComparesTheWorkWithTheThreshold) {
  testing::SpecShape shape;
  const Batch batch = generate_batch(testing::make_spec(shape, {{0, 100}}));
  const double work = reference_work(batch);
  EXPECT_FALSE(use_gpu_reference(batch, ReferenceOracle::cpu, 0));
  EXPECT_TRUE(use_gpu_reference(batch, ReferenceOracle::gpu, 1e30));
  EXPECT_TRUE(use_gpu_reference(batch, ReferenceOracle::automatic, work));
  EXPECT_FALSE(use_gpu_reference(batch, ReferenceOracle::automatic, work + 1));
  EXPECT_FALSE(use_gpu_reference(batch, ReferenceOracle::automatic, kDefaultGpuReferenceMinWork));
  EXPECT_EQ(describe_reference_choice(batch, ReferenceOracle::gpu, 0), "--reference gpu");
  EXPECT_EQ(describe_reference_choice(batch, ReferenceOracle::automatic, 1e6),
            "auto: visible pairs x head_dim 2.6e+06 >= 1e+06");
}

// The default threshold sends the large benchmark cases to the GPU and keeps decode batches and
// the GPU tests' usual prefills on the CPU reference. Counted, never computed.
TEST(ReferenceOracle, DefaultThresholdSplitsTheBenchmarkShapes) {
  auto work_of = [](int q_heads, int kv_heads, int head_dim,
                    std::vector<std::pair<int64_t, int64_t>> seqs, bool causal = true) {
    testing::SpecShape shape;
    shape.q_heads = q_heads;
    shape.kv_heads = kv_heads;
    shape.head_dim = head_dim;
    shape.page_size = 256;
    WorkloadSpec spec = testing::make_spec(shape, seqs);
    spec.mask.causal = causal;
    return reference_work(generate_batch(spec));
  };
  const double threshold = kDefaultGpuReferenceMinWork;
  // Above: the 16384-token dense causal prefill and 2 x 4096 at 32 heads.
  EXPECT_GE(work_of(16, 16, 128, {{0, 16384}}), threshold);
  EXPECT_GE(work_of(32, 8, 128, {{0, 4096}, {0, 4096}}), threshold);
  // Below: a causal 2 x 1024 at 16 heads and a 64 x 4k decode batch; the non-causal 2 x 1024
  // (flash_fwd's Evaluator test) is just above.
  EXPECT_LT(work_of(16, 16, 128, {{0, 1024}, {0, 1024}}), threshold);
  EXPECT_GE(work_of(16, 16, 128, {{0, 1024}, {0, 1024}}, false), threshold);
  std::vector<std::pair<int64_t, int64_t>> decode(64, {4096, 1});
  EXPECT_LT(work_of(32, 8, 128, decode), threshold);
}

TEST(ReferenceOracle, CpuEvaluatorAlwaysUsesTheDenseOracle) {
  testing::SpecShape shape;
  const Batch batch = generate_batch(testing::make_decode_spec(shape, {5}));
  Evaluator::Options options;
  options.reference = ReferenceOracle::gpu;
  auto evaluator = Evaluator::on_cpu(batch, options);
  EXPECT_EQ(evaluator->reference_name(), "naive_dense");
  EXPECT_EQ(evaluator->reference_choice(), "the CPU backend");
}

}  // namespace
}  // namespace attn
