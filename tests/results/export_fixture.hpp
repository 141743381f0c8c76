// A results database for the export tests, written through the Store API: paged_decode and
// prefix_prefill workloads of several shapes on an H100 (and, when asked, an H200), with
// measurement times chosen so that each bucket's choice, regret and coverage are known in advance
// (the comments below work them out). tests/results/export_table_test.cpp and
// tests/apps/export_cli_test.cpp share it.
#pragma once

#include <string>
#include <vector>

#include "results/store.hpp"
#include "workloads/workload_spec.hpp"

namespace attn::testing {

inline DeviceRecord export_h100() {
  DeviceRecord d;
  d.kind = "gpu";
  d.name = "NVIDIA H100 80GB HBM3";
  d.uuid = "GPU-11111111-2222-3333-4444-555555555555";
  d.cc_major = 9;
  d.sm_count = 132;
  d.memory_bytes = 85520809984;
  d.l2_bytes = 52428800;
  d.sm_clock_khz = 1980000;
  d.memory_clock_khz = 2619000;
  d.memory_bus_bits = 5120;
  d.cuda_driver_version = "13.0";
  d.cuda_version = "13.0";
  d.nvrtc_version = "13.0";
  return d;
}

inline DeviceRecord export_h200() {
  DeviceRecord d = export_h100();
  d.name = "NVIDIA H200";
  d.uuid = "GPU-99999999-8888-7777-6666-555555555555";
  d.memory_bytes = 150754820096;
  return d;
}

// Variants and configs of the fixture.
inline constexpr const char* kSm80Simt = "paged_decode.sm80_simt";
inline constexpr const char* kSm80Mma = "paged_decode.sm80_mma";
inline constexpr const char* kA = "tile_tokens=64,warps=4";   // sm80_simt A, sm80_mma C
inline constexpr const char* kB = "tile_tokens=128,warps=4";  // sm80_simt B

// A workload spec: `count` sequences of `context` cached keys and `query` new tokens.
inline WorkloadSpec export_workload(const std::string& name, int count, int context, int query = 1,
                                    int q_heads = 32, int kv_heads = 8, int head_dim = 128,
                                    const std::string& dtype = "bf16",
                                    const std::string& kv_dtype = "", int page_size = 16) {
  const std::string kv = kv_dtype.empty() ? "" : ", \"kv_dtype\": \"" + kv_dtype + "\"";
  const std::string text = "{\"schema_version\": 2, \"name\": \"" + name +
                           "\", \"model\": {\"num_q_heads\": " + std::to_string(q_heads) +
                           ", \"num_kv_heads\": " + std::to_string(kv_heads) +
                           ", \"head_dim\": " + std::to_string(head_dim) + ", \"dtype\": \"" +
                           dtype + "\"" + kv +
                           "}, \"kv_cache\": {\"page_size\": " + std::to_string(page_size) +
                           "}, \"sequences\": [{\"context_len\": " + std::to_string(context) +
                           ", \"query_len\": " + std::to_string(query) +
                           ", \"count\": " + std::to_string(count) + "}], \"seed\": 7}";
  return parse_workload(text, "export fixture " + name);
}

class ExportFixture {
 public:
  explicit ExportFixture(Store& store) : store_(store) {
    h100_ = store.upsert_device(export_h100());
    run_ = store.begin_run({"attn-tune tune", "0.3.0", "feedc0de", "Release",
                            "attn-tune tune decode --variant 'paged_decode.*' --db x.db",
                            "gpu-node-1", ""});
  }

  // The paged_decode and prefix_prefill results on the H100 described in the file comment.
  void add_h100_results() {
    // Bucket batch [33, 64] x context [2049, 4096] (gqa 4, head_dim 128, bf16, page 16):
    //   a: A 10, B 11, C 12 (best A);  b: A 34.5, B 33, C 30 (best C).
    //   Slowdowns: A (0, 0.15), B (0.1, 0.1), C (0.2, 0). The lowest worst case is B's 0.1:
    //   B, regret max 0.1, mean 0.1 (the lowest mean, A's 0.075, would have chosen A).
    const int64_t a = workload(export_workload("decode-b40-c4000", 40, 4000));
    const int64_t b = workload(export_workload("decode-b64-c3000", 64, 3000));
    passed(a, kSm80Simt, kA, 10);
    passed(a, kSm80Simt, kB, 11);
    passed(a, kSm80Mma, kA, 12);
    passed(b, kSm80Simt, kA, 34.5);
    passed(b, kSm80Simt, kB, 33);
    passed(b, kSm80Mma, kA, 30);
    // Bucket [1, 1] x [513, 1024]: the latest confirm result stands for a case, so A is 5 (its
    // later screen result of 3 does not count) and B (confirm 4) is best. C's 2 is unstable: left
    // out, unless include_unstable, where C wins.
    const int64_t c = workload(export_workload("decode-b1-c1000", 1, 1000));
    passed(c, kSm80Simt, kA, 5);
    passed(c, kSm80Simt, kB, 4);
    passed(c, kSm80Simt, kA, 3, "screen");
    passed(c, kSm80Mma, kA, 2, "confirm", /*unstable=*/true);
    // Page size 32, batch [5, 8] x [4097, 8192]: B 6 beats A 7.
    const int64_t d =
        workload(export_workload("decode-b8-c8000-p32", 8, 8000, 1, 32, 8, 128, "bf16", "", 32));
    passed(d, kSm80Simt, kA, 7);
    passed(d, kSm80Simt, kB, 6);
    // An fp8 KV cache, batch [5, 8] x [1025, 2048]: only A.
    const int64_t e = workload(
        export_workload("decode-b8-c2000-fp8", 8, 2000, 1, 32, 8, 128, "bf16", "fp8_e4m3"));
    passed(e, kSm80Simt, kA, 9);
    // Batch [9, 16] x [8193, 16384]: measured, nothing passed.
    const int64_t f = workload(export_workload("decode-b16-c16000", 16, 16000));
    failed(f, kSm80Simt, kA, Disposition::incorrect);
    failed(f, kSm80Simt, kB, Disposition::unsupported);
    // Batch [2, 2] x [65, 128]: no config was measured on both workloads (partial). g: A 1.0,
    // B 1.2; h: C 1.5. A and C both have worst slowdown 0 on the one workload they cover; the
    // name order breaks the tie: C (paged_decode.sm80_mma before paged_decode.sm80_simt).
    const int64_t g = workload(export_workload("decode-b2-c100", 2, 100));
    const int64_t h = workload(export_workload("decode-b2-c120", 2, 120));
    passed(g, kSm80Simt, kA, 1.0);
    passed(g, kSm80Simt, kB, 1.2);
    passed(h, kSm80Mma, kA, 1.5);
    // prefix_prefill, gqa 8, head_dim 64, fp16: 2 x 512 new tokens and no cached ones, batch
    // [2, 2] x context [0, 1].
    const int64_t p = workload(export_workload("prefill-2x512", 2, 0, 512, 32, 4, 64, "fp16"));
    passed(p, "prefix_prefill.sm80_mma", "block_m=64,warps=4", 50, "confirm", false,
           "prefix_prefill");
    passed(p, "prefix_prefill.sm80_mma", "block_m=128,warps=4", 40, "confirm", false,
           "prefix_prefill");
    store_.finish_run(run_, "completed");
  }

  // The H200 measured one workload: a second device with results.
  void add_h200_results() {
    h200_ = store_.upsert_device(export_h200());
    const int64_t a = workload(export_workload("decode-b40-c4000", 40, 4000));
    passed(a, kSm80Simt, kA, 8, "confirm", false, "paged_decode", h200_);
  }

  int64_t workload(const WorkloadSpec& spec) {
    return store_.upsert_workload({content_hash(spec), spec.name, canonical_json(spec)});
  }

  int64_t passed(int64_t workload_id, const std::string& variant, const std::string& config,
                 double median_us, const std::string& policy = "confirm", bool unstable = false,
                 const std::string& family = "paged_decode", int64_t device = 0) {
    Measurement m = base(variant, config, family, policy);
    m.disposition = Disposition::passed;
    m.samples_us = {median_us * 0.99, median_us, median_us * 1.01};
    m.stats = summarize(m.samples_us);
    m.unstable = unstable;
    if (unstable) m.unstable_reason = "noise above the target";
    return store_.add_measurement(run_, device ? device : h100_, workload_id, m);
  }

  int64_t failed(int64_t workload_id, const std::string& variant, const std::string& config,
                 Disposition disposition) {
    Measurement m = base(variant, config, "paged_decode", "confirm");
    m.disposition = disposition;
    m.reason = "for the test";
    return store_.add_measurement(run_, h100_, workload_id, m);
  }

  int64_t h100() const { return h100_; }
  int64_t h200() const { return h200_; }
  int64_t run() const { return run_; }

 private:
  static Measurement base(const std::string& variant, const std::string& config,
                          const std::string& family, const std::string& policy) {
    Measurement m;
    m.family = family;
    m.variant = variant;
    m.config_key = config;
    m.config_json = "{}";
    m.backend = "cuda";
    m.policy = policy;
    m.bytes = 1e6;
    m.flops = 1e6;
    return m;
  }

  Store& store_;
  int64_t h100_ = 0, h200_ = 0, run_ = 0;
};

}  // namespace attn::testing
