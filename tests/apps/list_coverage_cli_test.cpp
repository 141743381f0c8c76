// `attn-bench list --coverage`: the table per family with its legend, the JSON form with every
// cell, and the filter.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

using testing::Cli;
using testing::CliResult;
using testing::kUsage;

class ListCoverage : public Cli {};

TEST_F(ListCoverage, PrintsATablePerFamilyWithItsLegend) {
  const CliResult r = run({"list", "--coverage"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("paged_decode: a sm80_simt  b sm80_mma  c sm90_tma  d cpu_reference"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("kv dtype  layout  pages  64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("192x128"), std::string::npos) << r.out;
  for (const char* family : {"prefix_prefill: ", "flash_fwd: ", "blocksparse: "}) {
    EXPECT_NE(r.out.find(family), std::string::npos) << family;
  }
}

TEST_F(ListCoverage, JsonHoldsEveryCellOfTheFamiliesTheFilterKeeps) {
  CliResult r = run({"list", "--coverage", "--json", "flash_fwd"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json coverage = nlohmann::json::parse(r.out);
  ASSERT_EQ(coverage["families"].size(), 1u);
  const nlohmann::json& family = coverage["families"][0];
  EXPECT_EQ(family["name"], "flash_fwd");
  EXPECT_EQ(family["cells"].size(), 7u * 3u * 2u * 3u);
  for (const auto& cell : family["cells"]) {
    const bool gpu = !cell["gpu_variants"].empty();
    const std::string dim = cell["head_dim"];
    // flash_fwd's kernels, sm80_mma and sm90_wgmma alike, take every head dim of the matrix
    // (192x128 too) and every KV dtype.
    EXPECT_TRUE(gpu) << cell.dump();
    const nlohmann::json expected =
        nlohmann::json::array({"flash_fwd.sm80_mma", "flash_fwd.sm90_wgmma"});
    EXPECT_EQ(cell["gpu_variants"], expected) << dim << " " << cell.dump();
  }
  EXPECT_EQ(run({"list", "--coverage", "zzz-matches-nothing"}).exit_code, kUsage);
}

// blocksparse's fp8 row: the two sm80 variants at every head dim they take and sm90_wgmma at
// every one (alone at 256); the CPU reference in every cell.
TEST_F(ListCoverage, BlocksparseFp8CellsHaveAGpuVariantAtEveryHeadDim) {
  const CliResult r = run({"list", "--coverage", "--json", "blocksparse"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json coverage = nlohmann::json::parse(r.out);
  ASSERT_EQ(coverage["families"].size(), 1u);
  int fp8_cells = 0;
  for (const auto& cell : coverage["families"][0]["cells"]) {
    if (cell["kv_dtype"] != "fp8_e4m3") continue;
    ++fp8_cells;
    const nlohmann::json expected =
        cell["head_dim"] == "256" ? nlohmann::json::array({"blocksparse.sm90_wgmma"})
        : cell["head_dim"] == "192x128"
            ? nlohmann::json::array({"blocksparse.sm80_mma", "blocksparse.sm90_wgmma"})
            : nlohmann::json::array({"blocksparse.sm80_mma", "blocksparse.sm90_wgmma",
                                     "blocksparse.sm80_mma_decode"});
    EXPECT_EQ(cell["gpu_variants"], expected) << cell.dump();
    EXPECT_EQ(cell["cpu_variants"], nlohmann::json::array({"blocksparse.cpu_reference"}))
        << cell.dump();
  }
  EXPECT_EQ(fp8_cells, 7 * 2 * 3);
}

// mla_decode (latent attention) is not on the matrix' axes: named as left out of it, and tabled
// on its own axes (latent shape, cache dtype, page size), where mla_decode.sm80_mma takes an fp8
// latent cache and the two Hopper variants 16-bit caches over pages of whole 8-token boxes.
TEST_F(ListCoverage, TablesTheLatentAttentionFamilyOnItsOwnAxes) {
  const CliResult text = run({"list", "--coverage"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.find("mla_decode: a "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("mla_decode (multi-head latent attention"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("a sm80_mma  b sm90_wgmma  c sm90_wgmma_key_rows  d cpu_reference"),
            std::string::npos)
      << text.out;
  // The fp8 rows: sm80_mma and the CPU reference at 512+64 (the first column).
  EXPECT_NE(text.out.find("fp8_e4m3  1      ad"), std::string::npos) << text.out;
  // 16-bit caches over 16-token pages: all four.
  EXPECT_NE(text.out.find("bf16      16     abcd"), std::string::npos) << text.out;

  const CliResult json = run({"list", "--coverage", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json coverage = nlohmann::json::parse(json.out);
  for (const auto& family : coverage["families"]) EXPECT_NE(family["name"], "mla_decode");
  EXPECT_EQ(coverage["left_out"], nlohmann::json::array({"mla_decode"}));
  ASSERT_EQ(coverage["latent"]["families"].size(), 1u);
  const nlohmann::json& mla = coverage["latent"]["families"][0];
  EXPECT_EQ(mla["name"], "mla_decode");
  int fp8_gpu = 0;
  for (const auto& cell : mla["cells"]) {
    if (cell["kv_dtype"] != "fp8_e4m3") continue;
    for (const auto& v : cell["gpu_variants"]) fp8_gpu += v == "mla_decode.sm80_mma";
  }
  EXPECT_EQ(fp8_gpu, 12) << mla.dump();

  const CliResult only = run({"list", "--coverage", "mla_decode"});
  EXPECT_EQ(only.exit_code, 0) << only.err;
  EXPECT_NE(only.out.find("mla_decode (multi-head latent attention"), std::string::npos)
      << only.out;
  EXPECT_EQ(only.out.find("paged_decode"), std::string::npos) << only.out;
}

}  // namespace
}  // namespace attn
