// The blocksparse family on the GPU: blocksparse.mma on random variable-length prefill batches
// (contexts that put the first new token anywhere in a block, lengths off every tile, GQA ratios
// including non powers of two, head dims 64/128, bf16 and fp16, causal and not) over random
// layouts (Phi-3 parameters with random block sizes, sliding steps and homo heads, and random
// lower-triangular layouts with empty rows and dropped diagonals), with random configs and every
// accepted config; blocksparse.decode likewise on decode batches. Every run writes into a
// poisoned output (0xFF: NaN in bf16 and fp16) and is compared with the CPU reference (which
// applies key_visible): no NaN, every row within the dtype's tolerance. Then the Evaluator path
// and a benchmark-sized prompt.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <random>
#include <sstream>

#include "kernels/blocksparse/blocksparse_variants.hpp"
#include "kernels/reference/paged_attention_reference.hpp"
#include "kernels/registry.hpp"
#include "tests/gpu_test_support.hpp"
#include "tests/test_support.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/verify.hpp"

namespace attn {
namespace {

template <typename T>
const T& pick(std::mt19937_64& rng, const std::vector<T>& values) {
  return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
}

BlockSparseSpec phi3_layout(int block_size, int local, int stride, int sliding = 1,
                            bool homo = false) {
  BlockSparseSpec b;
  b.block_size = block_size;
  b.local_blocks = local;
  b.vertical_stride = stride;
  b.head_sliding_step = sliding;
  b.homo_head = homo;
  return b;
}

// A random lower-triangular layout replacing the batch's (same block size and block count): each
// block kept with probability `density`, so rows may be empty and diagonals dropped.
void randomise_layout(Batch& batch, std::mt19937_64& rng, double density) {
  BlockSparseLayout& layout = *batch.block_sparse;
  std::bernoulli_distribution keep(density);
  std::vector<std::vector<int32_t>> cols(size_t(layout.num_heads));
  layout.crow.assign(size_t(layout.num_heads) * size_t(layout.num_blocks + 1), 0);
  layout.max_nnz = 0;
  for (int h = 0; h < layout.num_heads; ++h) {
    for (int i = 0; i < layout.num_blocks; ++i) {
      for (int j = 0; j <= i; ++j) {
        if (keep(rng)) cols[size_t(h)].push_back(j);
      }
      layout.crow[size_t(h) * size_t(layout.num_blocks + 1) + size_t(i) + 1] =
          int32_t(cols[size_t(h)].size());
    }
    layout.max_nnz = std::max(layout.max_nnz, int(cols[size_t(h)].size()));
  }
  layout.col.assign(size_t(layout.num_heads) * size_t(std::max(1, layout.max_nnz)), -1);
  for (int h = 0; h < layout.num_heads; ++h) {
    std::copy(cols[size_t(h)].begin(), cols[size_t(h)].end(),
              layout.col.begin() + ptrdiff_t(h) * layout.max_nnz);
  }
}

std::string describe(const Batch& batch, const KernelConfig& config) {
  const WorkloadSpec& spec = batch.spec;
  const BlockSparseLayout& layout = *batch.block_sparse;
  std::ostringstream out;
  out << "q" << spec.model.num_q_heads << "/kv" << spec.model.num_kv_heads << " d"
      << spec.model.head_dim << " " << to_string(spec.model.dtype) << " page "
      << spec.kv_cache.page_size << " seed " << spec.seed
      << (batch.causal ? " causal" : " non-causal") << " block " << layout.block_size << " density "
      << layout.density() << " (context, query) [";
  for (int s = 0; s < batch.num_seqs; ++s) {
    out << "(" << batch.context_lens[size_t(s)] << ", " << batch.query_lens[size_t(s)] << ") ";
  }
  out << "] config " << config.key();
  return out.str();
}

void expect_matches_reference(const Variant& variant, const Batch& batch,
                              const KernelConfig& config) {
  auto& env = testing::gpu();
  const std::string what = variant.name() + " " + describe(batch, config);
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

  device.poison_output(&stream);
  std::unique_ptr<Launcher> launcher;
  try {
    launcher = variant.prepare(device, config, context);
  } catch (const CompileError& error) {
    FAIL() << what << ": " << error.what() << "\n" << error.log();
  }
  launcher->launch();
  stream.synchronize();

  const std::vector<float> reference = paged_attention_reference(host, 0);
  const std::vector<uint8_t> output = device.read_output();
  const Verification v = verify_output(output.data(), batch.spec.model.dtype, reference,
                                       batch.spec.model.head_dim, "cpu_reference");
  EXPECT_EQ(v.nonfinite, 0) << what;
  EXPECT_TRUE(verification_passed(v)) << what << ": " << attn::describe(v);
}

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

// A random shape, layout and data seed; sequences as given.
Batch random_batch(std::mt19937_64& rng, const std::vector<std::pair<int64_t, int64_t>>& sequences,
                   bool causal, int max_group) {
  testing::SpecShape shape;
  shape.kv_heads = pick(rng, std::vector<int>{1, 2, 3});
  std::vector<int> groups;
  for (int g : {1, 2, 3, 4, 5, 7, 8, 16, 20}) {
    if (g <= max_group) groups.push_back(g);
  }
  shape.q_heads = shape.kv_heads * pick(rng, groups);
  shape.head_dim = pick(rng, std::vector<int>{64, 128});
  shape.dtype = pick(rng, std::vector<DType>{DType::bf16, DType::fp16});
  shape.page_size = pick(rng, std::vector<int>{1, 5, 16, 64});
  shape.layout = pick(rng, std::vector<KvLayout>{KvLayout::nhd, KvLayout::hnd});
  shape.seed = rng();
  WorkloadSpec spec = testing::make_spec(shape, sequences, "blocksparse-gpu-test");
  spec.mask.block_sparse = phi3_layout(
      pick(rng, std::vector<int>{16, 32, 64, 128}), std::uniform_int_distribution<int>(1, 4)(rng),
      std::uniform_int_distribution<int>(1, 8)(rng), std::uniform_int_distribution<int>(0, 3)(rng),
      rng() % 5 == 0);
  Batch batch = generate_batch(spec);
  // Workloads with a layout are causal (validation); the kernels also run non-causal batches.
  batch.causal = causal;
  if (rng() % 3 == 0) randomise_layout(batch, rng, pick(rng, std::vector<double>{0.05, 0.3, 0.7}));
  return batch;
}

std::vector<std::pair<int64_t, int64_t>> random_prefill_sequences(std::mt19937_64& rng) {
  std::vector<std::pair<int64_t, int64_t>> sequences;
  const int seqs = std::uniform_int_distribution<int>(1, 5)(rng);
  for (int s = 0; s < seqs; ++s) {
    const int64_t context =
        rng() % 2 == 0 ? pick(rng, std::vector<int64_t>{1, 7, 31, 64, 100, 257, 1000}) : 0;
    const int64_t query = pick(
        rng, std::vector<int64_t>{1, 2, 15, 16, 17, 63, 65, 100, 127, 129, 255, 333, 513, 1100});
    sequences.push_back({context, query});
  }
  if (std::all_of(sequences.begin(), sequences.end(), [](auto& s) { return s.second == 1; }))
    sequences.front().second = 77;
  return sequences;
}

TEST(BlockSparseMmaGpu, RandomBatchesLayoutsAndConfigsMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("blocksparse.mma");
  const Target target = Target::cuda(testing::gpu().device());
  std::mt19937_64 rng(20261207);
  for (int trial = 0; trial < 48; ++trial) {
    const bool causal = rng() % 4 != 0;
    const Batch batch = random_batch(rng, random_prefill_sequences(rng), causal, 20);
    expect_matches_reference(variant, batch, random_config(variant, batch, target, rng));
  }
}

// Every accepted config, for each head dim, causal and not, over a Phi-3 layout of 64-token
// blocks and a random one of 32-token blocks, on lengths that are multiples of no tile.
TEST(BlockSparseMmaGpu, EveryAcceptedConfigMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("blocksparse.mma");
  const Target target = Target::cuda(env.device());
  std::mt19937_64 rng(5);
  std::vector<std::pair<Batch, KernelConfig>> cases;
  for (int head_dim : {64, 128}) {
    for (bool causal : {true, false}) {
      for (int block : {64, 32}) {
        testing::SpecShape shape;
        shape.q_heads = 6;
        shape.kv_heads = 2;  // GQA 3
        shape.head_dim = head_dim;
        shape.dtype = causal ? DType::bf16 : DType::fp16;
        shape.seed = uint64_t(head_dim) * 4 + causal * 2 + (block == 32);
        WorkloadSpec spec =
            testing::make_spec(shape, {{0, 300}, {45, 1}, {3, 129}, {70, 217}}, "bs-every");
        spec.mask.block_sparse = phi3_layout(block, 2, 3);
        Batch batch = generate_batch(spec);
        batch.causal = causal;
        if (block == 32) randomise_layout(batch, rng, 0.4);
        for (const KernelConfig& config : [&] {
               std::vector<KernelConfig> out;
               const auto space = variant.space(batch, target);
               for (int64_t m : space[0].values)
                 for (int64_t n : space[1].values)
                   for (int64_t w : space[2].values)
                     for (int64_t s : space[3].values)
                       out.push_back(
                           KernelConfig{{"tile_m", m}, {"tile_n", n}, {"warps", w}, {"stages", s}});
               return out;
             }()) {
          if (variant.supports(batch, config, target)) cases.push_back({batch, config});
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
  for (const auto& [batch, config] : cases) expect_matches_reference(variant, batch, config);
}

// Decode: random contexts (0 to 3000, so the query's block row is anywhere), GQA up to 16,
// random layouts and configs; both variants (mma runs a decode batch too, one row per tile).
TEST(BlockSparseDecodeGpu, RandomBatchesLayoutsAndConfigsMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& decode = *registry.find("blocksparse.decode");
  const Variant& mma = *registry.find("blocksparse.mma");
  const Target target = Target::cuda(testing::gpu().device());
  std::mt19937_64 rng(20261209);
  for (int trial = 0; trial < 48; ++trial) {
    std::vector<std::pair<int64_t, int64_t>> sequences;
    const int seqs = std::uniform_int_distribution<int>(1, 8)(rng);
    for (int s = 0; s < seqs; ++s) {
      sequences.push_back({rng() % 4 == 0 ? int64_t(rng() % 70) : int64_t(rng() % 3000), 1});
    }
    const Batch batch = random_batch(rng, sequences, rng() % 4 != 0, 16);
    expect_matches_reference(decode, batch, random_config(decode, batch, target, rng));
    if (trial % 4 == 0) expect_matches_reference(mma, batch, mma.default_config(batch, target));
  }
}

TEST(BlockSparseDecodeGpu, EveryAcceptedConfigMatchesTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("blocksparse.decode");
  const Target target = Target::cuda(testing::gpu().device());
  for (int head_dim : {64, 128}) {
    testing::SpecShape shape;
    shape.q_heads = 16;
    shape.kv_heads = 2;  // GQA 8
    shape.head_dim = head_dim;
    shape.dtype = head_dim == 64 ? DType::fp16 : DType::bf16;
    shape.seed = uint64_t(head_dim);
    WorkloadSpec spec = testing::make_decode_spec(shape, {0, 63, 64, 700, 2049, 130});
    spec.mask.block_sparse = phi3_layout(128, 3, 4, 2);
    const Batch batch = generate_batch(spec);
    const auto space = variant.space(batch, target);
    int ran = 0;
    for (int64_t n : space[0].values) {
      for (int64_t w : space[1].values) {
        for (int64_t s : space[2].values) {
          const KernelConfig config{{"tile_n", n}, {"warps", w}, {"stages", s}};
          if (!variant.supports(batch, config, target)) continue;
          expect_matches_reference(variant, batch, config);
          ++ran;
        }
      }
    }
    EXPECT_GT(ran, 10);
  }
}

// The path `attn-bench run` takes (Evaluator: poison, verify against the CPU reference, time) on
// the benchmark's shape scaled down: 32 q heads, 8 kv heads, head dim 128, bf16, blocks of 64,
// local 16, vertical stride 8; prefill (mma) and decode (both variants), default configs.
TEST(BlockSparseGpu, EvaluatorVerifiesAndTimesTheDefaultConfigs) {
  ATTN_REQUIRE_GPU();
  auto& env = testing::gpu();
  const Registry registry = make_registry();
  Evaluator::Options options;
  options.policy = screen_policy();
  options.policy.min_samples = options.policy.max_samples = 3;
  options.policy.warmup_min = 0;
  options.policy.warmup_max_seconds = 0;
  options.policy.timer = TimerMode::events;
  testing::SpecShape shape;
  shape.q_heads = 32;
  shape.kv_heads = 8;
  shape.head_dim = 128;
  WorkloadSpec prefill = testing::make_spec(shape, {{0, 2048}, {0, 2048}}, "bs-eval");
  prefill.mask.block_sparse = phi3_layout(64, 16, 8);
  WorkloadSpec decode = testing::make_decode_spec(shape, {4095, 1000, 333, 8191});
  decode.mask.block_sparse = phi3_layout(64, 16, 8);
  for (const WorkloadSpec& spec : {prefill, decode}) {
    const Batch batch = generate_batch(spec);
    auto evaluator = Evaluator::on_cuda(batch, env.discovery.api, env.device(), *env.jit, options);
    for (const char* name : {"blocksparse.mma", "blocksparse.decode"}) {
      const Variant& variant = *registry.find(name);
      const KernelConfig config = variant.default_config(batch, evaluator->target());
      if (!variant.supports(batch, config, evaluator->target())) continue;  // decode on prefill
      const Measurement m = evaluator->evaluate(variant, config);
      EXPECT_EQ(m.disposition, Disposition::passed)
          << name << " " << describe(batch, config) << ": " << m.reason;
      EXPECT_EQ(m.verification.nonfinite, 0);
      EXPECT_GT(m.flops, 0);
    }
  }
}

// Large: one 8192-token prompt with seed 003's layout (128 query tiles per head, rows with up to
// 16 local + 15 vertical blocks) and a 1000-token chunk after a 3000-token context.
TEST(BlockSparseMmaGpu, LargeBatchesMatchTheReference) {
  ATTN_REQUIRE_GPU();
  const Registry registry = make_registry();
  const Variant& variant = *registry.find("blocksparse.mma");
  const Target target = Target::cuda(testing::gpu().device());
  testing::SpecShape shape;
  shape.q_heads = 8;
  shape.kv_heads = 2;
  shape.head_dim = 128;
  WorkloadSpec spec = testing::make_spec(shape, {{0, 8192}, {3000, 1000}}, "bs-large");
  spec.mask.block_sparse = phi3_layout(64, 16, 8);
  const Batch batch = generate_batch(spec);
  expect_matches_reference(variant, batch, variant.default_config(batch, target));
}

}  // namespace
}  // namespace attn
