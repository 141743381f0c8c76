// The store's read-only listings that compare and report use (results/store_reads.cpp).
#include <gtest/gtest.h>

#include "results/store.hpp"
#include "tests/results/comparison_fixture.hpp"

namespace attn {
namespace {

TEST(StoreQueries, DevicesAndRunsInIdOrder) {
  Store store(":memory:");
  EXPECT_TRUE(store.devices().empty());
  EXPECT_TRUE(store.runs().empty());
  const testing::ComparisonFixture f = testing::fill_comparison_fixture(store);

  const std::vector<StoredDevice> devices = store.devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].id, 1);
  EXPECT_EQ(devices[0].fingerprint, f.h100_fingerprint);
  EXPECT_EQ(devices[0].record.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(devices[0].record.fingerprint(), devices[0].fingerprint);
  EXPECT_EQ(devices[1].fingerprint, f.h200_fingerprint);
  EXPECT_EQ(devices[1].record.memory_bytes, testing::sample_h200().memory_bytes);
  EXPECT_TRUE(is_utc_timestamp(devices[1].first_seen_at));
  EXPECT_TRUE(is_utc_timestamp(devices[1].last_seen_at));

  const std::vector<StoredRun> runs = store.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, f.h100_run);
  EXPECT_EQ(runs[1].id, f.h200_run);
  EXPECT_EQ(runs[0].record.host, "h100-node");
  EXPECT_EQ(runs[1].status, "failed_cases");
  EXPECT_TRUE(runs[1].finished_at.has_value());
}

}  // namespace
}  // namespace attn
