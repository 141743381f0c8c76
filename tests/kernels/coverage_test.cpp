// The coverage matrix (kernels/coverage.hpp) is what the variants declare and accept: its shape,
// cells read off the built-in variants, and a made-up variant that shows up exactly where its
// declaration says.
#include "kernels/coverage.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/reference/cpu_reference_variant.hpp"

namespace attn {
namespace {

const CoverageCell* find_cell(const std::vector<CoverageCell>& matrix, Family family,
                              const std::string& head_dim, const std::string& kv_dtype,
                              const std::string& layout, const std::string& page_size) {
  for (const CoverageCell& c : matrix) {
    if (c.family == family && c.head_dim == head_dim && c.kv_dtype == kv_dtype &&
        c.layout == layout && c.page_size == page_size) {
      return &c;
    }
  }
  return nullptr;
}

bool holds(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(CoverageMatrix, HasOneCellPerFamilyAndAxisValue) {
  const CoverageAxes& axes = coverage_axes();
  EXPECT_EQ(axes.head_dims,
            (std::vector<std::string>{"64", "80", "96", "128", "192", "256", "192x128"}));
  const std::vector<CoverageCell> matrix = coverage_matrix(make_registry());
  EXPECT_EQ(matrix.size(), 4u * axes.head_dims.size() * axes.kv_dtypes.size() *
                               axes.layouts.size() * axes.page_sizes.size());
}

TEST(CoverageMatrix, ReadsTheBuiltInVariants) {
  const std::vector<CoverageCell> matrix = coverage_matrix(make_registry());
  const CoverageCell* decode = find_cell(matrix, Family::paged_decode, "128", "bf16", "NHD", "16");
  ASSERT_NE(decode, nullptr);
  EXPECT_TRUE(holds(decode->gpu_variants, "paged_decode.sm80_simt"));
  EXPECT_TRUE(holds(decode->gpu_variants, "paged_decode.sm90_tma"));
  EXPECT_EQ(decode->cpu_variants, std::vector<std::string>{"paged_decode.cpu_reference"});
  // Both prefix_prefill tensor-core variants read fp8 caches; in flash_fwd only sm80_mma does.
  const CoverageCell* fp8 =
      find_cell(matrix, Family::prefix_prefill, "128", "fp8_e4m3", "HND", "other");
  ASSERT_NE(fp8, nullptr);
  EXPECT_TRUE(holds(fp8->gpu_variants, "prefix_prefill.sm80_mma"));
  EXPECT_TRUE(holds(fp8->gpu_variants, "prefix_prefill.sm90_wgmma"));
  const CoverageCell* dense_fp8 =
      find_cell(matrix, Family::flash_fwd, "128", "fp8_e4m3", "NHD", "16");
  ASSERT_NE(dense_fp8, nullptr);
  EXPECT_TRUE(holds(dense_fp8->gpu_variants, "flash_fwd.sm80_mma"));
  EXPECT_TRUE(holds(dense_fp8->gpu_variants, "flash_fwd.sm90_wgmma"));
  EXPECT_EQ(dense_fp8->cpu_variants, std::vector<std::string>{"flash_fwd.cpu_reference"});
  // blocksparse's sm80 variants and sm90_wgmma (through the conversion pass) read fp8 caches
  // (prefill and decode cells alike); its CPU reference too. Head dim 256: sm90_wgmma alone.
  for (const char* head_dim : {"64", "80", "96", "128", "192"}) {
    const CoverageCell* sparse_fp8 =
        find_cell(matrix, Family::blocksparse, head_dim, "fp8_e4m3", "NHD", "other");
    ASSERT_NE(sparse_fp8, nullptr);
    EXPECT_EQ(sparse_fp8->gpu_variants,
              (std::vector<std::string>{"blocksparse.sm80_mma", "blocksparse.sm90_wgmma",
                                        "blocksparse.sm80_mma_decode"}))
        << head_dim;
    EXPECT_EQ(sparse_fp8->cpu_variants, std::vector<std::string>{"blocksparse.cpu_reference"});
  }
  const CoverageCell* sparse_fp8_256 =
      find_cell(matrix, Family::blocksparse, "256", "fp8_e4m3", "HND", "16");
  ASSERT_NE(sparse_fp8_256, nullptr);
  EXPECT_EQ(sparse_fp8_256->gpu_variants, std::vector<std::string>{"blocksparse.sm90_wgmma"});
  EXPECT_EQ(sparse_fp8_256->cpu_variants, std::vector<std::string>{"blocksparse.cpu_reference"});
  // blocksparse.sm80_mma and sm90_wgmma take 192; head dim 256 only sm90_wgmma.
  const CoverageCell* d192 = find_cell(matrix, Family::blocksparse, "192", "fp16", "HND", "1");
  ASSERT_NE(d192, nullptr);
  EXPECT_TRUE(holds(d192->gpu_variants, "blocksparse.sm80_mma"));
  EXPECT_TRUE(holds(d192->gpu_variants, "blocksparse.sm90_wgmma"));
  const CoverageCell* wide = find_cell(matrix, Family::blocksparse, "256", "bf16", "NHD", "16");
  ASSERT_NE(wide, nullptr);
  EXPECT_EQ(wide->gpu_variants, std::vector<std::string>{"blocksparse.sm90_wgmma"});
  EXPECT_EQ(wide->cpu_variants, std::vector<std::string>{"blocksparse.cpu_reference"});
  // The wgmma variants at head dims 80 and 96 (rows that are not whole TMA boxes).
  for (const char* head_dim : {"80", "96"}) {
    for (Family family : {Family::flash_fwd, Family::prefix_prefill, Family::blocksparse}) {
      const CoverageCell* cell = find_cell(matrix, family, head_dim, "bf16", "HND", "16");
      ASSERT_NE(cell, nullptr);
      EXPECT_TRUE(holds(cell->gpu_variants, to_string(family) + ".sm90_wgmma")) << head_dim;
    }
    // prefix_prefill.sm90_wgmma converts an fp8 cache's codes into those tiles too.
    const CoverageCell* cell =
        find_cell(matrix, Family::prefix_prefill, head_dim, "fp8_e4m3", "NHD", "other");
    ASSERT_NE(cell, nullptr);
    EXPECT_TRUE(holds(cell->gpu_variants, "prefix_prefill.sm90_wgmma")) << head_dim;
  }
}

// A V narrower than Q/K (192x128): on the GPU the tensor-core variants take it (flash_fwd's and
// blocksparse's sm80_mma and sm90_wgmma, with 16-bit and fp8 caches alike;
// prefix_prefill's sm80_mma, sm80_mma_masked and sm90_wgmma, with 16-bit and fp8 caches alike);
// paged_decode leaves it to its CPU reference.
TEST(CoverageMatrix, OnlyTheTensorCoreVariantsTakeANarrowerVOnTheGpu) {
  for (const CoverageCell& c : coverage_matrix(make_registry())) {
    if (c.head_dim != "192x128") continue;
    const std::string what =
        to_string(c.family) + " " + c.kv_dtype + " " + c.layout + " " + c.page_size;
    const bool fp8 = c.kv_dtype == "fp8_e4m3";
    if (c.family == Family::flash_fwd) {
      const std::vector<std::string> expected = {"flash_fwd.sm80_mma", "flash_fwd.sm90_wgmma"};
      EXPECT_EQ(c.gpu_variants, expected) << what;
    } else if (c.family == Family::blocksparse) {
      const std::vector<std::string> expected = {"blocksparse.sm80_mma", "blocksparse.sm90_wgmma"};
      EXPECT_EQ(c.gpu_variants, expected) << what;
    } else if (c.family == Family::prefix_prefill) {
      EXPECT_EQ(c.gpu_variants, (std::vector<std::string>{"prefix_prefill.sm80_mma",
                                                          "prefix_prefill.sm80_mma_masked",
                                                          "prefix_prefill.sm90_wgmma"}))
          << what;
    } else {
      EXPECT_TRUE(c.gpu_variants.empty()) << what;
    }
    EXPECT_EQ(c.cpu_variants, std::vector<std::string>{to_string(c.family) + ".cpu_reference"})
        << what;
  }
}

TEST(CoverageMatrix, AVariantShowsUpExactlyWhereItsDeclarationSays) {
  Registry registry;
  registry.add(make_cpu_reference_variant(
      {Family::flash_fwd, "head dim 96 only",
       reference_features().with(feature::kHeadDim, {96}).with(feature::kKvLayout, {"hnd"}),
       nullptr, [](const Batch& batch) { return minimum_work(batch, KvStorage::paged); }}));
  size_t taken = 0;
  for (const CoverageCell& c : coverage_matrix(registry)) {
    EXPECT_TRUE(c.gpu_variants.empty());
    const bool declared = c.head_dim == "96" && c.layout == "HND";
    EXPECT_EQ(c.cpu_variants.size(), declared ? 1u : 0u)
        << c.head_dim << " " << c.kv_dtype << " " << c.layout << " " << c.page_size;
    taken += c.cpu_variants.size();
  }
  EXPECT_EQ(taken, 3u * 3u);  // 3 KV dtypes x 3 page sizes
}

}  // namespace
}  // namespace attn
