// The latent attention coverage table (kernels/latent_coverage.hpp) on the built-in variants: one
// cell per family the standard matrix leaves out and axis value, mla_decode.sm80_mma takes bf16,
// fp16 and fp8 latent caches at rope widths 64 and 128 and declines others, and the CPU reference
// takes every cell.
#include "kernels/latent_coverage.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "kernels/coverage.hpp"

namespace attn {
namespace {

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(LatentCoverage, HasOneCellPerLatentFamilyAndAxisValue) {
  const std::vector<LatentCoverageCell> cells = latent_coverage_matrix(make_registry());
  const LatentCoverageAxes& axes = latent_coverage_axes();
  EXPECT_EQ(cells.size(), axes.shapes.size() * axes.kv_dtypes.size() * axes.page_sizes.size());
  for (const LatentCoverageCell& c : cells) {
    EXPECT_EQ(c.family, Family::mla_decode);
    EXPECT_FALSE(in_coverage_matrix(c.family));
  }
}

TEST(LatentCoverage, TheMmaVariantTakesFp8AndSixteenBitCachesAtItsRopeWidths) {
  int fp8_cells = 0;
  for (const LatentCoverageCell& c : latent_coverage_matrix(make_registry())) {
    const std::string what = c.shape + " " + c.kv_dtype + " " + c.page_size;
    EXPECT_TRUE(has(c.cpu_variants, "mla_decode.cpu_reference")) << what;
    const bool rope_ok = c.shape.size() > 4 && (c.shape.substr(c.shape.find('+')) == "+64" ||
                                                c.shape.substr(c.shape.find('+')) == "+128");
    EXPECT_EQ(has(c.gpu_variants, "mla_decode.sm80_mma"), rope_ok) << what;
    if (c.kv_dtype == "fp8_e4m3" && has(c.gpu_variants, "mla_decode.sm80_mma")) ++fp8_cells;
  }
  EXPECT_EQ(fp8_cells, 4 * 3);  // four shapes with rope 64 or 128, three page-size classes
}

}  // namespace
}  // namespace attn
