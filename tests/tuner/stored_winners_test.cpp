// Winners chosen over a database's stored results, measuring nothing: the latest passed confirm
// result of each config competes, boards of one model are pooled (a cluster's shards ran on
// different GPUs of one model), other models and other workloads are kept apart, and peers are
// left out unless asked for.
#include <gtest/gtest.h>

#include "measure/timing_policy.hpp"
#include "results/measurement.hpp"
#include "results/store.hpp"
#include "tuner/stored_winners.hpp"

namespace attn {
namespace {

DeviceRecord board(const std::string& uuid, const std::string& driver = "580.1") {
  DeviceRecord d;
  d.kind = "gpu";
  d.name = "NVIDIA H200";
  d.uuid = uuid;
  d.cc_major = 9;
  d.sm_count = 132;
  d.memory_bytes = int64_t(141) << 30;
  d.driver_version = driver;
  d.cuda_driver_version = "13.0";
  d.cuda_version = "13.0";
  d.nvrtc_version = "13.0";
  return d;
}

class StoredWinnersTest : public ::testing::Test {
 protected:
  int64_t device(const DeviceRecord& d) { return store_.upsert_device(d); }
  int64_t workload(const std::string& hash) {
    return store_.upsert_workload({hash, "w-" + hash, "{}"});
  }
  // A result of `median` microseconds, 30 samples within 0.1% of it.
  void measure(int64_t device_id, int64_t workload_id, const std::string& variant,
               const std::string& key, double median, const std::string& policy = "confirm",
               Disposition disposition = Disposition::passed) {
    Measurement m;
    m.family = "paged_decode";
    m.variant = variant;
    m.config_key = key;
    m.config_json = "{}";
    m.backend = "cuda";
    m.policy = policy;
    m.disposition = disposition;
    for (int i = 0; i < 30; ++i) m.samples_us.push_back(median * (1 + 0.001 * ((i % 5) - 2)));
    m.stats = summarize(m.samples_us);
    store_.add_measurement(run_, device_id, workload_id, m);
  }

  Store store_{":memory:"};
  int64_t run_ = store_.begin_run({"attn-tune tune", "t", "c", "Release", "test", "h", ""});
};

TEST(DeviceModel, BoardsOfOneModelShareAKeyAndOtherDriversDoNot) {
  EXPECT_EQ(device_model_key(board("GPU-a")), device_model_key(board("GPU-b")));
  EXPECT_NE(board("GPU-a").fingerprint(), board("GPU-b").fingerprint());
  EXPECT_NE(device_model_key(board("GPU-a")), device_model_key(board("GPU-a", "590.2")));
  DeviceRecord other = board("GPU-a");
  other.sm_count = 114;
  EXPECT_NE(device_model_key(board("GPU-a")), device_model_key(other));
}

TEST_F(StoredWinnersTest, TheShardsOfBoardsOfOneModelArePooled) {
  const int64_t a = device(board("GPU-a")), b = device(board("GPU-b"));
  const int64_t older = device(board("GPU-c", "570.0"));
  const int64_t w = workload("h1"), other_workload = workload("h2");
  measure(a, w, "paged_decode.x", "t=1", 120);
  measure(a, w, "paged_decode.x", "t=2", 100);
  measure(b, w, "paged_decode.x", "t=3", 90);            // the best, on the other board
  measure(b, w, "paged_decode.x", "t=4", 80, "screen");  // a screen result does not compete
  measure(b, w, "paged_decode.x", "t=5", 70, "confirm", Disposition::incorrect);
  measure(older, w, "paged_decode.x", "t=6", 60);  // another driver: another model
  measure(a, other_workload, "paged_decode.x", "t=7", 50);
  measure(b, w, "paged_decode.y", "t=1", 95);
  measure(a, w, "peer.flashinfer.decode", "", 10);

  const std::vector<StoredWinners> all =
      choose_stored_winners(store_, {"h1"}, {board("GPU-a").fingerprint()}, "");
  ASSERT_EQ(all.size(), 1u);
  const StoredWinners& s = all[0];
  EXPECT_EQ(s.workload_name, "w-h1");
  EXPECT_EQ(s.workload_hash, "h1");
  EXPECT_EQ(s.device_name, "NVIDIA H200");
  EXPECT_EQ(s.devices, 2u);
  ASSERT_EQ(s.variants.size(), 2u) << "peers are left out";
  EXPECT_EQ(s.variants[0].variant, "paged_decode.x");
  EXPECT_EQ(s.variants[0].configs, 3u);
  EXPECT_EQ(s.variants[0].choice.winner.config_key, "t=3");
  ASSERT_TRUE(s.variants[0].choice.closest_beaten);
  EXPECT_EQ(s.variants[0].choice.closest_beaten->config_key, "t=2");
  EXPECT_EQ(s.variants[1].variant, "paged_decode.y");
  ASSERT_TRUE(s.overall);
  EXPECT_EQ(s.overall->winner.variant, "paged_decode.x");
  EXPECT_EQ(s.overall->winner.config_key, "t=3");

  // Naming a board of the other driver chooses for that model alone.
  const auto older_only =
      choose_stored_winners(store_, {"h1"}, {board("GPU-c", "570.0").fingerprint()}, "");
  ASSERT_EQ(older_only.size(), 1u);
  EXPECT_EQ(older_only[0].variants[0].choice.winner.config_key, "t=6");
  // A glob narrows the variants; peers when the glob names them.
  const auto only_y =
      choose_stored_winners(store_, {"h1"}, {board("GPU-b").fingerprint()}, "paged_decode.y");
  ASSERT_EQ(only_y.size(), 1u);
  ASSERT_EQ(only_y[0].variants.size(), 1u);
  EXPECT_FALSE(only_y[0].overall && only_y[0].variants.size() > 1);
  const auto peers =
      choose_stored_winners(store_, {"h1"}, {board("GPU-a").fingerprint()}, "peer.*");
  ASSERT_EQ(peers.size(), 1u);
  EXPECT_EQ(peers[0].variants[0].variant, "peer.flashinfer.decode");
  // A workload or device the store lacks gives nothing.
  EXPECT_TRUE(choose_stored_winners(store_, {"h9"}, {board("GPU-a").fingerprint()}, "").empty());
  EXPECT_TRUE(choose_stored_winners(store_, {"h1"}, {"unknown"}, "").empty());
}

TEST_F(StoredWinnersTest, TheLatestResultOfAConfigCompetes) {
  const int64_t a = device(board("GPU-a")), w = workload("h1");
  measure(a, w, "paged_decode.x", "t=1", 50);
  measure(a, w, "paged_decode.x", "t=2", 100);
  measure(a, w, "paged_decode.x", "t=1", 150);  // measured again, slower
  const auto all = choose_stored_winners(store_, {"h1", "h1"}, {board("GPU-a").fingerprint()}, "");
  ASSERT_EQ(all.size(), 1u) << "a workload named twice is chosen for once";
  EXPECT_EQ(all[0].variants[0].configs, 2u);
  EXPECT_EQ(all[0].variants[0].choice.winner.config_key, "t=2");
}

}  // namespace
}  // namespace attn
