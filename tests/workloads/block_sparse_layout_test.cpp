#include "workloads/block_sparse_layout.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "base/sha256.hpp"
#include "mask_test_batch.hpp"
#include "workloads/workload_spec.hpp"

namespace attn {
namespace {

using test::write_temp_file;

// The rule as the issue and seed 003's model family state it, written out for the test: block
// (i, j) of head h is kept when j <= i and (i - j < local or (j + h * step + 1) % stride == 0).
bool rule_keeps(const BlockSparseSpec& p, int64_t h, int64_t i, int64_t j) {
  const int64_t rule_head = p.homo_head ? 0 : h;
  if (j > i) return false;
  return i - j < p.local_blocks ||
         (j + rule_head * p.head_sliding_step + 1) % p.vertical_stride == 0;
}

BlockSparseSpec params(int block_size, int local, int stride, int step = 1, bool homo = false) {
  BlockSparseSpec p;
  p.block_size = block_size;
  p.local_blocks = local;
  p.vertical_stride = stride;
  p.head_sliding_step = step;
  p.homo_head = homo;
  return p;
}

BlockSparseLayout from_params(const BlockSparseSpec& p, int heads, int64_t max_kv_len) {
  return block_sparse_layout_from_parameters(p, heads, max_kv_len, "test");
}

// CSR well-formedness: offsets from 0, non-decreasing, rows sorted, lower-triangular, padding -1.
void expect_well_formed(const BlockSparseLayout& layout) {
  ASSERT_EQ(layout.crow.size(), size_t(layout.num_heads) * size_t(layout.num_blocks + 1));
  ASSERT_EQ(layout.col.size(), size_t(layout.num_heads) * size_t(layout.max_nnz));
  int64_t longest = 0;
  for (int h = 0; h < layout.num_heads; ++h) {
    const int32_t* crow = layout.crow.data() + size_t(h) * size_t(layout.num_blocks + 1);
    const int32_t* col = layout.col.data() + size_t(h) * size_t(layout.max_nnz);
    EXPECT_EQ(crow[0], 0);
    for (int i = 0; i < layout.num_blocks; ++i) {
      ASSERT_LE(crow[i], crow[i + 1]);
      for (int32_t n = crow[i]; n < crow[i + 1]; ++n) {
        EXPECT_LE(col[n], i);
        EXPECT_GE(col[n], 0);
        if (n > crow[i]) {
          EXPECT_LT(col[n - 1], col[n]);
        }
      }
    }
    const int32_t nnz = crow[layout.num_blocks];
    EXPECT_EQ(layout.kept_blocks(h), nnz);
    for (int32_t n = nnz; n < layout.max_nnz; ++n) EXPECT_EQ(col[n], -1);
    longest = std::max<int64_t>(longest, nnz);
  }
  EXPECT_EQ(longest, layout.max_nnz);
}

TEST(BlockSparseLayout, ParametersFollowTheRuleForEveryHeadAndBlock) {
  struct Case {
    BlockSparseSpec p;
    int heads;
    int64_t max_kv_len;
  };
  const std::vector<Case> cases = {
      {params(64, 16, 8), 8, 8192},       // seed 003's peer configuration, shortened
      {params(16, 2, 3), 4, 16 * 9 + 5},  // a last block of 5 tokens
      {params(4, 1, 2, 3), 6, 37},        // head sliding step 3
      {params(8, 0, 5, 2), 5, 100},       // no local band: verticals only
      {params(8, 4, 1), 3, 64},           // stride 1 keeps everything (dense causal)
      {params(7, 3, 4, 0), 4, 50},        // step 0: all heads alike without homo_head
      {params(5, 2, 3, -1), 4, 41},       // a negative step
      {params(32, 100, 8), 2, 300},       // a local band wider than the sequence
      {params(16, 2, 4, 1, true), 8, 1},  // a single token
      {params(16, 2, 4, 1, true), 8, 0},  // no tokens at all
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("block " + std::to_string(c.p.block_size) + " local " +
                 std::to_string(c.p.local_blocks) + " stride " +
                 std::to_string(c.p.vertical_stride) + " step " +
                 std::to_string(c.p.head_sliding_step) + " len " + std::to_string(c.max_kv_len));
    const BlockSparseLayout layout = from_params(c.p, c.heads, c.max_kv_len);
    const int64_t nb = (c.max_kv_len + c.p.block_size - 1) / c.p.block_size;
    ASSERT_EQ(layout.num_blocks, nb);
    ASSERT_EQ(layout.num_heads, c.heads);
    EXPECT_EQ(layout.block_size, c.p.block_size);
    expect_well_formed(layout);
    int64_t kept_total = 0;
    for (int h = 0; h < c.heads; ++h) {
      int64_t kept = 0;
      for (int64_t i = 0; i < nb; ++i) {
        for (int64_t j = 0; j < nb; ++j) {
          ASSERT_EQ(layout.block_kept(h, int(i), int(j)), rule_keeps(c.p, h, i, j))
              << "head " << h << " block (" << i << ", " << j << ")";
          kept += rule_keeps(c.p, h, i, j);
        }
      }
      EXPECT_EQ(layout.kept_blocks(h), kept);
      kept_total += kept;
    }
    if (nb > 0) {
      EXPECT_DOUBLE_EQ(layout.density(),
                       double(kept_total) / (double(c.heads) * nb * (nb + 1) / 2));
    } else {
      EXPECT_EQ(layout.density(), 0.0);
    }
  }
}

// Worked by hand from the rule for local 2, stride 3, step 1 over 5 blocks: head 0's verticals
// are the columns with (j + 1) % 3 == 0 (j = 2), head 1's those with (j + 2) % 3 == 0 (j = 1, 4).
TEST(BlockSparseLayout, SmallLayoutMatchesTheHandWorkedPattern) {
  const BlockSparseLayout layout = from_params(params(16, 2, 3, 1), 2, 80);
  const std::vector<std::vector<std::string>> expected = {
      {"10000", "11000", "01100", "00110", "00111"},
      {"10000", "11000", "01100", "01110", "01011"},
  };
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 5; ++i) {
      std::string row;
      for (int j = 0; j < 5; ++j) row += layout.block_kept(h, i, j) ? '1' : '0';
      EXPECT_EQ(row, expected[size_t(h)][size_t(i)]) << "head " << h << " row " << i;
    }
  }
  // The CSR arrays themselves, as seed 003's kernel reads them (col padded with -1).
  EXPECT_EQ(layout.crow, (std::vector<int32_t>{0, 1, 3, 5, 7, 10, 0, 1, 3, 5, 8, 11}));
  EXPECT_EQ(layout.max_nnz, 11);
  EXPECT_EQ(layout.col, (std::vector<int32_t>{0, 0, 1, 1, 2, 2, 3, 2, 3, 4, -1,  //
                                              0, 0, 1, 1, 2, 1, 2, 3, 1, 3, 4}));
}

TEST(BlockSparseLayout, HomoHeadGivesEveryHeadHeadZerosPattern) {
  const BlockSparseLayout homo = from_params(params(8, 1, 4, 1, true), 6, 200);
  const BlockSparseLayout per_head = from_params(params(8, 1, 4, 1, false), 6, 200);
  for (int h = 0; h < 6; ++h) {
    for (int i = 0; i < homo.num_blocks; ++i) {
      for (int j = 0; j <= i; ++j) {
        ASSERT_EQ(homo.block_kept(h, i, j), per_head.block_kept(0, i, j));
      }
    }
  }
  // Without homo_head the heads do differ: the sliding step moves the verticals.
  EXPECT_NE(per_head.block_kept(0, 10, 3), per_head.block_kept(1, 10, 3));
}

TEST(BlockSparseLayout, HeadSlidingStepShiftsTheVerticalColumns) {
  // With a band of 1 only the diagonal and the verticals remain: head h keeps the columns j
  // below the diagonal with j = -(h * step + 1) mod stride.
  const int stride = 8;
  const int step = 3;
  const BlockSparseLayout layout = from_params(params(4, 1, stride, step), 5, 4 * 40);
  for (int h = 0; h < 5; ++h) {
    const int expected_first = ((-(h * step + 1)) % stride + stride) % stride;
    std::vector<int> verticals;
    for (int j = 0; j < 39; ++j) {
      if (layout.block_kept(h, 39, j)) verticals.push_back(j);
    }
    ASSERT_FALSE(verticals.empty());
    EXPECT_EQ(verticals.front(), expected_first) << "head " << h;
    for (size_t n = 1; n < verticals.size(); ++n)
      EXPECT_EQ(verticals[n] - verticals[n - 1], stride);
  }
}

TEST(BlockSparseLayout, OutOfRangeParametersNameTheField) {
  for (const auto& [p, field] : std::vector<std::pair<BlockSparseSpec, std::string>>{
           {params(0, 1, 1), "/mask/block_sparse/block_size"},
           {params(16, -1, 1), "/mask/block_sparse/local_blocks"},
           {params(16, 1, 0), "/mask/block_sparse/vertical_stride"}}) {
    try {
      from_params(p, 4, 100);
      ADD_FAILURE() << field << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

TEST(BlockSparseLayout, TooLargeALayoutIsRefusedBeforeAllocating) {
  // 2^31 tokens in blocks of 1 with everything kept: far over the entry limit.
  try {
    from_params(params(1, 1, 1), 64, int64_t(1) << 31);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("over the limit"), std::string::npos) << e.what();
  }
}

TEST(BlockSparseLayout, BuildUsesTheSpecsHeadCountAndParameters) {
  WorkloadSpec spec;
  spec.name = "bs";
  spec.model.num_q_heads = 8;
  spec.model.num_kv_heads = 2;
  spec.mask.block_sparse = params(16, 2, 4, 2);
  const BlockSparseLayout layout = build_block_sparse_layout(spec, 1000);
  EXPECT_EQ(layout.num_heads, 8);
  EXPECT_EQ(layout.num_blocks, 63);
  for (int h = 0; h < 8; ++h) {
    for (int i = 0; i < 63; ++i) {
      for (int j = 0; j < 63; ++j) {
        ASSERT_EQ(layout.block_kept(h, i, j), rule_keeps(*spec.mask.block_sparse, h, i, j));
      }
    }
  }
}

// ---- layout files ----

constexpr const char* kCsrLayout = R"({
  "block_size": 4, "num_heads": 2, "num_blocks": 3,
  "crow": [[0, 1, 2, 4], [0, 1, 3, 5]],
  "col": [[0, 1, 0, 2], [0, 0, 1, 1, 2]]
})";

constexpr const char* kDenseLayout = R"({
  "block_size": 4, "num_heads": 2, "num_blocks": 3,
  "dense": [["100", "010", "101"], ["100", "110", "011"]]
})";

TEST(BlockSparseLayoutFile, CsrAndDenseSpellingsGiveTheSameLayout) {
  const BlockSparseLayout csr =
      read_block_sparse_layout_file(write_temp_file("csr.json", kCsrLayout), "", 2, 12);
  const BlockSparseLayout dense =
      read_block_sparse_layout_file(write_temp_file("dense.json", kDenseLayout), "", 2, 12);
  for (const BlockSparseLayout* layout : {&csr, &dense}) {
    expect_well_formed(*layout);
    EXPECT_EQ(layout->block_size, 4);
    EXPECT_EQ(layout->num_blocks, 3);
    EXPECT_EQ(layout->num_heads, 2);
  }
  EXPECT_EQ(csr.crow, dense.crow);
  EXPECT_EQ(csr.col, dense.col);
  EXPECT_EQ(csr.max_nnz, 5);
  EXPECT_TRUE(csr.block_kept(0, 2, 0));
  EXPECT_FALSE(csr.block_kept(0, 2, 1));
  EXPECT_TRUE(csr.block_kept(1, 2, 1));
  EXPECT_FALSE(csr.block_kept(1, 2, 0));
  EXPECT_EQ(csr.col[3], 2);
  EXPECT_EQ(csr.col[4], -1);  // head 0 has 4 kept blocks, padded to head 1's 5
}

TEST(BlockSparseLayoutFile, OneHeadServesEveryQHead) {
  const std::string path =
      write_temp_file("one_head.json", R"({"block_size": 8, "num_heads": 1, "num_blocks": 2,
                           "dense": [["10", "01"]]})");
  const BlockSparseLayout layout = read_block_sparse_layout_file(path, "", 6, 16);
  EXPECT_EQ(layout.num_heads, 6);
  for (int h = 0; h < 6; ++h) {
    EXPECT_TRUE(layout.block_kept(h, 1, 1));
    EXPECT_FALSE(layout.block_kept(h, 1, 0));
  }
}

TEST(BlockSparseLayoutFile, BuildReadsTheResolvedPathAndChecksTheHash) {
  const std::string path = write_temp_file("hashed.json", kCsrLayout);
  WorkloadSpec spec;
  spec.name = "file";
  spec.model.num_q_heads = 2;
  spec.model.num_kv_heads = 1;
  BlockSparseSpec p;
  p.file = "hashed.json";
  p.resolved_path = path;
  p.sha256 = sha256_hex(kCsrLayout);
  spec.mask.block_sparse = p;
  EXPECT_EQ(build_block_sparse_layout(spec, 12).kept_blocks(1), 5);

  spec.mask.block_sparse->sha256 = sha256_hex("something else");
  try {
    build_block_sparse_layout(spec, 12);
    FAIL() << "a changed file was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), path);
    EXPECT_NE(std::string(e.what()).find("changed since the workload was read"), std::string::npos);
  }
}

struct MalformedLayout {
  const char* name;
  const char* text;
  std::vector<std::string> expected;  // substrings of one problem
};

class BlockSparseLayoutFileErrors : public ::testing::TestWithParam<MalformedLayout> {};

TEST_P(BlockSparseLayoutFileErrors, NameTheFileAndTheProblem) {
  const MalformedLayout& c = GetParam();
  const std::string path = write_temp_file(std::string(c.name) + ".json", c.text);
  try {
    read_block_sparse_layout_file(path, "", 2, 12);
    FAIL() << c.name << " was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), path);
    EXPECT_EQ(e.code(), ExitCode::invalid_input);
    bool found = false;
    for (const std::string& problem : e.problems()) {
      bool all = true;
      for (const std::string& part : c.expected)
        all = all && problem.find(part) != std::string::npos;
      found = found || all;
    }
    EXPECT_TRUE(found) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BlockSparseLayoutFileErrors,
    ::testing::Values(
        MalformedLayout{"not_json", R"({"block_size": 4,)", {"line 1"}},
        MalformedLayout{"not_object", "[1, 2]", {"expected an object"}},
        MalformedLayout{"duplicate_key",
                        R"({"block_size": 4, "block_size": 4, "num_heads": 1, "num_blocks": 3,
                            "dense": [["100", "110", "011"]]})",
                        {"/block_size", "duplicate key"}},
        MalformedLayout{"missing_block_size",
                        R"({"num_heads": 1, "num_blocks": 3, "dense": [["100","110","011"]]})",
                        {"/block_size", "missing"}},
        MalformedLayout{"bad_block_size",
                        R"({"block_size": 0, "num_heads": 1, "num_blocks": 3,
                            "dense": [["100","110","011"]]})",
                        {"/block_size", "expected an integer in [1"}},
        MalformedLayout{"unknown_key",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3, "extra": 1,
                            "dense": [["100","110","011"]]})",
                        {"/extra", "unknown key"}},
        MalformedLayout{"both_spellings",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 1,
                            "crow": [[0, 1]], "col": [[0]], "dense": [["1"]]})",
                        {"not both"}},
        MalformedLayout{"no_layout",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3})",
                        {"missing the layout"}},
        MalformedLayout{"crow_without_col",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 1, "crow": [[0, 1]]})",
                        {"/col", "missing"}},
        MalformedLayout{"wrong_head_count",
                        R"({"block_size": 4, "num_heads": 3, "num_blocks": 3,
                            "dense": [["100","110","011"],["100","110","011"],["100","110","011"]]})",
                        {"/num_heads", "the model has 2 q heads"}},
        MalformedLayout{"too_short",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 2,
                            "dense": [["10","11"]]})",
                        {"/num_blocks", "cover 8 tokens", "longest sequence has 12"}},
        MalformedLayout{"heads_array_too_short",
                        R"({"block_size": 4, "num_heads": 2, "num_blocks": 3,
                            "dense": [["100","110","011"]]})",
                        {"/dense", "expected 2 heads"}},
        MalformedLayout{"crow_wrong_length",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3,
                            "crow": [[0, 1, 2]], "col": [[0, 1]]})",
                        {"/crow/0", "expected 4 offsets"}},
        MalformedLayout{"crow_not_from_zero",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3,
                            "crow": [[1, 1, 2, 3]], "col": [[0, 1]]})",
                        {"/crow/0/0", "first offset must be 0"}},
        MalformedLayout{"crow_decreasing",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3,
                            "crow": [[0, 2, 1, 3]], "col": [[0, 1, 2]]})",
                        {"/crow/0/2", "must not decrease"}},
        MalformedLayout{"col_count_mismatch",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3,
                            "crow": [[0, 1, 2, 4]], "col": [[0, 1, 2]]})",
                        {"/col/0", "has 3 columns", "ends at 4"}},
        MalformedLayout{"col_out_of_range",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3,
                            "crow": [[0, 1, 2, 3]], "col": [[0, 1, 7]]})",
                        {"/col/0/2", "[0, 3)", "integer 7"}},
        MalformedLayout{"col_not_integer",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3,
                            "crow": [[0, 1, 2, 3]], "col": [[0, "1", 2]]})",
                        {"/col/0/1", "got string"}},
        MalformedLayout{"col_unsorted",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3,
                            "crow": [[0, 1, 2, 4]], "col": [[0, 1, 2, 0]]})",
                        {"/col/0/3", "strictly increasing"}},
        MalformedLayout{"col_duplicate",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3,
                            "crow": [[0, 1, 3, 4]], "col": [[0, 1, 1, 2]]})",
                        {"/col/0/2", "strictly increasing"}},
        MalformedLayout{"col_upper_triangle",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3,
                            "crow": [[0, 2, 3, 4]], "col": [[0, 1, 1, 2]]})",
                        {"/col/0/1", "right of the diagonal of row 0"}},
        MalformedLayout{"dense_upper_triangle",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3,
                            "dense": [["100", "111", "011"]]})",
                        {"/dense/0/1", "block column 2", "right of the diagonal"}},
        MalformedLayout{"dense_bad_character",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3,
                            "dense": [["100", "1x0", "011"]]})",
                        {"/dense/0/1", "character 1", "not '0' or '1'"}},
        MalformedLayout{"dense_wrong_width",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3,
                            "dense": [["100", "11", "011"]]})",
                        {"/dense/0/1", "has 2 characters, expected 3"}},
        MalformedLayout{"dense_row_not_string",
                        R"({"block_size": 4, "num_heads": 1, "num_blocks": 3,
                            "dense": [["100", [1, 1, 0], "011"]]})",
                        {"/dense/0/1", "got array"}}),
    [](const ::testing::TestParamInfo<MalformedLayout>& info) { return info.param.name; });

TEST(BlockSparseLayoutFile, AMissingFileNamesThePath) {
  const std::string path = ::testing::TempDir() + "/attn_mask_tests/no_such_layout.json";
  try {
    read_block_sparse_layout_file(path, "", 2, 12);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), path);
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos);
  }
}

TEST(BlockSparseLayoutFile, ManyProblemsAreCappedWithACount) {
  std::string rows;
  for (int i = 0; i < 80; ++i)
    rows += std::string(i ? "," : "") + "\"" + std::string(80, 'x') + "\"";
  const std::string path = write_temp_file(
      "many.json",
      R"({"block_size": 1, "num_heads": 1, "num_blocks": 80, "dense": [[)" + rows + "]]}");
  try {
    read_block_sparse_layout_file(path, "", 1, 80);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.problems().size(), kMaxListedProblems);
    EXPECT_EQ(e.problem_count(), 80u);
    EXPECT_NE(std::string(e.what()).find("\n  ... and 30 more problems"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace attn
