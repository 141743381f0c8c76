// flash_fwd.sm80_mma on the GPU: random variable-length batches (lengths that are multiples of no
// tile, contexts that shift the causal diagonal), GQA ratios including non powers of two, head
// dims 64/128/256, bf16 and fp16, causal and not, and random configs from the variant's space.
// Every run writes into a poisoned output (0xFF: NaN in bf16 and fp16) and a NaN-filled LSE
// buffer, and is compared with the CPU reference: no NaN anywhere, every output row within the
// dtype's tolerance, every LSE within kLseTolerance of the reference's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <limits>
#include <random>
#include <sstream>

#include "kernels/flash_fwd/flash_fwd_variants.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "kernels/registry.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/test_support.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/verify.hpp"

namespace attn {
namespace {

// The kernel's LSE is a float sum of exp2 terms over fp32 scores of the same 16-bit inputs the
// reference reads in double: its error is ~1e-5; a missed or doubled key of weight p moves it by
// log(1 +- p).
constexpr double kLseTolerance = 2e-3;

template <typename T>
const T& pick(std::mt19937_64& rng, const std::vector<T>& values) {
  return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
}

const FlashFwdVariant& sm80_variant(const Registry& registry) {
  return dynamic_cast<const FlashFwdVariant&>(*registry.find("flash_fwd.sm80_mma"));
}

std::string describe(const Batch& batch, const KernelConfig& config) {
  const WorkloadSpec& spec = batch.spec;
  std::ostringstream out;
  out << "q" << spec.model.num_q_heads << "/kv" << spec.model.num_kv_heads << " d"
      << spec.model.head_dim << " " << to_string(spec.model.dtype) << " page "
      << spec.kv_cache.page_size << " " << to_string(spec.kv_cache.layout) << " seed " << spec.seed
      << (batch.causal ? " causal" : " non-causal") << " (context, query) [";
  for (int s = 0; s < batch.num_seqs; ++s) {
    out << "(" << batch.context_lens[size_t(s)] << ", " << batch.query_lens[size_t(s)] << ") ";
  }
  out << "] config " << config.key();
  return out.str();
}

// Prepares on a device copy of the batch, poisons the output and the LSE, launches once and
// checks both against the CPU reference.
void expect_matches_reference(const Batch& batch, const KernelConfig& config) {
  auto& env = testing::gpu();
  const Registry registry = make_registry();
  const FlashFwdVariant& variant = sm80_variant(registry);
  const std::string what = describe(batch, config);
  const Target target = Target::cuda(env.device());
  const Support support = variant.supports(batch, config, target);
  ASSERT_TRUE(support.ok) << what << ": " << support.reason;

  const Problem host = Problem::on_host(batch);
  Problem device = Problem::on_device(host, *env.context);
  Stream stream(*env.context);
  KernelLoader loader(*env.context, *env.jit);
  Workspace workspace(*env.context);
  ExecContext context;
  context.target = target;
  context.cuda = env.context.get();
  context.stream = &stream;
  context.loader = &loader;
  context.workspace = &workspace;

  const size_t rows = size_t(batch.total_q) * size_t(batch.spec.model.num_q_heads);
  DeviceBuffer lse(*env.context, rows * sizeof(float));
  const std::vector<float> nan_rows(rows, std::numeric_limits<float>::quiet_NaN());
  lse.upload(nan_rows.data(), rows * sizeof(float));
  device.poison_output(&stream);
  std::unique_ptr<Launcher> launcher;
  try {
    launcher =
        variant.prepare_with_lse(device, config, context, static_cast<float*>(lse.pointer()));
  } catch (const CompileError& error) {
    FAIL() << what << ": " << error.what() << "\n" << error.log();
  }
  launcher->launch();
  stream.synchronize();

  std::vector<float> reference_lse;
  const std::vector<float> reference = paged_attention_reference(host, 0, &reference_lse);
  const std::vector<uint8_t> output = device.read_output();
  const Verification v = verify_output(output.data(), batch.spec.model.dtype, reference,
                                       batch.spec.model.head_dim, "cpu_reference");
  EXPECT_EQ(v.nonfinite, 0) << what;
  EXPECT_TRUE(verification_passed(v)) << what << ": " << attn::describe(v);

  std::vector<float> got(rows);
  lse.download(got.data(), rows * sizeof(float));
  int64_t bad = 0;
  for (size_t r = 0; r < rows; ++r) {
    const double error = std::fabs(double(got[r]) - double(reference_lse[r]));
    if (!std::isfinite(got[r]) || !(error <= kLseTolerance)) {
      if (bad++ < 3) {
        ADD_FAILURE() << what << ": LSE row " << r << " (token "
                      << r / size_t(batch.spec.model.num_q_heads) << ") " << got[r]
                      << " vs reference " << reference_lse[r];
      }
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << rows << " LSE rows wrong";
}

WorkloadSpec prefill_spec(const testing::SpecShape& shape,
                          const std::vector<std::pair<int64_t, int64_t>>& sequences, bool causal) {
  WorkloadSpec spec = testing::make_spec(shape, sequences, "flash-fwd-test");
  spec.mask.causal = causal;
  return spec;
}

// A random config the variant accepts (the default when 30 draws are all invalid).
KernelConfig random_config(const Variant& variant, const Batch& batch, const Target& target,
                           std::mt19937_64& rng) {
  for (int attempt = 0; attempt < 30; ++attempt) {
    KernelConfig candidate;
    for (const ConfigAxis& axis : variant.space(batch, target))
      candidate.set(axis.name, pick(rng, axis.values));
    if (variant.supports(batch, candidate, target)) return candidate;
  }
  return variant.default_config(batch, target);
}

// Random shapes and lengths: GQA 1..16 and 40 (non powers of two among them), head dims 64, 128,
// 256, both dtypes, both pool layouts, odd page sizes; 1 to 5 sequences whose query lengths are
// near and off every tile size (1, 15, 17, 63, 65, 127, 129, ...) with contexts from 0 to 257, so
// the causal diagonal crosses tiles at every offset; causal or not; a random accepted config.
TEST(FlashFwdSm80Gpu, RandomBatchesShapesAndConfigsMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = sm80_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  std::mt19937_64 rng(20261208);
  for (int trial = 0; trial < 48; ++trial) {
    testing::SpecShape shape;
    shape.kv_heads = pick(rng, std::vector<int>{1, 2, 3});
    shape.q_heads =
        shape.kv_heads * pick(rng, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 40});
    shape.head_dim = pick(rng, std::vector<int>{64, 128, 256});
    shape.dtype = pick(rng, std::vector<DType>{DType::bf16, DType::fp16});
    shape.page_size = pick(rng, std::vector<int>{1, 5, 16, 64});
    shape.layout = pick(rng, std::vector<KvLayout>{KvLayout::nhd, KvLayout::hnd});
    shape.seed = rng();
    std::vector<std::pair<int64_t, int64_t>> sequences;
    const int seqs = std::uniform_int_distribution<int>(1, 5)(rng);
    for (int s = 0; s < seqs; ++s) {
      const int64_t context = std::uniform_int_distribution<int>(0, 2)(rng) == 0
                                  ? pick(rng, std::vector<int64_t>{1, 7, 31, 64, 100, 257})
                                  : 0;
      const int64_t query = pick(rng, std::vector<int64_t>{1, 2, 15, 16, 17, 31, 63, 65, 100, 127,
                                                           129, 200, 255, 333, 513});
      sequences.push_back({context, query});
    }
    if (std::all_of(sequences.begin(), sequences.end(), [](auto& s) { return s.second == 1; }))
      sequences.front().second = 77;  // a decode batch is paged_decode's
    const bool causal = std::uniform_int_distribution<int>(0, 3)(rng) != 0;
    const Batch batch = generate_batch(prefill_spec(shape, sequences, causal));
    expect_matches_reference(batch, random_config(variant, batch, target, rng));
  }
}

// Every (tile_m, tile_n, warps, stages) the variant accepts on this device, for each head dim,
// causal and not, on a batch whose lengths are multiples of no tile: the whole compiled space
// runs, not just a sample. The programs are compiled in parallel first.
TEST(FlashFwdSm80Gpu, EveryAcceptedConfigMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  const Registry registry = make_registry();
  const Variant& variant = sm80_variant(registry);
  const Target target = Target::cuda(env.device());
  std::vector<std::pair<Batch, KernelConfig>> cases;
  for (int head_dim : {64, 128, 256}) {
    for (bool causal : {true, false}) {
      testing::SpecShape shape;
      shape.q_heads = 6;
      shape.kv_heads = 2;  // GQA 3
      shape.head_dim = head_dim;
      shape.dtype = causal ? DType::bf16 : DType::fp16;
      shape.seed = uint64_t(head_dim) * 2 + causal;
      const Batch batch =
          generate_batch(prefill_spec(shape, {{0, 300}, {45, 1}, {3, 129}, {0, 17}}, causal));
      const auto space = variant.space(batch, target);
      for (int64_t m : space[0].values) {
        for (int64_t n : space[1].values) {
          for (int64_t w : space[2].values) {
            for (int64_t s : space[3].values) {
              const KernelConfig config{{"tile_m", m}, {"tile_n", n}, {"warps", w}, {"stages", s}};
              if (variant.supports(batch, config, target)) cases.push_back({batch, config});
            }
          }
        }
      }
    }
  }
  std::vector<std::future<CompiledProgram>> compiles;
  for (const auto& [batch, config] : cases) {
    compiles.push_back(env.jit->compile_async(variant.programs(batch, config, target).front()));
  }
  for (auto& compiled : compiles) {
    try {
      compiled.get();
    } catch (const CompileError& error) {
      ADD_FAILURE() << error.what() << "\n" << error.log();
    }
  }
  EXPECT_GT(cases.size(), 30u);
  for (const auto& [batch, config] : cases) expect_matches_reference(batch, config);
}

// Bottom-right alignment: queries on top of a context see context + i + 1 keys, with the
// diagonal at every offset within the tiles; GQA 5; one sequence whose context is longer than
// its queries by more than a tile, one shorter.
TEST(FlashFwdSm80Gpu, CausalDiagonalAlignedToTheBottomRight) {
  ATTN_REQUIRE_GPU();
  testing::SpecShape shape;
  shape.q_heads = 10;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  shape.page_size = 16;
  for (const KernelConfig& config :
       {KernelConfig{{"tile_m", 128}, {"tile_n", 32}, {"warps", 4}, {"stages", 2}},
        KernelConfig{{"tile_m", 64}, {"tile_n", 128}, {"warps", 4}, {"stages", 3}},
        KernelConfig{{"tile_m", 32}, {"tile_n", 64}, {"warps", 2}, {"stages", 4}}}) {
    const Batch batch = generate_batch(
        prefill_spec(shape, {{300, 129}, {5, 1}, {1000, 700}, {1, 64}, {63, 65}}, true));
    expect_matches_reference(batch, config);
  }
}

// The path `attn-bench run` takes: the Evaluator prepares without an LSE, poisons the output,
// verifies against the CPU reference and times it; on benchmark-like shapes (16 heads, head dim
// 128, bf16) with the default config, causal and not.
TEST(FlashFwdSm80Gpu, EvaluatorVerifiesAndTimesTheDefaultConfig) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  const Registry registry = make_registry();
  const Variant& variant = sm80_variant(registry);
  Evaluator::Options options;
  options.policy = screen_policy();
  options.policy.min_samples = options.policy.max_samples = 3;
  options.policy.warmup_min = 0;
  options.policy.warmup_max_seconds = 0;
  options.policy.timer = TimerMode::events;
  testing::SpecShape shape;
  shape.q_heads = 16;
  shape.kv_heads = 16;
  shape.head_dim = 128;
  for (bool causal : {true, false}) {
    const Batch batch = generate_batch(prefill_spec(shape, {{0, 1024}, {0, 1024}}, causal));
    auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit, options);
    const KernelConfig config = variant.default_config(batch, evaluator->target());
    const Measurement m = evaluator->evaluate(variant, config);
    EXPECT_EQ(m.disposition, Disposition::passed) << describe(batch, config) << ": " << m.reason;
    EXPECT_EQ(m.verification.nonfinite, 0);
    EXPECT_GT(m.flops, 0);
  }
}

// Large: one 8192-token causal prompt (64 query tiles, diagonal-heavy scheduling) and four
// 2000-token non-causal ones, 16 heads, head dim 128, bf16, default configs.
TEST(FlashFwdSm80Gpu, LargeBatchesMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = sm80_variant(registry);
  const Target target = Target::cuda(testing::gpu().device());
  testing::SpecShape shape;
  shape.q_heads = 16;
  shape.kv_heads = 16;
  shape.head_dim = 128;
  const Batch causal = generate_batch(prefill_spec(shape, {{0, 8192}}, true));
  expect_matches_reference(causal, variant.default_config(causal, target));
  const Batch full = generate_batch(
      prefill_spec(shape, std::vector<std::pair<int64_t, int64_t>>(4, {0, 2000}), false));
  expect_matches_reference(full, variant.default_config(full, target));
}

}  // namespace
}  // namespace attn
