// The shard map of a planned sweep: written and read back unchanged, malformed files refused with
// the line, and `--shard i/n --shard-map` taking exactly the configs the map gives shard i, with
// configs it does not list going by the hash rule, so that the shards still cover the space once.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "base/errors.hpp"
#include "tuner/shard.hpp"
#include "tuner/shard_map.hpp"

namespace attn {
namespace {

ShardMap three_shard_map() {
  ShardMap map(3);
  map.add({"w1", "v", "a=1", 2, 1.5});
  map.add({"w1", "v", "a=2", 0, 0.25});
  map.add({"w1", "u", "a=1", 1, 3});
  map.add({"w2", "v", "a=1", 1, 1e-6});
  return map;
}

TEST(ShardMap, TextReadsBackAsTheSameMap) {
  const ShardMap map = three_shard_map();
  const std::string text = map.text("a plan\nof two lines");
  EXPECT_EQ(text.rfind("# a plan\n# of two lines\n", 0), 0u) << text;
  const ShardMap back = ShardMap::parse(text, "map.tsv");
  EXPECT_EQ(back.shards(), 3u);
  ASSERT_EQ(back.entries().size(), map.entries().size());
  for (size_t i = 0; i < map.entries().size(); ++i) {
    const ShardMapEntry &a = map.entries()[i], &b = back.entries()[i];
    EXPECT_EQ(std::tie(a.workload_hash, a.variant, a.config_key, a.shard),
              std::tie(b.workload_hash, b.variant, b.config_key, b.shard));
    EXPECT_NEAR(a.estimated_seconds, b.estimated_seconds, 1e-5 * a.estimated_seconds);
  }
  EXPECT_EQ(back.text("a plan\nof two lines"), text);
  EXPECT_EQ(back.shard_of("w1", "u", "a=1"), std::optional<uint64_t>(1));
  EXPECT_EQ(back.shard_of("w1", "u", "a=2"), std::nullopt);
  EXPECT_TRUE(back.lists_workload("w2"));
  EXPECT_FALSE(back.lists_workload("w3"));
  // A workload planned without a config (its spaces were empty) is listed all the same.
  ShardMap with_empty = three_shard_map();
  with_empty.add_workload("w0");
  const std::string empty_text = with_empty.text("");
  EXPECT_NE(empty_text.find("\nworkload\tw1\nworkload\tw2\nworkload\tw0\n"), std::string::npos)
      << empty_text;
  EXPECT_TRUE(ShardMap::parse(empty_text, "map.tsv").lists_workload("w0"));
  EXPECT_EQ(ShardMap::parse(empty_text, "map.tsv").text(""), empty_text);
  const std::vector<double> seconds = back.shard_seconds();
  ASSERT_EQ(seconds.size(), 3u);
  EXPECT_NEAR(seconds[0], 0.25, 1e-9);
  EXPECT_NEAR(seconds[1], 3 + 1e-6, 1e-9);
  EXPECT_NEAR(seconds[2], 1.5, 1e-9);
}

TEST(ShardMap, MalformedFilesAreRefusedWithTheirLine) {
  const auto problem = [](const std::string& text) -> std::string {
    try {
      ShardMap::parse(text, "map.tsv");
    } catch (const InputError& e) {
      EXPECT_EQ(e.source(), "map.tsv");
      return e.problems().empty() ? std::string() : e.problems().front();
    }
    return "accepted";
  };
  EXPECT_NE(problem("").find("not a shard map"), std::string::npos);
  EXPECT_NE(problem("# only a comment\n").find("not a shard map"), std::string::npos);
  EXPECT_NE(problem("w\tv\ta=1\t0\t1\n").find("line 1: expected 'shards"), std::string::npos);
  EXPECT_NE(problem("shards\t0\n").find("at least 1"), std::string::npos);
  EXPECT_NE(problem("shards\t2\nw\tv\ta=1\t0\n").find("line 2: expected 5"), std::string::npos);
  EXPECT_NE(problem("shards\t2\nw\tv\ta=1\t2\t1\n").find("line 2: shard '2'"), std::string::npos);
  EXPECT_NE(problem("shards\t2\nw\tv\ta=1\t-1\t1\n").find("shard '-1'"), std::string::npos);
  EXPECT_NE(problem("shards\t2\nw\tv\ta=1\t1\tsoon\n").find("estimated seconds 'soon'"),
            std::string::npos);
  EXPECT_NE(problem("shards\t2\nw\tv\ta=1\t1\t-3\n").find("estimated seconds"), std::string::npos);
  EXPECT_NE(problem("shards\t2\n\tv\ta=1\t1\t1\n").find("must not be empty"), std::string::npos);
  const std::string twice = problem("shards\t2\nw\tv\ta=1\t1\t1\nw\tv\ta=1\t0\t1\n");
  EXPECT_EQ(twice.rfind("line 3: ", 0), 0u) << twice;
  EXPECT_NE(twice.find("twice"), std::string::npos) << twice;
  EXPECT_NE(problem("shards\t2\nworkload\t\n").find("line 2: the workload hash"),
            std::string::npos);
  EXPECT_EQ(problem("shards\t2\n# a comment\n\nw\tv\ta=1\t1\t1\n"), "accepted");
  EXPECT_THROW(ShardMap(0), UsageError);
  ShardMap map(2);
  EXPECT_THROW(map.add({"w", "v", "a=1", 2, 1}), UsageError);
}

TEST(ShardMap, AShardTakesWhatTheMapGivesItAndTheRestByHash) {
  auto map = std::make_shared<const ShardMap>(three_shard_map());
  std::vector<Shard> shards;
  for (uint64_t i = 0; i < 3; ++i) {
    Shard s = parse_shard(std::to_string(i) + "/3");
    s.map = map;
    shards.push_back(s);
  }
  for (const ShardMapEntry& e : map->entries()) {
    for (const Shard& s : shards) {
      EXPECT_EQ(s.owns(e.workload_hash, e.variant, e.config_key), s.index == e.shard)
          << e.variant << " " << e.config_key << " in " << s.label();
      EXPECT_TRUE(s.mapped(e.workload_hash, e.variant, e.config_key));
    }
  }
  // Not in the map (another workload, another config): the hash rule, exactly one owner.
  for (const auto& [w, v, k] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"w3", "v", "a=1"}, {"w1", "v", "a=9"}, {"w2", "u", "a=1"}}) {
    int owners = 0;
    for (const Shard& s : shards) {
      EXPECT_FALSE(s.mapped(w, v, k));
      EXPECT_EQ(s.owns(w, v, k), hash_shard(v, k, 3) == s.index);
      owners += s.owns(w, v, k);
    }
    EXPECT_EQ(owners, 1) << w << " " << v << " " << k;
  }
  // The same config of another workload may go to another shard than the map gives w1's.
  EXPECT_EQ(shards[2].owns("w1", "v", "a=1"), true);
  EXPECT_EQ(shards[1].owns("w2", "v", "a=1"), true);
}

TEST(ShardMap, UseShardMapChecksTheNumberOfShards) {
  const std::string path = ::testing::TempDir() + "/attn-shard-map-test.tsv";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    const std::string text = three_shard_map().text("test");
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  Shard ok = parse_shard("1/3");
  use_shard_map(ok, path);
  ASSERT_TRUE(ok.map);
  EXPECT_TRUE(ok.owns("w1", "u", "a=1"));
  Shard other = parse_shard("1/4");
  try {
    use_shard_map(other, path);
    ADD_FAILURE() << "a map of 3 shards was taken for --shard 1/4";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("into 3 shards, but --shard 1/4"), std::string::npos)
        << e.what();
  }
  Shard missing = parse_shard("0/3");
  EXPECT_THROW(use_shard_map(missing, path + ".absent"), InputError);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace attn
