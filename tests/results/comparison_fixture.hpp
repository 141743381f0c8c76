// A results database for the compare and report tests, built through the Store API: an H100 and
// an H200 with ceilings, one tune run on each, and synthetic samples whose medians are known.
//
//   decode-llama    paged_decode.sm80_simt, 12 configs (tile_tokens 32/64/128 x warps 2/4 x
//                   num_splits 0/8); H100 best {64, 4, 8} at 100 us, H200 best {128, 4, 8} at
//                   75 us; the H100's best runs 82.5 us on the H200 (transfer regret 10%). Bytes
//                   2.4e8 (80% of each device's read bandwidth), so the roofline predicts 75 us.
//                   On the H100 also 4 paged_decode.sm80_mma configs (10% slower than sm80_simt's
//                   of the same key) and a `screen` result of the best config at 90 us that the
//                   `confirm` one (100 us) must win over.
//   prefill-mistral flash_fwd.sm80_mma, 4 configs (block_m 64/128 x warps 4/8), the same medians
//                   on both devices (SAME).
//   decode-regress  paged_decode.sm80_simt, 2 configs; 50 us on the H100, 60 us on the H200
//                   (SLOWER by 20%).
//   only-h100       measured on the H100 only.
// Every sample set is 21 values spread evenly over +-1% of its median (95% median interval about
// +-0.4%), so medians 1% apart have separate intervals.
#pragma once

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "base/sha256.hpp"
#include "results/store.hpp"
#include "tests/results/sample_records.hpp"

namespace attn::testing {

inline std::vector<double> spread_samples(double median, int n = 21, double spread = 0.01) {
  std::vector<double> out;
  const int half = n / 2;
  // Each offset -half..half once, interleaved (a stride coprime with n) so that the samples are
  // not in sorted order as taken.
  int stride = half + 1;
  while (std::gcd(stride, n) != 1) ++stride;
  for (int i = 0; i < n; ++i) {
    const int k = (i * stride) % n - half;
    out.push_back(median * (1 + spread * double(k) / double(half)));
  }
  return out;
}

inline DeviceRecord sample_h200() {
  DeviceRecord d = sample_h100();
  d.name = "NVIDIA H200";
  d.uuid = "GPU-8a7b6c5d-aaaa-bbbb-cccc-ddddeeeeffff";
  d.memory_bytes = 150754820096;
  d.l2_bytes = 62914560;
  d.memory_clock_khz = 3201000;
  return d;
}

struct ComparisonFixture {
  int64_t h100_run = 0, h200_run = 0;
  std::string h100_fingerprint, h200_fingerprint;
};

inline Measurement fixture_measurement(const std::string& family, const std::string& variant,
                                       const std::string& config_key, double median, double bytes,
                                       double flops, const std::string& policy = "confirm") {
  Measurement m;
  m.family = family;
  m.variant = variant;
  m.config_key = config_key;
  std::string json = "{";
  for (size_t start = 0; start < config_key.size();) {
    const size_t end = std::min(config_key.find(',', start), config_key.size());
    const std::string pair = config_key.substr(start, end - start);
    const size_t eq = pair.find('=');
    json += (json.size() > 1 ? "," : "") + std::string("\"") + pair.substr(0, eq) +
            "\":" + pair.substr(eq + 1);
    start = end + 1;
  }
  m.config_json = json + "}";
  m.backend = "cuda";
  m.disposition = Disposition::passed;
  m.policy = policy;
  m.samples_us = spread_samples(median);
  m.stats = summarize(m.samples_us);
  m.timing.timer = "events";
  m.verification.checked = true;
  m.verification.rel_l2_error = 1e-3;
  m.verification.elements = 1024;
  m.verification.tolerance = 2e-2;
  m.verification.reference = "cpu_reference";
  m.bytes = bytes;
  m.flops = flops;
  return m;
}

inline ComparisonFixture fill_comparison_fixture(Store& store) {
  ComparisonFixture f;
  const DeviceRecord h100 = sample_h100(), h200 = sample_h200();
  f.h100_fingerprint = h100.fingerprint();
  f.h200_fingerprint = h200.fingerprint();
  const int64_t d100 = store.upsert_device(h100), d200 = store.upsert_device(h200);
  const auto ceiling = [](const char* metric, double value) {
    CeilingRecord c;
    c.metric = metric;
    c.value = value;
    c.method = "fixture";
    c.sample_count = 20;
    c.noise = 0.001;
    c.tool_version = "0.1.0";
    c.git_commit = "0123abcd";
    c.measured_at = "2026-01-02T03:04:05.000Z";
    return c;
  };
  store.add_ceiling(f.h100_fingerprint, ceiling(kReadGbps, 3000));
  store.add_ceiling(f.h100_fingerprint, ceiling(kBf16Tflops, 600));
  store.add_ceiling(f.h200_fingerprint, ceiling(kReadGbps, 4000));
  store.add_ceiling(f.h200_fingerprint, ceiling(kBf16Tflops, 640));

  const auto run = [&](const std::string& host, const std::string& started) {
    RunRecord r;
    r.tool = "attn-tune tune";
    r.tool_version = "0.1.0";
    r.git_commit = "0123abcd";
    r.build_type = "Release";
    r.command_line = "attn-tune tune decode-llama --variant 'paged_decode.*' --db " + host + ".db";
    r.host = host;
    r.started_at = started;
    return store.begin_run(r);
  };
  f.h100_run = run("h100-node", "2026-01-03T00:00:00.000Z");
  f.h200_run = run("h200-node", "2026-01-04T00:00:00.000Z");

  const auto workload = [&](const std::string& name) {
    const std::string json = "{\"name\":\"" + name + "\"}";
    return store.upsert_workload({sha256_hex(json), name, json});
  };
  const int64_t decode = workload("decode-llama"), prefill = workload("prefill-mistral"),
                regress = workload("decode-regress"), only = workload("only-h100");

  const auto key = [](int tile, int warps, int splits) {
    return "num_splits=" + std::to_string(splits) + ",tile_tokens=" + std::to_string(tile) +
           ",warps=" + std::to_string(warps);
  };
  // decode-llama: the landscape of each device, its best tile 64 (H100) or 128 (H200).
  const auto shape = [](int tile, int warps, int splits, int best_tile) {
    return 1 + 0.1 * std::fabs(std::log2(double(tile) / best_tile)) + 0.05 * (warps == 2) +
           0.08 * (splits == 0);
  };
  const double decode_bytes = 2.4e8, decode_flops = 9.6e8;
  for (int tile : {32, 64, 128}) {
    for (int warps : {2, 4}) {
      for (int splits : {0, 8}) {
        store.add_measurement(
            f.h100_run, d100, decode,
            fixture_measurement("paged_decode", "paged_decode.sm80_simt", key(tile, warps, splits),
                                100 * shape(tile, warps, splits, 64), decode_bytes, decode_flops));
        store.add_measurement(
            f.h200_run, d200, decode,
            fixture_measurement("paged_decode", "paged_decode.sm80_simt", key(tile, warps, splits),
                                75 * shape(tile, warps, splits, 128), decode_bytes, decode_flops));
      }
    }
  }
  for (int tile : {32, 64}) {
    for (int warps : {2, 4}) {
      store.add_measurement(
          f.h100_run, d100, decode,
          fixture_measurement("paged_decode", "paged_decode.sm80_mma", key(tile, warps, 8),
                              110 * shape(tile, warps, 8, 64), decode_bytes, decode_flops));
    }
  }
  store.add_measurement(f.h100_run, d100, decode,
                        fixture_measurement("paged_decode", "paged_decode.sm80_simt", key(64, 4, 8),
                                            90, decode_bytes, decode_flops, "screen"));
  // A failure on the H200 is never a best config.
  Measurement failed = fixture_measurement("paged_decode", "paged_decode.sm80_simt", key(32, 2, 0),
                                           1, decode_bytes, decode_flops);
  failed.disposition = Disposition::incorrect;
  failed.reason = "rel_l2 0.5 > 0.02";
  store.add_measurement(f.h200_run, d200, decode, failed);

  for (int block_m : {64, 128}) {
    for (int warps : {4, 8}) {
      const std::string k =
          "block_m=" + std::to_string(block_m) + ",warps=" + std::to_string(warps);
      const double t = 500 * (1 + 0.1 * (block_m == 64) + 0.05 * (warps == 4));
      for (auto [run_id, device] : {std::pair{f.h100_run, d100}, std::pair{f.h200_run, d200}}) {
        store.add_measurement(
            run_id, device, prefill,
            fixture_measurement("flash_fwd", "flash_fwd.sm80_mma", k, t, 1e8, 2e11));
      }
    }
  }
  for (int splits : {0, 8}) {
    store.add_measurement(f.h100_run, d100, regress,
                          fixture_measurement("paged_decode", "paged_decode.sm80_simt",
                                              key(64, 4, splits), 50 + splits, 1e8, 4e8));
    store.add_measurement(f.h200_run, d200, regress,
                          fixture_measurement("paged_decode", "paged_decode.sm80_simt",
                                              key(64, 4, splits), 60 + splits, 1e8, 4e8));
  }
  store.add_measurement(
      f.h100_run, d100, only,
      fixture_measurement("paged_decode", "paged_decode.sm80_simt", key(64, 4, 8), 40, 1e8, 4e8));
  store.finish_run(f.h100_run, "completed");
  store.finish_run(f.h200_run, "failed_cases");
  return f;
}

}  // namespace attn::testing
