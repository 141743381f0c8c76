#include "workloads/explicit_mask.hpp"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "base/sha256.hpp"
#include "mask_test_batch.hpp"
#include "workloads/batch.hpp"

namespace attn {
namespace {

using test::hand_batch;
using test::SeqShape;
using test::write_temp_file;

ExplicitMaskSpec kind_spec(ExplicitMaskKind kind) {
  ExplicitMaskSpec spec;
  spec.kind = kind;
  return spec;
}

Batch with_mask(Batch batch, const ExplicitMaskSpec& spec) {
  batch.spec.mask.explicit_mask = spec;
  return batch;
}

// Compares the built mask, entry by entry, with a reference predicate written from the rule.
template <typename Reference>
void expect_mask_equals(const Batch& batch, const ExplicitMask& mask, Reference&& reference) {
  ASSERT_EQ(mask.offsets.size(), size_t(batch.num_seqs) + 1);
  int64_t expected_size = 0;
  for (int s = 0; s < batch.num_seqs; ++s) {
    EXPECT_EQ(mask.offsets[size_t(s)], expected_size);
    expected_size += batch.query_lens[size_t(s)] * batch.kv_lens[size_t(s)];
    int64_t grid_count = 0;
    for (int64_t i = 0; i < batch.query_lens[size_t(s)]; ++i) {
      int64_t row_count = 0;
      for (int64_t j = 0; j < batch.kv_lens[size_t(s)]; ++j) {
        const bool expected = reference(s, i, j);
        ASSERT_EQ(mask.visible(batch, s, i, j), expected)
            << "sequence " << s << " query " << i << " key " << j;
        row_count += expected;
      }
      EXPECT_EQ(mask.row_visible_count(batch, s, i), row_count);
      grid_count += row_count;
    }
    EXPECT_EQ(mask.sequence_visible_count(s), grid_count);
  }
  EXPECT_EQ(int64_t(mask.bits.size()), expected_size);
}

// Runs `body` and returns the InputError it throws (failing the test when it throws none).
template <typename Body>
std::string input_error_of(Body&& body, std::string* source = nullptr) {
  try {
    body();
  } catch (const InputError& e) {
    if (source) *source = e.source();
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ExplicitMask, CausalIsTheBottomRightAlignedTriangle) {
  std::mt19937 rng(3);
  for (int round = 0; round < 40; ++round) {
    const Batch batch =
        with_mask(hand_batch(test::random_shapes(rng)), kind_spec(ExplicitMaskKind::causal));
    const ExplicitMask mask = build_explicit_mask(batch);
    expect_mask_equals(batch, mask, [&](int s, int64_t i, int64_t j) {
      return j <= batch.context_lens[size_t(s)] + i;
    });
  }
}

// Ancestry by walking up the parent chain, a different route from the builder's.
bool is_ancestor_or_self(const std::vector<int>& parents, int64_t ancestor, int64_t node) {
  for (int64_t n = node; n >= 0; n = parents[size_t(n)]) {
    if (n == ancestor) return true;
  }
  return false;
}

TEST(ExplicitMask, TreeNodesSeeTheContextThemselvesAndTheirAncestors) {
  // Two trees (roots 0 and 6), depth up to 3, siblings that must not see each other.
  ExplicitMaskSpec spec = kind_spec(ExplicitMaskKind::tree);
  spec.tree_parents = {-1, 0, 0, 1, 1, 2, -1, 6};
  for (const std::vector<SeqShape>& shapes :
       std::vector<std::vector<SeqShape>>{{{0, 8}}, {{5, 8}, {17, 8}, {64, 8}}, {{1, 8}, {0, 8}}}) {
    const Batch batch = with_mask(hand_batch(shapes), spec);
    const ExplicitMask mask = build_explicit_mask(batch);
    expect_mask_equals(batch, mask, [&](int s, int64_t i, int64_t j) {
      const int64_t context = batch.context_lens[size_t(s)];
      return j < context || is_ancestor_or_self(spec.tree_parents, j - context, i);
    });
  }
  // Spot checks of the semantics themselves: siblings 3 and 4 are hidden from each other, node 5
  // sees 2 and 0 but not 1, node 7 sees the second root but nothing of the first tree.
  const Batch batch = with_mask(hand_batch({{2, 8}}), spec);
  const ExplicitMask mask = build_explicit_mask(batch);
  EXPECT_FALSE(mask.visible(batch, 0, 3, 2 + 4));
  EXPECT_TRUE(mask.visible(batch, 0, 5, 2 + 2));
  EXPECT_TRUE(mask.visible(batch, 0, 5, 2 + 0));
  EXPECT_FALSE(mask.visible(batch, 0, 5, 2 + 1));
  EXPECT_TRUE(mask.visible(batch, 0, 7, 2 + 6));
  EXPECT_FALSE(mask.visible(batch, 0, 7, 2 + 0));
  EXPECT_TRUE(mask.visible(batch, 0, 7, 1));
}

TEST(ExplicitMask, TreeMustHaveOneNodePerNewTokenOfEverySequence) {
  ExplicitMaskSpec spec = kind_spec(ExplicitMaskKind::tree);
  spec.tree_parents = {-1, 0, 0};
  const std::string message = input_error_of([&] {
    build_explicit_mask(with_mask(hand_batch({{4, 3}, {4, 1}, {9, 3}}), spec));
  });
  EXPECT_TRUE(contains(message,
                       "/mask/explicit_mask/tree_parents: the tree has 3 nodes, but "
                       "sequence 1 has query_len 1"))
      << message;
}

TEST(ExplicitMask, TreeParentsMustPrecedeTheirChildren) {
  for (const auto& [parents, pointer] : std::vector<std::pair<std::vector<int>, std::string>>{
           {{-1, 1, 0}, "/tree_parents/1: parent 1 does not precede node 1"},
           {{-1, 2, 0}, "/tree_parents/1: parent 2 does not precede node 1"},
           {{0, -1, 0}, "/tree_parents/0: parent 0 does not precede node 0"},
           {{-1, -2, 0}, "/tree_parents/1: parent -2 does not precede node 1"}}) {
    ExplicitMaskSpec spec = kind_spec(ExplicitMaskKind::tree);
    spec.tree_parents = parents;
    std::string source;
    const std::string message = input_error_of(
        [&] {
          build_explicit_mask(with_mask(hand_batch({{4, 3}}), spec));
        },
        &source);
    EXPECT_TRUE(contains(message, pointer)) << message;
    EXPECT_EQ(source, "workload \"mask-test\"");
  }
}

TEST(ExplicitMask, BranchesAreCausalWithinThemselvesAndShareTheContext) {
  for (int branches : {1, 2, 3, 6}) {
    ExplicitMaskSpec spec = kind_spec(ExplicitMaskKind::branches);
    spec.branches = branches;
    const Batch batch = with_mask(hand_batch({{0, 6}, {7, 12}, {31, 18}, {2, 0}}), spec);
    const ExplicitMask mask = build_explicit_mask(batch);
    expect_mask_equals(batch, mask, [&](int s, int64_t i, int64_t j) {
      const int64_t context = batch.context_lens[size_t(s)];
      const int64_t length = batch.query_lens[size_t(s)] / branches;
      if (j < context) return true;
      const int64_t key_token = j - context;
      return key_token / length == i / length && key_token <= i;
    });
  }
}

TEST(ExplicitMask, BranchesMustDivideEveryQueryLength) {
  ExplicitMaskSpec spec = kind_spec(ExplicitMaskKind::branches);
  spec.branches = 4;
  const std::string message = input_error_of([&] {
    build_explicit_mask(with_mask(hand_batch({{3, 8}, {3, 6}}), spec));
  });
  EXPECT_TRUE(contains(message, "4 branches do not divide sequence 1's query_len 6")) << message;
  spec.branches = 0;
  EXPECT_TRUE(contains(input_error_of([&] {
                         build_explicit_mask(with_mask(hand_batch({{3, 8}}), spec));
                       }),
                       "/mask/explicit_mask/branches: must be at least 1"));
}

TEST(ExplicitMask, RandomKeepsTheDiagonalAndHitsTheDensity) {
  ExplicitMaskSpec spec = kind_spec(ExplicitMaskKind::random);
  spec.density = 0.3;
  const Batch batch = with_mask(hand_batch({{100, 200}, {0, 300}, {1000, 1}}), spec);
  const ExplicitMask mask = build_explicit_mask(batch);
  int64_t off_diagonal = 0;
  int64_t visible = 0;
  for (int s = 0; s < batch.num_seqs; ++s) {
    for (int64_t i = 0; i < batch.query_lens[size_t(s)]; ++i) {
      const int64_t diagonal = batch.context_lens[size_t(s)] + i;
      ASSERT_TRUE(mask.visible(batch, s, i, diagonal));
      for (int64_t j = 0; j < batch.kv_lens[size_t(s)]; ++j) {
        if (j == diagonal) continue;
        ++off_diagonal;
        visible += mask.visible(batch, s, i, j);
      }
    }
  }
  // 150k draws: the fraction is within 0.01 of the density far beyond any plausible chance.
  EXPECT_NEAR(double(visible) / double(off_diagonal), 0.3, 0.01);
}

TEST(ExplicitMask, RandomIsAFunctionOfTheSeed) {
  ExplicitMaskSpec spec = kind_spec(ExplicitMaskKind::random);
  spec.density = 0.5;
  const std::vector<SeqShape> shapes = {{10, 20}, {3, 7}};
  const ExplicitMask a = build_explicit_mask(with_mask(hand_batch(shapes, 4, 2, true, 0, 5), spec));
  const ExplicitMask b = build_explicit_mask(with_mask(hand_batch(shapes, 4, 2, true, 0, 5), spec));
  const ExplicitMask c = build_explicit_mask(with_mask(hand_batch(shapes, 4, 2, true, 0, 6), spec));
  EXPECT_EQ(a.bits, b.bits);
  EXPECT_NE(a.bits, c.bits);
}

TEST(ExplicitMask, RandomDensityExtremesAreTheDiagonalAndEverything) {
  const Batch base = hand_batch({{5, 9}, {0, 4}});
  ExplicitMaskSpec spec = kind_spec(ExplicitMaskKind::random);
  spec.density = 0.0;
  const Batch none = with_mask(base, spec);
  expect_mask_equals(none, build_explicit_mask(none), [&](int s, int64_t i, int64_t j) {
    return j == none.context_lens[size_t(s)] + i;
  });
  spec.density = 1.0;
  const Batch all = with_mask(base, spec);
  expect_mask_equals(all, build_explicit_mask(all), [](int, int64_t, int64_t) { return true; });
  spec.density = 1.5;
  EXPECT_TRUE(contains(input_error_of([&] { build_explicit_mask(with_mask(base, spec)); }),
                       "/mask/explicit_mask/density: must be in [0, 1]"));
}

TEST(ExplicitMask, AGridOverTheEntryLimitIsRefusedBeforeAllocating) {
  // 2^16 new tokens over 2^16 + 2^15 keys: 6 * 2^30 entries.
  const Batch batch = with_mask(hand_batch({{int64_t(1) << 15, int64_t(1) << 16}}),
                                kind_spec(ExplicitMaskKind::causal));
  const std::string message = input_error_of([&] { build_explicit_mask(batch); });
  EXPECT_TRUE(contains(message, "/mask/explicit_mask: the batch's explicit mask needs more than"))
      << message;
}

// ---- files ----

ExplicitMaskSpec file_spec(const std::string& path, const std::string& sha256 = "") {
  ExplicitMaskSpec spec = kind_spec(ExplicitMaskKind::file);
  spec.file = "mask.json";
  spec.resolved_path = path;
  spec.sha256 = sha256;
  return spec;
}

TEST(ExplicitMaskFile, OneEntryPerSequence) {
  const std::string text = R"({"sequences": [
    {"rows": ["1100", "1011"]},
    {"rows": ["101"]}
  ]})";
  const std::string path = write_temp_file("per_sequence.json", text);
  const Batch batch = with_mask(hand_batch({{2, 2}, {2, 1}}), file_spec(path, sha256_hex(text)));
  const std::vector<std::vector<std::string>> rows = {{"1100", "1011"}, {"101"}};
  expect_mask_equals(batch, build_explicit_mask(batch), [&](int s, int64_t i, int64_t j) {
    return rows[size_t(s)][size_t(i)][size_t(j)] == '1';
  });
}

TEST(ExplicitMaskFile, OneEntryServesSequencesOfOneShape) {
  const std::string path =
      write_temp_file("shared.json", R"({"sequences": [{"rows": ["110", "011"]}]})");
  const Batch batch = with_mask(hand_batch({{1, 2}, {1, 2}, {1, 2}}), file_spec(path));
  const std::vector<std::string> rows = {"110", "011"};
  expect_mask_equals(batch, build_explicit_mask(batch),
                     [&](int, int64_t i, int64_t j) { return rows[size_t(i)][size_t(j)] == '1'; });
}

TEST(ExplicitMaskFile, AChangedFileIsRefused) {
  const std::string path = write_temp_file("changed.json", R"({"sequences": [{"rows": ["1"]}]})");
  std::string source;
  const std::string message = input_error_of(
      [&] {
        build_explicit_mask(with_mask(hand_batch({{0, 1}}), file_spec(path, sha256_hex("x"))));
      },
      &source);
  EXPECT_EQ(source, path);
  EXPECT_TRUE(contains(message, "changed since the workload was read")) << message;
}

struct MalformedMask {
  const char* name;
  const char* text;
  std::vector<SeqShape> shapes;
  std::string expected;
};

class ExplicitMaskFileErrors : public ::testing::TestWithParam<MalformedMask> {};

TEST_P(ExplicitMaskFileErrors, NameTheFileAndTheProblem) {
  const MalformedMask& c = GetParam();
  const std::string path = write_temp_file(std::string(c.name) + ".json", c.text);
  std::string source;
  const std::string message = input_error_of(
      [&] { build_explicit_mask(with_mask(hand_batch(c.shapes), file_spec(path))); }, &source);
  EXPECT_EQ(source, path);
  EXPECT_TRUE(contains(message, c.expected)) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ExplicitMaskFileErrors,
    ::testing::Values(
        MalformedMask{"syntax", R"({"sequences": [)", {{0, 1}}, "line 1"},
        MalformedMask{"missing_sequences", R"({})", {{0, 1}}, "/sequences: missing"},
        MalformedMask{"unknown_key",
                      R"({"sequences": [{"rows": ["1"]}], "rowz": 1})",
                      {{0, 1}},
                      "/rowz: unknown key"},
        MalformedMask{"entry_count",
                      R"({"sequences": [{"rows": ["1"]}, {"rows": ["1"]}]})",
                      {{0, 1}, {0, 1}, {0, 1}},
                      "/sequences: expected an array of 3 entries (one per sequence) or of 1"},
        MalformedMask{"not_array", R"({"sequences": {"rows": ["1"]}})", {{0, 1}}, "got object"},
        MalformedMask{"entry_unknown_key",
                      R"({"sequences": [{"rows": ["1"], "x": 0}]})",
                      {{0, 1}},
                      "/sequences/0/x: unknown key"},
        MalformedMask{
            "entry_missing_rows", R"({"sequences": [{}]})", {{0, 1}}, "/sequences/0/rows: missing"},
        MalformedMask{"too_few_rows",
                      R"({"sequences": [{"rows": ["10"]}, {"rows": ["111"]}]})",
                      {{0, 2}, {2, 1}},
                      "/sequences/0/rows: has 1 rows, but sequence 0 has "
                      "query_len 2"},
        MalformedMask{"row_too_wide",
                      R"({"sequences": [{"rows": ["10"]}, {"rows": ["1111"]}]})",
                      {{1, 1}, {2, 1}},
                      "/sequences/1/rows/0: has 4 characters, but sequence 1 "
                      "has kv_len 3"},
        MalformedMask{"bad_character",
                      R"({"sequences": [{"rows": ["10", "1y"]}]})",
                      {{0, 2}},
                      "/sequences/0/rows/1: character 1 is not '0' or '1'"},
        MalformedMask{"row_not_string",
                      R"({"sequences": [{"rows": [[1, 0]]}]})",
                      {{1, 1}},
                      "/sequences/0/rows/0: expected a string"},
        MalformedMask{"shared_unequal_shapes",
                      R"({"sequences": [{"rows": ["11"]}]})",
                      {{1, 1}, {2, 1}},
                      "a single entry serves every sequence, but sequence 1"}),
    [](const ::testing::TestParamInfo<MalformedMask>& info) { return info.param.name; });

}  // namespace
}  // namespace attn
