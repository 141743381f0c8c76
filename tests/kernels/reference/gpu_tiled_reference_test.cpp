// The tiled GPU reference on a machine without a GPU: its launch plan (every query token in one
// tile, tiles of one sequence each), the split of a row's dims among its threads and the staged
// tile's size for every head dim the schema allows, and NVRTC compiles of its kernel for sm_80 and
// sm_90a without register spills. Its output is held to the naive GPU reference's and the CPU
// reference's in gpu_tiled_reference_gpu_test.cpp.
#include "kernels/reference/gpu_tiled_reference.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "base/errors.hpp"
#include "kernels/reference/gpu_tiled_reference_params.hpp"
#include "tests/kernels/reference/reference_feature_batches.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

// Every query token of every sequence lies in exactly one tile of its own sequence, tiles start at
// multiples of kGpuTiledRows in token order, and the grid is (tiles, q heads) of kGpuTiledThreads.
void expect_plan_covers(const Batch& batch, const std::string& what) {
  const GpuTiledPlan plan = gpu_tiled_reference_plan(batch);
  ASSERT_EQ(plan.tile_seq.size(), plan.tile_first_query.size()) << what;
  std::map<std::pair<int, int64_t>, int> covered;  // (sequence, query) -> tiles holding it
  size_t expected_tiles = 0;
  for (int s = 0; s < batch.num_seqs; ++s) {
    expected_tiles += size_t((batch.query_lens[size_t(s)] + kGpuTiledRows - 1) / kGpuTiledRows);
  }
  EXPECT_EQ(plan.tile_seq.size(), expected_tiles) << what;
  for (size_t t = 0; t < plan.tile_seq.size(); ++t) {
    const int seq = plan.tile_seq[t];
    const int64_t first = plan.tile_first_query[t];
    ASSERT_GE(seq, 0) << what;
    ASSERT_LT(seq, batch.num_seqs) << what;
    EXPECT_EQ(first % kGpuTiledRows, 0) << what << " tile " << t;
    ASSERT_LT(first, batch.query_lens[size_t(seq)]) << what << " tile " << t;
    if (t > 0) {
      EXPECT_TRUE(std::make_pair(plan.tile_seq[t - 1], plan.tile_first_query[t - 1]) <
                  std::make_pair(seq, static_cast<long long>(first)))
          << what << " tile " << t << " out of order";
    }
    for (int64_t q = first; q < std::min<int64_t>(first + kGpuTiledRows, batch.query_lens[seq]);
         ++q)
      ++covered[std::make_pair(seq, q)];
  }
  for (int s = 0; s < batch.num_seqs; ++s) {
    for (int64_t q = 0; q < batch.query_lens[size_t(s)]; ++q) {
      EXPECT_EQ(covered[std::make_pair(s, q)], 1) << what << ": sequence " << s << " query " << q;
    }
  }
  EXPECT_EQ(plan.shape.grid_x, unsigned(plan.tile_seq.size())) << what;
  EXPECT_EQ(plan.shape.grid_y, unsigned(batch.spec.model.num_q_heads)) << what;
  EXPECT_EQ(plan.shape.grid_z, 1u) << what;
  EXPECT_EQ(plan.shape.block_x, unsigned(kGpuTiledThreads)) << what;
  EXPECT_EQ(plan.shape.block_y * plan.shape.block_z, 1u) << what;
  EXPECT_EQ(plan.shape.shared_bytes, 0u) << what << ": the tiles are static shared memory";
}

TEST(GpuTiledReferencePlan, EveryQueryTokenIsInOneTileOfItsSequence) {
  for (const testing::FeatureBatch& b : testing::reference_feature_batches(1)) {
    expect_plan_covers(b.batch, b.what);
  }
  testing::SpecShape shape;
  shape.q_heads = 5;
  shape.kv_heads = 1;
  // Lengths at, one under and one over the tile's rows, a decode row and a long prompt.
  const Batch batch = generate_batch(testing::make_spec(
      shape, {{0, 1}, {7, 31}, {0, 32}, {100, 33}, {0, 64}, {3, 65}, {0, 1000}}));
  expect_plan_covers(batch, "lengths around a tile");
  // 1, 31 and 32 rows: one tile; 33 and 64: two; 65: three; 1000: 32.
  std::vector<int> tiles = {0, 1, 2, 3, 3, 4, 4, 5, 5, 5};
  tiles.insert(tiles.end(), 32, 6);
  EXPECT_EQ(gpu_tiled_reference_plan(batch).tile_seq, tiles);
}

// A sequence without query tokens (the plan reads only the lengths, so the batch is written by
// hand: the schema asks for query_len >= 1) gets no tile, and neither do its neighbours' rows.
TEST(GpuTiledReferencePlan, SequencesWithoutQueriesGetNoTile) {
  Batch batch;
  batch.spec.model.num_q_heads = 3;
  batch.spec.model.num_kv_heads = 1;
  batch.spec.model.head_dim = 128;
  batch.num_seqs = 4;
  batch.query_lens = {0, 40, 0, 1};
  const GpuTiledPlan plan = gpu_tiled_reference_plan(batch);
  EXPECT_EQ(plan.tile_seq, (std::vector<int>{1, 1, 3}));
  EXPECT_EQ(plan.tile_first_query, (std::vector<long long>{0, kGpuTiledRows, 0}));
  batch.query_lens = {0, 0, 0, 0};
  EXPECT_TRUE(gpu_tiled_reference_plan(batch).tile_seq.empty());
}

TEST(GpuTiledReferencePlan, RefusesAHeadDimAboveTheKernels) {
  Batch batch;
  batch.spec.model.num_q_heads = 1;
  batch.spec.model.head_dim = kGpuTiledMaxHeadDim + 8;
  EXPECT_THROW(gpu_tiled_reference_plan(batch), Error);
  batch.spec.model.head_dim = kGpuTiledMaxHeadDim;
  EXPECT_NO_THROW(gpu_tiled_reference_plan(batch));
}

// For every head dim the schema allows: each dim is held by exactly one (thread, slot) of a row,
// and a staged tile holds at least 16 keys and fits its shared-memory array.
TEST(GpuTiledReferenceRules, EveryDimHasOneOwnerAndTheTileFits) {
  EXPECT_EQ(kGpuTiledMaxHeadDim, 256);
  EXPECT_EQ(kGpuTiledThreads % 32, 0);
  EXPECT_EQ(32 % kGpuTiledThreadsPerRow, 0) << "a row's threads must lie in one warp";
  EXPECT_LE(2 * kGpuTiledTileFloats * int(sizeof(float)), 48 * 1024) << "static shared memory";
  for (int head_dim : {64, 80, 96, 128, 192, 256}) {
    std::vector<int> owners(size_t(head_dim), 0);
    for (int part = 0; part < kGpuTiledThreadsPerRow; ++part) {
      for (int i = 0; i < kGpuTiledDimsPerThread; ++i) {
        const int d = gpu_tiled_dim(part, i);
        ASSERT_GE(d, 0);
        if (d < head_dim) ++owners[size_t(d)];
      }
    }
    for (int d = 0; d < head_dim; ++d) EXPECT_EQ(owners[size_t(d)], 1) << head_dim << " dim " << d;
    const int keys = gpu_tiled_keys_per_tile(head_dim, head_dim);
    EXPECT_GE(keys, 16) << head_dim;
    EXPECT_LE(keys * head_dim, kGpuTiledTileFloats) << head_dim;
    EXPECT_GT((keys + 1) * head_dim, kGpuTiledTileFloats) << head_dim << ": as many as fit";
    // A narrower V stages as many keys as K's rows allow (K is the wider tile).
    for (int v_head_dim : {64, 128}) {
      if (v_head_dim < head_dim) EXPECT_EQ(gpu_tiled_keys_per_tile(head_dim, v_head_dim), keys);
    }
  }
}

class GpuTiledReferenceJit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("attn-gpu-tiled-jit-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// ptxas's report (-v) of every program: q and the accumulator (2 x kGpuTiledDimsPerThread floats
// per thread) stay in registers.
TEST_F(GpuTiledReferenceJit, CompilesForSm80AndSm90aInEveryDtypePairWithoutSpills) {
  JitCompiler jit(JitOptions{dir_.string()});
  for (const char* arch : {"sm_80", "sm_90a"}) {
    for (DType dtype : {DType::bf16, DType::fp16}) {
      for (bool fp8 : {false, true}) {
        testing::SpecShape shape;
        shape.dtype = dtype;
        WorkloadSpec spec = testing::make_decode_spec(shape, {5});
        if (fp8) spec.model.kv_dtype = DType::fp8_e4m3;
        const Batch batch = generate_batch(spec);
        JitProgram program = gpu_tiled_reference_program(batch, arch);
        ASSERT_EQ(program.kernels.size(), 1u);
        EXPECT_NE(program.name.find(to_string(batch.kv_dtype)), std::string::npos);
        program.options.push_back("--ptxas-options=-v");
        const CompiledProgram compiled = jit.compile(program);
        ASSERT_GT(compiled.cubin.size(), 4u);
        EXPECT_EQ(std::string(compiled.cubin.begin(), compiled.cubin.begin() + 4),
                  "\x7f"
                  "ELF");
        ASSERT_TRUE(compiled.lowered_names.count(program.kernels.front())) << program.name;
        EXPECT_NE(compiled.log.find("0 bytes spill stores"), std::string::npos)
            << program.name << " " << arch << ":\n"
            << compiled.log;
      }
    }
  }
}

}  // namespace
}  // namespace attn
