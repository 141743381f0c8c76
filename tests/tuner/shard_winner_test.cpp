// --shard i/n covers every space exactly once; winners are tested against their challengers and
// ties are kept.
#include <gtest/gtest.h>

#include <map>

#include "base/errors.hpp"
#include "tests/tuner/tuner_test_spaces.hpp"
#include "tuner/shard.hpp"
#include "tuner/winner.hpp"

namespace attn {
namespace {

TEST(Shard, ShardsCoverTheSpaceExactlyOnce) {
  const auto configs = testing::sm80_simt_like_configs();
  for (uint64_t n : {1, 2, 3, 7}) {
    std::map<std::string, int> owners;
    std::vector<size_t> sizes(n, 0);
    for (uint64_t i = 0; i < n; ++i) {
      const Shard shard = parse_shard(std::to_string(i) + "/" + std::to_string(n));
      for (const KernelConfig& c : configs) {
        if (shard.owns("w", "paged_decode.sm80_simt", c.key())) {
          ++owners[c.key()];
          ++sizes[i];
        }
      }
    }
    ASSERT_EQ(owners.size(), configs.size()) << n << " shards";
    for (const auto& [key, count] : owners) EXPECT_EQ(count, 1) << key;
    // Balanced within a few percent of the mean.
    for (size_t s : sizes)
      EXPECT_NEAR(double(s), double(configs.size()) / double(n), 0.1 * configs.size() / n + 5);
  }
  // The same config on another variant may land elsewhere, but the rule is the same everywhere.
  EXPECT_EQ(parse_shard("1/3").owns("w", "v", "a=1"), fnv1a64("v|a=1") % 3 == 1);
}

TEST(Shard, ParseRejectsNonsense) {
  for (const char* bad : {"", "1", "2/2", "-1/2", "a/b", "0/0", "1/2/3", " 0/1"}) {
    EXPECT_THROW(parse_shard(bad), UsageError) << bad;
  }
  EXPECT_EQ(parse_shard("3/8").label(), "3/8");
}

Candidate candidate(const std::string& key, double center, double spread) {
  Candidate c;
  c.variant = "v";
  c.config_key = key;
  for (int i = 0; i < 30; ++i) c.samples.push_back(center + spread * ((i * 7) % 11 - 5) / 5.0);
  c.median_us = center;
  return c;
}

TEST(Winner, TiesAreKeptAndTheClosestBeatenIsNamed) {
  auto choice = choose_winner({candidate("slow", 120, 1), candidate("best", 100, 1),
                               candidate("tie", 100.2, 1), candidate("near", 104, 0.5)});
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->winner.config_key, "best");
  ASSERT_EQ(choice->tied.size(), 1u);
  EXPECT_EQ(choice->tied[0].config_key, "tie");
  ASSERT_TRUE(choice->closest_beaten);
  EXPECT_EQ(choice->closest_beaten->config_key, "near");
  EXPECT_NEAR(choice->beaten_difference, 0.04, 0.01);
  EXPECT_FALSE(choose_winner({}));
  const auto alone = choose_winner({candidate("only", 10, 0.1)});
  ASSERT_TRUE(alone);
  EXPECT_TRUE(alone->tied.empty());
  EXPECT_FALSE(alone->closest_beaten);
}

}  // namespace
}  // namespace attn
