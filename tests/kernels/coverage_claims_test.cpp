// What docs/coverage.md claims each family runs on the GPU is what the variants accept: every
// claimed cell of the coverage matrix has a CUDA variant, and every cell a CUDA variant takes is
// claimed. The claims are the table after the line "<!-- coverage-claims -->": a row per family
// and set of cells, each column a comma-separated list of the axis' values, the cells of a row
// every combination of them.
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/coverage.hpp"

namespace attn {
namespace {

const char* const kCoverageDoc = ATTN_SOURCE_DIR "/docs/coverage.md";

using ClaimCell = std::tuple<std::string, std::string, std::string, std::string, std::string>;

std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" `");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" `") - first + 1);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);) parts.push_back(trimmed(part));
  return parts;
}

// The claimed cells: (family, head dim, KV dtype, layout, page size).
std::set<ClaimCell> claimed_cells() {
  std::ifstream doc(kCoverageDoc);
  EXPECT_TRUE(doc.good()) << "cannot read " << kCoverageDoc;
  std::set<ClaimCell> cells;
  bool in_claims = false;
  int rows = 0;
  for (std::string line; std::getline(doc, line);) {
    if (line.find("<!-- coverage-claims -->") != std::string::npos) {
      in_claims = true;
      continue;
    }
    if (!in_claims) continue;
    if (line.empty() || line[0] != '|') {
      if (rows > 0) break;  // the table ended
      continue;
    }
    std::vector<std::string> columns = split(line.substr(1, line.rfind('|') - 1), '|');
    if (columns.size() != 5) {
      ADD_FAILURE() << "a claims row needs 5 columns: " << line;
      continue;
    }
    ++rows;
    if (columns[0] == "family" || columns[0].rfind("---", 0) == 0) continue;  // the header
    for (const std::string& dim : split(columns[1], ','))
      for (const std::string& kv : split(columns[2], ','))
        for (const std::string& layout : split(columns[3], ','))
          for (const std::string& page : split(columns[4], ','))
            cells.insert({columns[0], dim, kv, layout, page});
  }
  EXPECT_GT(cells.size(), 0u) << "no claims found in " << kCoverageDoc;
  return cells;
}

std::set<ClaimCell> gpu_cells(const std::vector<CoverageCell>& matrix) {
  std::set<ClaimCell> cells;
  for (const CoverageCell& c : matrix) {
    if (!c.gpu_variants.empty()) {
      cells.insert({to_string(c.family), c.head_dim, c.kv_dtype, c.layout, c.page_size});
    }
  }
  return cells;
}

std::string describe(const ClaimCell& c) {
  return std::get<0>(c) + " head dim " + std::get<1>(c) + ", " + std::get<2>(c) + ", " +
         std::get<3>(c) + ", page size " + std::get<4>(c);
}

TEST(CoverageClaims, EveryClaimedCellHasAGpuVariant) {
  const std::set<ClaimCell> gpu = gpu_cells(coverage_matrix(make_registry()));
  for (const ClaimCell& cell : claimed_cells()) {
    EXPECT_TRUE(gpu.count(cell)) << "docs/coverage.md claims " << describe(cell)
                                 << ", which no CUDA variant accepts";
  }
}

TEST(CoverageClaims, EveryCellAGpuVariantTakesIsClaimed) {
  const std::set<ClaimCell> claimed = claimed_cells();
  for (const ClaimCell& cell : gpu_cells(coverage_matrix(make_registry()))) {
    EXPECT_TRUE(claimed.count(cell))
        << "a CUDA variant accepts " << describe(cell) << ", which docs/coverage.md does not claim";
  }
}

}  // namespace
}  // namespace attn
