#include "results/records.hpp"

#include <gtest/gtest.h>

#include "tests/results/sample_records.hpp"

namespace attn {
namespace {

DeviceRecord h100() {
  return testing::sample_h100();
}

TEST(RecordsDevice, FingerprintIsStable) {
  const std::string fp = h100().fingerprint();
  EXPECT_EQ(fp.size(), 64u);  // SHA-256, hex
  EXPECT_EQ(fp, h100().fingerprint());
  // Pinned (checked with Python hashlib over the length-prefixed fields): a change here splits
  // every stored device into a new row. Change it only with a schema migration that rewrites
  // devices.fingerprint.
  EXPECT_EQ(fp, "e8591865434d9461887dcbce741c5b98052387f4450249a27bb928a661328fdf");
}

TEST(RecordsDevice, FingerprintIgnoresClocksButNotIdentity) {
  const std::string fp = h100().fingerprint();
  DeviceRecord d = h100();
  d.sm_clock_khz = 1500000;
  d.memory_clock_khz = 1;
  d.l2_bytes = 1;
  d.memory_bus_bits = 1;
  EXPECT_EQ(d.fingerprint(), fp);

  auto differs = [&](void (*change)(DeviceRecord&)) {
    DeviceRecord changed = h100();
    change(changed);
    return changed.fingerprint() != fp;
  };
  EXPECT_TRUE(differs([](DeviceRecord& r) { r.kind = "cpu"; }));
  EXPECT_TRUE(differs([](DeviceRecord& r) { r.name = "NVIDIA H200"; }));
  EXPECT_TRUE(differs([](DeviceRecord& r) { r.uuid = "GPU-other"; }));
  EXPECT_TRUE(differs([](DeviceRecord& r) { r.cc_major = 8; }));
  EXPECT_TRUE(differs([](DeviceRecord& r) { r.cc_minor = 9; }));
  EXPECT_TRUE(differs([](DeviceRecord& r) { r.sm_count = 114; }));
  EXPECT_TRUE(differs([](DeviceRecord& r) { r.memory_bytes += 1; }));
  EXPECT_TRUE(differs([](DeviceRecord& r) { r.driver_version = "580.159.04"; }));
  EXPECT_TRUE(differs([](DeviceRecord& r) { r.cuda_driver_version = "13.1"; }));
  EXPECT_TRUE(differs([](DeviceRecord& r) { r.cuda_version = "12.8"; }));
  EXPECT_TRUE(differs([](DeviceRecord& r) { r.nvrtc_version = "12.8"; }));
}

// The driver's version (NVML) is part of the identity: the same board under two drivers is two
// devices, even when both drivers support the same CUDA version. A record whose driver is unknown
// (no NVML, a row of a database before schema v4) keeps the fingerprint pinned above.
TEST(RecordsDevice, FingerprintChangesWithTheDriver) {
  DeviceRecord older = h100(), newer = h100();
  older.driver_version = "580.95.05";
  newer.driver_version = "580.159.04";
  ASSERT_EQ(older.cuda_driver_version, newer.cuda_driver_version);
  EXPECT_NE(older.fingerprint(), newer.fingerprint());
  EXPECT_NE(older.fingerprint(), h100().fingerprint());
  EXPECT_NE(newer.fingerprint(), h100().fingerprint());
  EXPECT_EQ(newer.fingerprint(), DeviceRecord(newer).fingerprint());
  EXPECT_EQ(h100().driver_version, "");
  EXPECT_EQ(h100().fingerprint(),
            "e8591865434d9461887dcbce741c5b98052387f4450249a27bb928a661328fdf");
  // The driver's version cannot pass for another field's.
  DeviceRecord moved = h100();
  moved.nvrtc_version += "580.95.05";
  EXPECT_NE(moved.fingerprint(), older.fingerprint());

  EXPECT_EQ(newer.driver_text(), "580.159.04 (supports CUDA 13.0)");
  EXPECT_EQ(h100().driver_text(), "unknown (supports CUDA 13.0)");
  DeviceRecord cpu;
  cpu.kind = "cpu";
  EXPECT_EQ(cpu.driver_text(), "-");
}

TEST(RecordsDevice, FieldBoundariesMatter) {
  DeviceRecord a = h100(), b = h100();
  a.name = "ab";
  a.uuid = "c";
  b.name = "a";
  b.uuid = "bc";
  EXPECT_NE(a.fingerprint(), b.fingerprint());
  a = h100();
  b = h100();
  a.cc_major = 1;
  a.cc_minor = 23;
  b.cc_major = 12;
  b.cc_minor = 3;
  EXPECT_NE(a.fingerprint(), b.fingerprint());
}

TEST(RecordsTimestamp, NowIsIso8601Utc) {
  const std::string now = utc_timestamp_now();
  EXPECT_EQ(now.size(), 24u) << now;  // 2025-01-31T12:34:56.789Z
  EXPECT_TRUE(is_utc_timestamp(now)) << now;
  EXPECT_GE(now, "2024-01-01T00:00:00.000Z");
}

TEST(RecordsTimestamp, RecognisesTheForm) {
  EXPECT_TRUE(is_utc_timestamp("2025-01-31T12:34:56Z"));
  EXPECT_TRUE(is_utc_timestamp("2025-01-31T12:34:56.7Z"));
  EXPECT_TRUE(is_utc_timestamp("2025-01-31T12:34:56.123456789Z"));
  EXPECT_FALSE(is_utc_timestamp("2025-01-31T12:34:56.1234567890Z"));
  EXPECT_FALSE(is_utc_timestamp("2025-01-31T12:34:56"));        // no zone
  EXPECT_FALSE(is_utc_timestamp("2025-01-31T12:34:56+01:00"));  // not UTC
  EXPECT_FALSE(is_utc_timestamp("2025-01-31 12:34:56Z"));
  EXPECT_FALSE(is_utc_timestamp("2025-01-31T12:34:56.Z"));
  EXPECT_FALSE(is_utc_timestamp("2025-01-31T12:34:56ZZ"));
  EXPECT_FALSE(is_utc_timestamp(""));
}

}  // namespace
}  // namespace attn
