// The naive GPU reference on multi-head latent attention, without a GPU: it takes latent batches
// (the tiled one declines them), a lane holds enough dims for the latent row, the V it reads is the
// first kv_lora_rank elements of the latent row under K's scale, and its latent kernels compile for
// sm_80 and sm_90a without spilling. Its output is held to the CPU reference's in
// gpu_reference_gpu_test.cpp.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "kernels/jit/jit_compiler.hpp"
#include "kernels/reference/gpu_reference.hpp"
#include "kernels/reference/gpu_tiled_reference.hpp"
#include "tests/kernels/mla_decode/latent_batch.hpp"
#include "workloads/batch_data.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

testing::LatentShape latent_shape(int rank, int rope, const std::string& kv_dtype) {
  testing::LatentShape shape;
  shape.kv_lora_rank = rank;
  shape.qk_rope_head_dim = rope;
  shape.kv_dtype = kv_dtype;
  return shape;
}

TEST(GpuReferenceLatentRules, DimsPerLaneCoverTheWiderRow) {
  // Every standard head (up to 256) keeps the one kernel of 8 dims per lane.
  for (int head_dim : {64, 80, 96, 128, 192, 256}) {
    EXPECT_EQ(gpu_reference_dims_per_lane(head_dim, head_dim), kGpuReferenceDimsPerLane);
    EXPECT_EQ(gpu_reference_dims_per_lane(head_dim, 64), kGpuReferenceDimsPerLane);
  }
  // Latent rows: rank + rope for K, rank for V and the output.
  EXPECT_EQ(gpu_reference_dims_per_lane(512 + 64, 512), 20);
  EXPECT_EQ(gpu_reference_dims_per_lane(64 + 16, 64), 8);
  EXPECT_EQ(gpu_reference_dims_per_lane(256 + 16, 256), 12);
  EXPECT_EQ(gpu_reference_dims_per_lane(1024 + 128, 1024), kGpuReferenceMaxDimsPerLane);
  EXPECT_EQ(gpu_reference_dims_per_lane(1024 + 160, 1024), 0);
  // Enough for the row, a multiple of 4, and no pass of 4 dims per lane more than needed.
  for (int width = 1; width <= 32 * kGpuReferenceMaxDimsPerLane; ++width) {
    const int dims = gpu_reference_dims_per_lane(width, width);
    ASSERT_GE(32 * dims, width) << width;
    ASSERT_EQ(dims % 4, 0) << width;
    ASSERT_TRUE(dims == kGpuReferenceDimsPerLane || 32 * (dims - 4) < width) << width;
  }
}

TEST(GpuReferenceLatentRules, TheNaiveReferenceTakesLatentBatchesAndTheTiledOneDeclines) {
  for (const std::string kv_dtype : {"", "fp8_e4m3"}) {
    const Batch batch = testing::latent_batch(latent_shape(512, 64, kv_dtype));
    EXPECT_TRUE(gpu_reference_supports(batch).ok) << gpu_reference_supports(batch).reason;
    EXPECT_FALSE(gpu_tiled_reference_supports(batch).ok);
    EXPECT_EQ(std::string(gpu_reference_name_for(batch)), kGpuReferenceName);
  }
}

// K is the latent row through pool_offset; V is the same row's first kv_lora_rank elements, in the
// same pool, under the same scale.
TEST(GpuReferenceLatentTables, VIsTheFirstRankElementsOfTheLatentRow) {
  for (const std::string kv_dtype : {"", "fp8_e4m3"}) {
    for (int page_size : {1, 8, 100}) {
      testing::LatentShape shape = latent_shape(128, 64, kv_dtype);
      shape.page_size = page_size;
      const Batch batch = testing::latent_batch(shape);
      const GpuReferenceTables t = gpu_reference_tables(batch);
      ASSERT_EQ(t.k_dim_offset.size(), 192u);
      ASSERT_EQ(t.v_dim_offset.size(), 128u);
      EXPECT_EQ(t.v_strides.page_stride, t.k_strides.page_stride);
      EXPECT_EQ(t.v_strides.slot_stride, t.k_strides.slot_stride);
      EXPECT_EQ(t.v_strides.head_stride, t.k_strides.head_stride);
      for (int64_t page = 0; page < batch.num_pages; ++page) {
        for (int slot = 0; slot < batch.page_size; ++slot) {
          for (int d = 0; d < 192; ++d) {
            const int64_t expected = pool_offset(batch, DataStream::key, page, slot, 0, d);
            ASSERT_EQ(
                gpu_reference_pool_row(t.k_strides, page, slot, 0) + t.k_dim_offset[size_t(d)],
                expected);
            if (d < 128) {
              ASSERT_EQ(
                  gpu_reference_pool_row(t.v_strides, page, slot, 0) + t.v_dim_offset[size_t(d)],
                  expected);
            }
          }
        }
      }
      if (!kv_dtype.empty()) {
        ASSERT_EQ(batch.k_scales.size(), 1u);
        EXPECT_EQ(batch.v_scales, batch.k_scales);
      }
    }
  }
}

class GpuReferenceLatentJit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("attn-gpu-reference-latent-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// ptxas's report (-v): q and the accumulator (2 x 20 floats at 512 + 64, 2 x 36 at 1024 + 128)
// stay in registers.
TEST_F(GpuReferenceLatentJit, CompilesForSm80AndSm90aWithoutSpills) {
  JitCompiler jit(JitOptions{dir_.string()});
  for (const char* arch : {"sm_80", "sm_90a"}) {
    for (const std::string dtype : {"bf16", "fp16"}) {
      for (const std::string kv_dtype : {"", "fp8_e4m3"}) {
        for (const auto& [rank, rope] : {std::pair{512, 64}, std::pair{1024, 128}}) {
          nlohmann::json spec = testing::latent_workload_json(latent_shape(rank, rope, kv_dtype));
          spec["model"]["dtype"] = dtype;
          const Batch batch = generate_batch(parse_workload(spec.dump(), "latent"));
          JitProgram program = gpu_reference_program(batch, arch);
          ASSERT_EQ(program.kernels.size(), 1u);
          EXPECT_NE(
              program.kernels.front().find(
                  ", " + std::to_string(rank == 512 ? 20 : kGpuReferenceMaxDimsPerLane) + ">"),
              std::string::npos)
              << program.kernels.front();
          program.options.push_back("--ptxas-options=-v");
          const CompiledProgram compiled = jit.compile(program);
          ASSERT_TRUE(compiled.lowered_names.count(program.kernels.front())) << program.name;
          EXPECT_NE(compiled.log.find("0 bytes spill stores"), std::string::npos)
              << program.name << " " << arch << ":\n"
              << compiled.log;
          EXPECT_NE(compiled.log.find("0 bytes stack frame"), std::string::npos)
              << program.name << " " << arch << ":\n"
              << compiled.log;
        }
      }
    }
  }
}

}  // namespace
}  // namespace attn
