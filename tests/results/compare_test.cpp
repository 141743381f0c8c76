// attn-tune compare's arithmetic on synthetic samples (verdicts, the speed-up interval, Spearman,
// transfer regret, the roofline prediction, device matching), then compare() on a fixture
// database in each mode.
#include "results/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "base/errors.hpp"
#include "results/compare_render.hpp"
#include "results/roofline.hpp"
#include "tests/results/comparison_fixture.hpp"

namespace attn {
namespace {

std::vector<double> normal_samples(size_t n, double mean, double stddev, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, stddev);
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) out.push_back(d(rng));
  return out;
}

ConfigTiming timing(const std::string& variant, const std::string& key, std::vector<double> samples,
                    int64_t device_id = 1, const std::string& family = "paged_decode") {
  ConfigTiming c;
  c.family = family;
  c.variant = variant;
  c.config_key = key;
  c.device_id = device_id;
  c.median_us = median_of(samples);
  c.samples = std::move(samples);
  c.bytes = 2.4e8;
  c.flops = 9.6e8;
  return c;
}

StoredDevice stored_device(int64_t id, const std::string& name) {
  StoredDevice d;
  d.id = id;
  d.record.name = name;
  d.fingerprint = "f" + std::to_string(id);
  return d;
}

WorkloadSides one_config_each(std::vector<double> a, std::vector<double> b) {
  WorkloadSides s;
  s.workload = "w";
  s.a = {timing("paged_decode.sm80_simt", "warps=4", std::move(a), 1)};
  s.b = {timing("paged_decode.sm80_simt", "warps=4", std::move(b), 2)};
  return s;
}

TEST(Compare, ClearlyFasterSlowerAndOverlappingSamples) {
  const CompareSettings settings;
  // B 20% faster, 1% noise, 50 samples a side: the intervals are far apart.
  WorkloadComparison faster = compare_workload(
      one_config_each(normal_samples(50, 100, 1, 1), normal_samples(50, 80, 0.8, 2)), settings);
  EXPECT_EQ(faster.verdict, Verdict::faster);
  EXPECT_NEAR(faster.comparison.relative_difference, -0.2, 0.01);
  EXPECT_FALSE(faster.regression);

  WorkloadComparison slower = compare_workload(
      one_config_each(normal_samples(50, 100, 1, 3), normal_samples(50, 120, 1.2, 4)), settings);
  EXPECT_EQ(slower.verdict, Verdict::slower);
  EXPECT_TRUE(slower.regression);
  EXPECT_LT(slower.speedup.estimate, 1);

  // The same distribution on both sides: the intervals overlap.
  WorkloadComparison same = compare_workload(
      one_config_each(normal_samples(50, 100, 5, 5), normal_samples(50, 100, 5, 6)), settings);
  EXPECT_EQ(same.verdict, Verdict::same);
  EXPECT_FALSE(same.regression);
}

TEST(Compare, RegressionNeedsTheThreshold) {
  CompareSettings settings;
  const WorkloadSides sides =
      one_config_each(normal_samples(50, 100, 1, 7), normal_samples(50, 110, 1, 8));
  settings.threshold = 0.05;
  EXPECT_TRUE(compare_workload(sides, settings).regression);  // 10% > 5%
  settings.threshold = 0.15;
  const WorkloadComparison r = compare_workload(sides, settings);
  EXPECT_EQ(r.verdict, Verdict::slower);  // still measurably slower
  EXPECT_FALSE(r.regression);             // but not by more than 15%
}

// Constant samples give a speed-up interval of one point, exactly A / B: at, inside and beyond the
// default 2% threshold, in both directions.
TEST(Compare, RegressionOnlyWhenTheWholeIntervalIsBeyondTheThreshold) {
  const CompareSettings settings;
  EXPECT_DOUBLE_EQ(settings.threshold, 0.02);
  const auto with_b = [&](double b_us) {
    return compare_workload(
        one_config_each(std::vector<double>(20, 100.0), std::vector<double>(20, b_us)), settings);
  };
  const WorkloadComparison equal = with_b(100);
  EXPECT_EQ(equal.verdict, Verdict::same);  // the interval [1, 1] holds 1
  EXPECT_FALSE(equal.regression);
  for (double b : {100.3, 101.0, 102.0}) {  // inside the threshold, and at it
    const WorkloadComparison r = with_b(b);
    EXPECT_EQ(r.verdict, Verdict::slower) << b;
    EXPECT_FALSE(r.regression) << b << " us is not slower by more than 2%";
  }
  for (double b : {102.5, 103.0, 150.0}) {  // beyond it
    const WorkloadComparison r = with_b(b);
    EXPECT_EQ(r.verdict, Verdict::slower) << b;
    EXPECT_TRUE(r.regression) << b;
  }
  for (double b : {99.7, 98.0, 97.0, 50.0}) {  // B faster, by little or by much: never a regression
    const WorkloadComparison r = with_b(b);
    EXPECT_EQ(r.verdict, Verdict::faster) << b;
    EXPECT_FALSE(r.regression) << b;
  }
}

// A 0.3% slow-down measured precisely (2000 samples of 0.1% noise a side: an interval of about
// +-0.01%) is SLOWER, but no regression at the default threshold; a 5% slow-down whose interval
// reaches below 2% (few, noisy samples) is SLOWER or SAME but no regression either.
TEST(Compare, ASmallOrUncertainSlowdownIsNoRegression) {
  const CompareSettings settings;
  const WorkloadComparison tiny = compare_workload(
      one_config_each(normal_samples(2000, 100, 0.1, 31), normal_samples(2000, 100.3, 0.1, 32)),
      settings);
  EXPECT_EQ(tiny.verdict, Verdict::slower);
  EXPECT_LT(tiny.speedup.interval.high, 1);
  EXPECT_FALSE(tiny.regression);

  const WorkloadComparison uncertain = compare_workload(
      one_config_each(normal_samples(5, 100, 6, 33), normal_samples(5, 105, 6, 34)), settings);
  EXPECT_GT(uncertain.speedup.interval.high * 1.02, 1) << "the interval reaches below 2%";
  EXPECT_FALSE(uncertain.regression);

  // The same rule decides with another threshold, and at 0 every SLOWER is a regression.
  CompareSettings strict = settings;
  strict.threshold = 0;
  EXPECT_TRUE(
      compare_workload(
          one_config_each(std::vector<double>(9, 100.0), std::vector<double>(9, 100.3)), strict)
          .regression);
  EXPECT_FALSE(is_regression(RatioInterval{1, {1, 1}}, 0));
  EXPECT_TRUE(is_regression(RatioInterval{0.9, {0.85, 0.95}}, 0.05));   // 5.3% .. 17.6% slower
  EXPECT_FALSE(is_regression(RatioInterval{0.9, {0.85, 0.97}}, 0.05));  // from 3.1% slower
  EXPECT_EQ(speedup_verdict(RatioInterval{1.1, {1.01, 1.2}}), Verdict::faster);
  EXPECT_EQ(speedup_verdict(RatioInterval{1.1, {0.99, 1.2}}), Verdict::same);
  EXPECT_EQ(speedup_verdict(RatioInterval{0.9, {0.8, 0.99}}), Verdict::slower);
}

TEST(Compare, SpeedupIntervalBracketsTheRatioAndShrinksWithSamples) {
  const auto few =
      median_ratio_interval(normal_samples(20, 100, 2, 11), normal_samples(20, 80, 1.6, 12));
  const auto many =
      median_ratio_interval(normal_samples(2000, 100, 2, 13), normal_samples(2000, 80, 1.6, 14));
  for (const RatioInterval& r : {few, many}) {
    EXPECT_LE(r.interval.low, r.estimate);
    EXPECT_GE(r.interval.high, r.estimate);
    EXPECT_LT(r.interval.low, 1.25);
    EXPECT_GT(r.interval.high, 1.25);
  }
  EXPECT_NEAR(many.estimate, 1.25, 0.005);
  EXPECT_GT(few.interval.high - few.interval.low, 3 * (many.interval.high - many.interval.low));
  // The interval of a 1% noise, 2000-sample ratio is about +-0.1%.
  EXPECT_LT(many.interval.high - many.interval.low, 0.01);
}

TEST(Compare, SpeedupIntervalIsDeterministicAndDegenerateCases) {
  const auto a = normal_samples(30, 100, 3, 21), b = normal_samples(30, 90, 3, 22);
  const RatioInterval first = median_ratio_interval(a, b), second = median_ratio_interval(a, b);
  EXPECT_EQ(first.interval.low, second.interval.low);
  EXPECT_EQ(first.interval.high, second.interval.high);
  // Another seed gives another, similar interval.
  const RatioInterval other = median_ratio_interval(a, b, 0.95, 2000, 99);
  EXPECT_NE(other.interval.low, first.interval.low);
  EXPECT_NEAR(other.interval.low, first.interval.low, 0.02);
  // Constant samples: no spread to resample.
  const RatioInterval constant = median_ratio_interval({10, 10, 10}, {5, 5, 5});
  EXPECT_DOUBLE_EQ(constant.estimate, 2);
  EXPECT_DOUBLE_EQ(constant.interval.low, 2);
  EXPECT_DOUBLE_EQ(constant.interval.high, 2);
  EXPECT_EQ(median_ratio_interval({}, {1}).estimate, 0);
  // A wider confidence gives a wider interval.
  const RatioInterval wide = median_ratio_interval(a, b, 0.99);
  EXPECT_LE(wide.interval.low, first.interval.low);
  EXPECT_GE(wide.interval.high, first.interval.high);
}

TEST(Compare, SpearmanOnKnownRankings) {
  EXPECT_DOUBLE_EQ(*spearman_correlation({1, 2, 3, 4, 5}, {10, 20, 30, 40, 50}), 1.0);
  EXPECT_DOUBLE_EQ(*spearman_correlation({1, 2, 3, 4, 5}, {50, 40, 30, 20, 10}), -1.0);
  // Monotone but not linear: still 1 (ranks only).
  EXPECT_DOUBLE_EQ(*spearman_correlation({1, 2, 3, 4}, {1, 8, 27, 1000}), 1.0);
  // One swap of neighbours in 5: 1 - 6 * 2 / (5 * 24) = 0.9.
  EXPECT_NEAR(*spearman_correlation({1, 2, 3, 4, 5}, {1, 2, 3, 5, 4}), 0.9, 1e-12);
  // Ties take mean ranks: y ranks 1, 2, 3.5, 3.5, 5; the Pearson correlation of the ranks is
  // 9.5 / sqrt(10 * 9.5).
  EXPECT_NEAR(*spearman_correlation({1, 2, 3, 4, 5}, {1, 2, 7, 7, 9}), 9.5 / std::sqrt(95.0),
              1e-12);
  EXPECT_FALSE(spearman_correlation({1, 2}, {2, 1}).has_value());
  EXPECT_FALSE(spearman_correlation({1, 2, 3}, {4, 4, 4}).has_value());
}

TEST(Compare, TransferRegretAndBestConfigs) {
  WorkloadSides s;
  s.workload = "w";
  // A's best is c1 (90 us); on B c1 takes 110 and c2 100: running A's choice on B loses 10%.
  s.a = {timing("v", "c=1", normal_samples(40, 90, 0.5, 1), 1),
         timing("v", "c=2", normal_samples(40, 95, 0.5, 2), 1),
         timing("v", "c=3", normal_samples(40, 99, 0.5, 3), 1)};
  s.b = {timing("v", "c=1", normal_samples(40, 110, 0.5, 4), 2),
         timing("v", "c=2", normal_samples(40, 100, 0.5, 5), 2),
         timing("v", "c=3", normal_samples(40, 105, 0.5, 6), 2)};
  const WorkloadComparison r = compare_workload(s, CompareSettings{});
  EXPECT_EQ(r.a_best.config_key, "c=1");
  EXPECT_EQ(r.b_best.config_key, "c=2");
  EXPECT_TRUE(r.best_differs);
  ASSERT_TRUE(r.a_best_on_b.has_value());
  EXPECT_EQ(r.a_best_on_b->config_key, "c=1");
  ASSERT_TRUE(r.transfer_regret.has_value());
  EXPECT_NEAR(*r.transfer_regret, r.a_best_on_b->median_us / r.b_best.median_us - 1, 1e-12);
  EXPECT_NEAR(*r.transfer_regret, 0.10, 0.01);
  EXPECT_EQ(*r.a_best_on_b_verdict, Verdict::slower);
  EXPECT_EQ(r.common_configs, 3u);
  // A ranks c1 < c2 < c3, B ranks c2 < c3 < c1: 1 - 6 * (4 + 1 + 1) / (3 * 8) = -0.5.
  EXPECT_NEAR(*r.spearman, -0.5, 1e-12);
  EXPECT_NEAR(transfer_regret(110, 100), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(transfer_regret(100, 100), 0);

  // A's best never measured on B: no regret, and the output says so.
  s.b.erase(s.b.begin());
  const WorkloadComparison missing = compare_workload(s, CompareSettings{});
  EXPECT_FALSE(missing.a_best_on_b.has_value());
  EXPECT_FALSE(missing.transfer_regret.has_value());
  EXPECT_EQ(missing.common_configs, 2u);
  EXPECT_FALSE(missing.spearman.has_value());  // 2 common configs: too few to rank
  CompareResult result;
  result.rows = {missing};
  EXPECT_NE(compare_markdown(result).find("not measured on B"), std::string::npos);
  EXPECT_FALSE(compare_json(result)["workloads"][0]["transfer"]["measured_on_b"].get<bool>());

  // The same best on both sides: no regret.
  WorkloadSides same = s;
  same.b = {timing("v", "c=1", normal_samples(40, 100, 0.5, 7), 2),
            timing("v", "c=2", normal_samples(40, 120, 0.5, 8), 2)};
  const WorkloadComparison agree = compare_workload(same, CompareSettings{});
  EXPECT_FALSE(agree.best_differs);
  EXPECT_DOUBLE_EQ(*agree.transfer_regret, 0);
}

TEST(Compare, VariantsModeMatchesConfigsByKey) {
  WorkloadSides s;
  s.a = {timing("paged_decode.sm80_simt", "warps=4", normal_samples(30, 100, 0.5, 1))};
  s.b = {timing("paged_decode.sm80_mma", "warps=4", normal_samples(30, 90, 0.5, 2))};
  CompareSettings by_variant;
  EXPECT_TRUE(compare_workload(s, by_variant).best_differs);
  EXPECT_FALSE(compare_workload(s, by_variant).a_best_on_b.has_value());
  CompareSettings by_key;
  by_key.configs_by_key = true;
  const WorkloadComparison r = compare_workload(s, by_key);
  EXPECT_FALSE(r.best_differs);
  EXPECT_TRUE(r.a_best_on_b.has_value());
}

TEST(Compare, RooflinePredictionAndCeilingFractions) {
  DeviceCeilings a, b;
  a.by_metric[kReadGbps].value = 3000;
  a.by_metric[kBf16Tflops].value = 600;
  b.by_metric[kReadGbps].value = 4000;
  b.by_metric[kBf16Tflops].value = 900;
  EXPECT_DOUBLE_EQ(*predict_time_us(Bound::memory, 100, a, b), 75);
  EXPECT_DOUBLE_EQ(*predict_time_us(Bound::compute, 300, a, b), 200);
  EXPECT_FALSE(predict_time_us(Bound::memory, 100, a, DeviceCeilings{}).has_value());

  CompareSettings settings;
  settings.ceilings = {{1, a}, {2, b}};
  // decode: 2.4e8 bytes in 100 us on A = 2400 GB/s = 80% of 3000; 80 us on B = 3000 = 75%.
  WorkloadComparison r = compare_workload(
      one_config_each(std::vector<double>(25, 100.0), std::vector<double>(25, 80.0)), settings);
  EXPECT_EQ(r.ceiling, "read_bw");
  EXPECT_NEAR(*r.a_fraction, 0.80, 1e-12);
  EXPECT_NEAR(*r.b_fraction, 0.75, 1e-12);
  EXPECT_NEAR(*r.predicted_b_us, 75, 1e-12);
  EXPECT_NEAR(*r.prediction_error, 80.0 / 75 - 1, 1e-12);

  // A compute-bound family is set against the tensor rate.
  WorkloadSides prefill =
      one_config_each(std::vector<double>(25, 300.0), std::vector<double>(25, 250.0));
  prefill.a[0].family = prefill.b[0].family = "flash_fwd";
  r = compare_workload(prefill, settings);
  EXPECT_EQ(r.ceiling, "bf16_tensor");
  EXPECT_NEAR(*r.predicted_b_us, 200, 1e-12);

  // Without B's ceilings: no fraction for B and no prediction; on one device: no prediction.
  settings.ceilings.erase(2);
  r = compare_workload(one_config_each({100, 100, 100}, {80, 80, 80}), settings);
  EXPECT_FALSE(r.b_fraction.has_value());
  EXPECT_FALSE(r.predicted_b_us.has_value());
  WorkloadSides one_device = one_config_each({100, 100, 100}, {80, 80, 80});
  one_device.b[0].device_id = 1;
  EXPECT_FALSE(compare_workload(one_device, settings).predicted_b_us.has_value());
}

TEST(Compare, AFractionAboveItsCeilingIsMarkedAndExplained) {
  DeviceCeilings a;
  a.by_metric[kReadGbps].value = 2000;
  a.by_metric[kBf16Tflops] = {kBf16Tflops, 600, "gemm", 20, 0.001, false, "t", "c", "", 1620};
  DeviceCeilings b = a;
  b.by_metric[kReadGbps].value = 4000;
  b.by_metric[kBf16Tflops].sm_clock_mhz.reset();  // calibrated before the clock was recorded
  CompareSettings settings;
  settings.ceilings = {{1, a}, {2, b}};
  // 2.4e8 bytes in 100 us = 2400 GB/s: 120% of A's 2000, 60% of B's 4000.
  CompareResult result;
  result.rows = {compare_workload(
      one_config_each(std::vector<double>(25, 100.0), std::vector<double>(25, 100.0)), settings)};
  result.ceilings = settings.ceilings;
  result.devices = {stored_device(1, "GPU A"), stored_device(2, "GPU B")};
  ASSERT_TRUE(result.rows[0].a_against.above_ceiling());
  std::string md = compare_markdown(result);
  EXPECT_NE(md.find("| 120.0%* | 60.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("* w, A: above the DRAM ceiling: L2 reuse. 120.0% of the DRAM read ceiling"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("* w, B:"), std::string::npos) << md;
  // B's bf16 ceiling has no clock: the comparison says its compute fractions are not scaled.
  EXPECT_NE(md.find("Not scaled on GPU B"), std::string::npos) << md;
  EXPECT_EQ(md.find("Not scaled on GPU A"), std::string::npos) << md;
}

StoredDevice stored(int64_t id, const std::string& name, const std::string& fingerprint,
                    const std::string& uuid) {
  StoredDevice d;
  d.id = id;
  d.record.name = name;
  d.record.uuid = uuid;
  d.fingerprint = fingerprint;
  return d;
}

TEST(Compare, DeviceMatching) {
  const std::vector<StoredDevice> devices = {
      stored(1, "NVIDIA H100 80GB HBM3", "aa11bb22cc33", "GPU-1111-aaaa"),
      stored(2, "NVIDIA H200", "aa11ff00ee99", "GPU-2222-bbbb"),
      stored(3, "NVIDIA H100 PCIe", "cc44dd55ee66", "GPU-3333-cccc")};
  EXPECT_EQ(match_device(devices, "H200").id, 2);
  EXPECT_EQ(match_device(devices, "h100 80gb").id, 1);  // case-insensitive
  EXPECT_EQ(match_device(devices, "aa11f").id, 2);      // fingerprint prefix
  EXPECT_EQ(match_device(devices, "cc44dd55ee66").id, 3);
  EXPECT_EQ(match_device(devices, "GPU-3333-cccc").id, 3);
  EXPECT_EQ(match_device(devices, "3333").id, 3);  // UUID without "GPU-"
  try {
    match_device(devices, "H100");
    FAIL() << "'H100' names two devices";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ambiguous"), std::string::npos) << what;
    EXPECT_NE(what.find("NVIDIA H100 80GB HBM3"), std::string::npos) << what;
    EXPECT_NE(what.find("NVIDIA H100 PCIe"), std::string::npos) << what;
    EXPECT_EQ(what.find("NVIDIA H200"), std::string::npos) << what;
  }
  EXPECT_THROW(match_device(devices, "aa11"), UsageError);  // two fingerprints start so
  try {
    match_device(devices, "A100");
    FAIL() << "no device is an A100";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("matches no device"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("NVIDIA H200"), std::string::npos);  // lists them
  }
}

TEST(Compare, RepresentativesPreferConfirmThenLatest) {
  Store store(":memory:");
  testing::fill_comparison_fixture(store);
  MeasurementFilter filter;
  filter.device_id = store.device_id(testing::sample_h100().fingerprint());
  filter.variant = "paged_decode.sm80_simt";
  filter.workload_id = 1;  // decode-llama
  const std::vector<ConfigTiming> configs = representatives(store.find_measurements(filter));
  ASSERT_EQ(configs.size(), 12u);
  for (const ConfigTiming& c : configs) {
    if (c.config_key == "num_splits=8,tile_tokens=64,warps=4") {
      EXPECT_EQ(c.policy, "confirm");  // the screen result at 90 us does not speak for it
      EXPECT_NEAR(c.median_us, 100, 1e-9);
    }
    EXPECT_EQ(c.samples.size(), 21u);
  }
}

class CompareStore : public ::testing::Test {
 protected:
  void SetUp() override { fixture_ = testing::fill_comparison_fixture(store_); }
  const WorkloadComparison& row(const CompareResult& r, const std::string& workload) {
    for (const WorkloadComparison& w : r.rows) {
      if (w.workload == workload) return w;
    }
    ADD_FAILURE() << "no row " << workload;
    return r.rows.front();
  }
  Store store_{":memory:"};
  testing::ComparisonFixture fixture_;
};

TEST_F(CompareStore, TwoDevices) {
  CompareRequest request;
  request.devices = {"H100", "H200"};
  const CompareResult r = compare(store_, request);
  EXPECT_EQ(r.mode, CompareMode::devices);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].workload, "decode-llama");  // by name
  EXPECT_EQ(r.rows[1].workload, "decode-regress");
  EXPECT_EQ(r.rows[2].workload, "prefill-mistral");
  EXPECT_EQ(r.only_a, std::vector<std::string>{"only-h100"});
  EXPECT_TRUE(r.only_b.empty());

  const WorkloadComparison& decode = row(r, "decode-llama");
  EXPECT_EQ(decode.verdict, Verdict::faster);
  EXPECT_NEAR(decode.speedup.estimate, 100.0 / 75, 1e-9);
  EXPECT_EQ(decode.a_best.config_key, "num_splits=8,tile_tokens=64,warps=4");
  EXPECT_EQ(decode.b_best.config_key, "num_splits=8,tile_tokens=128,warps=4");
  EXPECT_TRUE(decode.best_differs);
  EXPECT_NEAR(*decode.transfer_regret, 0.10, 1e-9);
  EXPECT_EQ(decode.common_configs, 12u);
  EXPECT_GT(*decode.spearman, 0);
  EXPECT_LT(*decode.spearman, 1);
  EXPECT_NEAR(*decode.a_fraction, 0.8, 1e-9);
  EXPECT_NEAR(*decode.b_fraction, 0.8, 1e-9);
  EXPECT_NEAR(*decode.predicted_b_us, 75, 1e-9);
  EXPECT_NEAR(*decode.prediction_error, 0, 1e-9);

  EXPECT_EQ(row(r, "prefill-mistral").verdict, Verdict::same);
  EXPECT_FALSE(row(r, "prefill-mistral").best_differs);
  EXPECT_NEAR(*row(r, "prefill-mistral").spearman, 1, 1e-12);
  EXPECT_EQ(row(r, "decode-regress").verdict, Verdict::slower);
  EXPECT_TRUE(row(r, "decode-regress").regression);
  EXPECT_EQ(r.summary.faster, 1u);
  EXPECT_EQ(r.summary.same, 1u);
  EXPECT_EQ(r.summary.slower, 1u);
  EXPECT_EQ(r.summary.regressions, 1u);
  EXPECT_NEAR(*r.summary.geomean_speedup, std::cbrt(100.0 / 75 * 1.0 * 50.0 / 60), 1e-9);

  request.threshold = 0.25;  // 20% slower is within it
  EXPECT_EQ(compare(store_, request).summary.regressions, 0u);
}

TEST_F(CompareStore, TwoRunsGiveTheSameRowsAsTheirDevices) {
  CompareRequest by_device, by_run;
  by_device.devices = {"H100", "H200"};
  by_run.runs = {fixture_.h100_run, fixture_.h200_run};
  const CompareResult d = compare(store_, by_device), r = compare(store_, by_run);
  EXPECT_EQ(r.mode, CompareMode::runs);
  EXPECT_NE(r.a.label.find("run 1"), std::string::npos) << r.a.label;
  ASSERT_EQ(d.rows.size(), r.rows.size());
  for (size_t i = 0; i < d.rows.size(); ++i) {
    EXPECT_EQ(d.rows[i].verdict, r.rows[i].verdict);
    EXPECT_EQ(d.rows[i].speedup.estimate, r.rows[i].speedup.estimate);
  }
}

TEST_F(CompareStore, TwoVariantsOnOneDevice) {
  CompareRequest request;
  request.variants = {"paged_decode.sm80_simt", "paged_decode.sm80_mma"};
  // Both devices measured sm80_simt: the device must be named.
  try {
    compare(store_, request);
    FAIL() << "two devices measured the variants";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--device"), std::string::npos) << e.what();
  }
  request.devices = {"H100"};
  const CompareResult r = compare(store_, request);
  ASSERT_EQ(r.rows.size(), 1u);  // sm80_mma ran decode-llama only
  const WorkloadComparison& w = r.rows[0];
  EXPECT_EQ(w.verdict, Verdict::slower);  // sm80_mma 10% slower
  EXPECT_NEAR(w.speedup.estimate, 100.0 / 110, 1e-9);
  EXPECT_FALSE(w.best_differs);  // the same key is best in both
  EXPECT_EQ(w.common_configs, 4u);
  EXPECT_NEAR(*w.spearman, 1, 1e-12);
  EXPECT_FALSE(w.predicted_b_us.has_value());  // one device
}

TEST_F(CompareStore, UsageErrors) {
  CompareRequest one_device;
  one_device.devices = {"H100"};
  EXPECT_THROW(compare(store_, one_device), UsageError);
  CompareRequest same;
  same.devices = {"H100", "HBM3"};
  EXPECT_THROW(compare(store_, same), UsageError);  // one device twice
  CompareRequest ambiguous;
  ambiguous.devices = {"NVIDIA", "H200"};
  EXPECT_THROW(compare(store_, ambiguous), UsageError);
  CompareRequest no_run;
  no_run.runs = {fixture_.h100_run, 99};
  EXPECT_THROW(compare(store_, no_run), UsageError);
  CompareRequest nothing_in_common;
  nothing_in_common.devices = {"H100", "H200"};
  nothing_in_common.workload = "only-*";
  EXPECT_THROW(compare(store_, nothing_in_common), UsageError);
  CompareRequest mixed;
  mixed.devices = {"H100", "H200"};
  mixed.runs = {1, 2};
  EXPECT_THROW(compare(store_, mixed), UsageError);
}

TEST_F(CompareStore, MarkdownAndJson) {
  CompareRequest request;
  request.devices = {"H100", "H200"};
  const CompareResult r = compare(store_, request);
  const std::string md = compare_markdown(r);
  for (const char* text :
       {"# Comparison of two devices", "**A**: NVIDIA H100 80GB HBM3", "**B**: NVIDIA H200",
        "## Times", "## Best configs", "## Summary", "| decode-llama | 100.00 [", "1.333x [",
        "FASTER", "SLOWER (regression)", "+10.0%", "Measured only on A (1): only-h100",
        "A regression is SLOWER by more than 2.0% over the whole interval",
        "Regressions (B SLOWER than A by more than 2.0% over the whole speed-up interval): 1: "
        "decode-regress (+20.0%)"}) {
    EXPECT_NE(md.find(text), std::string::npos) << text << "\n" << md;
  }
  EXPECT_EQ(md, compare_markdown(compare(store_, request)));  // deterministic

  const nlohmann::json j = compare_json(r);
  EXPECT_EQ(j["mode"], "devices");
  ASSERT_EQ(j["workloads"].size(), 3u);
  const nlohmann::json& decode = j["workloads"][0];
  EXPECT_EQ(decode["verdict"], "FASTER");
  EXPECT_NEAR(decode["speedup"]["estimate"].get<double>(), 100.0 / 75, 1e-9);
  EXPECT_LT(decode["speedup"]["low"].get<double>(), 100.0 / 75);
  EXPECT_NEAR(decode["transfer"]["regret"].get<double>(), 0.1, 1e-9);
  EXPECT_NEAR(decode["roofline_prediction"]["predicted_b_us"].get<double>(), 75, 1e-9);
  EXPECT_EQ(decode["a"]["device_fingerprint"], fixture_.h100_fingerprint);
  EXPECT_EQ(j["summary"]["regressions"], 1);
  EXPECT_EQ(j["a"]["devices"][0]["ceilings"]["read_gbps"], 3000.0);
}

}  // namespace
}  // namespace attn
