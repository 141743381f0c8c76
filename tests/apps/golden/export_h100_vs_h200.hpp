exit 0
--- stdout
--- stderr
attn-tune: 5 buckets for NVIDIA H100 80GB HBM3, uuid GPU-f9da2503-67b4-3b23-234d-60bc7a6e3b03, fingerprint 4b1d92582d68af814ea35238137dc75cbda4ccdc1543bc60d70b5dcdc01344d3, 132 SMs, driver unknown (supports CUDA 13.0), CUDA 13.0, NVRTC 13.0 from 633 measurements
  flash_fwd: 2 of 2 buckets exported, 0 measured with nothing passed, 0 with no data (the cross product of the measured axis values)
    gqa 1, head_dim 128, bf16, page 16 (rows batch size, columns context length):
               [0, 1]
      [3, 4]   x
      [9, 16]  x
  paged_decode: 2 of 2 buckets exported, 0 measured with nothing passed, 0 with no data (the cross product of the measured axis values)
    gqa 4, head_dim 128, bf16, page 16 (rows batch size, columns context length):
                [2049, 4096]
      [33, 64]  x
    gqa 8, head_dim 128, bf16, page 16 (rows batch size, columns context length):
                [2049, 4096]
      [33, 64]  x
  prefix_prefill: 1 of 1 buckets exported, 0 measured with nothing passed, 0 with no data (the cross product of the measured axis values)
    gqa 4, head_dim 128, bf16, page 16 (rows batch size, columns context length):
              [1025, 2048]
      [5, 8]  x
    (x exported, ! measured but no usable passed result, . no data; batch size and context length in power-of-two buckets)
attn-tune: 5 buckets for NVIDIA H200, uuid GPU-285b6bf2-2726-4780-e6d7-b7f9188f54d3, fingerprint 50e4d5f74c08c768bf179c41037242dff1d59cf9be2508811f094341655cb0be, 132 SMs, driver unknown (supports CUDA 13.0), CUDA 13.0, NVRTC 13.0 from 633 measurements
  flash_fwd: 2 of 2 buckets exported, 0 measured with nothing passed, 0 with no data (the cross product of the measured axis values)
    gqa 1, head_dim 128, bf16, page 16 (rows batch size, columns context length):
               [0, 1]
      [3, 4]   x
      [9, 16]  x
  paged_decode: 2 of 2 buckets exported, 0 measured with nothing passed, 0 with no data (the cross product of the measured axis values)
    gqa 4, head_dim 128, bf16, page 16 (rows batch size, columns context length):
                [2049, 4096]
      [33, 64]  x
    gqa 8, head_dim 128, bf16, page 16 (rows batch size, columns context length):
                [2049, 4096]
      [33, 64]  x
  prefix_prefill: 1 of 1 buckets exported, 0 measured with nothing passed, 0 with no data (the cross product of the measured axis values)
    gqa 4, head_dim 128, bf16, page 16 (rows batch size, columns context length):
              [1025, 2048]
      [5, 8]  x
    (x exported, ! measured but no usable passed result, . no data; batch size and context length in power-of-two buckets)
attn-tune: wrote export.hpp
--- export.hpp
// Best kernel configs per workload bucket, exported by attn-tune export.
<line with the time of the run>
// from h100-vs-h200.db (schema version 7) with:
//   attn-tune export --db h100-vs-h200.db --all-devices --format cpp -o export.hpp
// Do not edit: rerun the command. Self-contained C++17; docs/export.md explains the
// buckets, the choice and the regret.
//
// Batch size and context length fall in power-of-two buckets (2^(k-1)+1 .. 2^k, and
// [1, 1] for a batch, [0, 1] for a context); family, GQA ratio, head dim, dtypes and
// page size must match exactly. The context length is the cached tokens per sequence:
// the keys in the KV cache before this step's new tokens (mean over the batch, rounded
// up), so a decode step over 4096 cached tokens asks with context_len 4096. Each entry
// is the (variant, config) with the lowest worst-case slowdown over the workloads
// measured in its bucket; its regret is chosen time / best time - 1 there.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace attn_tuned {

inline constexpr std::string_view kToolVersion = "0.1.0";
inline constexpr std::string_view kGitCommit = "<commit of this build>";
inline constexpr std::string_view kCommandLine = "attn-tune export --db h100-vs-h200.db --all-devices --format cpp -o export.hpp";
<line with the time of the run>
inline constexpr std::size_t kMaxConfigValues = 4;

// One query: the workload a kernel is about to run. See docs/export.md for each field.
struct Query {
  std::string_view family;   // "paged_decode", "prefix_prefill", ...
  std::int64_t batch_size;   // sequences in the batch
  std::int64_t context_len;  // cached tokens per sequence (before this step's new ones), mean
                             // rounded up: a decode step over 4096 cached tokens is 4096
  int gqa_ratio;             // query heads per KV head
  int head_dim;
  std::string_view dtype;     // "bf16", "fp16", ...: Q and output
  std::string_view kv_dtype;  // the K/V cache's dtype; empty: the same as dtype
  int page_size;              // tokens per KV page
};

struct ConfigValue {
  std::string_view axis;
  std::int64_t value;
};

// The choice for one bucket, and the workloads it was judged on (measured[first_measured ..
// first_measured + measured_count) of the device).
struct Entry {
  // The bucket: batch size and context length in [min, max], the rest exact.
  std::string_view family;
  std::int64_t batch_min, batch_max;
  std::int64_t context_min, context_max;
  int gqa_ratio;
  int head_dim;
  std::string_view dtype, kv_dtype;
  int page_size;
  // The choice.
  std::string_view variant;
  std::string_view config_key;
  std::array<ConfigValue, kMaxConfigValues> config;
  std::size_t config_count;
  // How good it is: chosen time / best time - 1 over the bucket's workloads it was measured on.
  double max_regret, mean_regret;
  int workloads;          // workloads measured in the bucket
  int covered_workloads;  // of those, measured with this config (fewer only when partial)
  bool partial;           // no config was measured on every workload of the bucket
  std::size_t first_measured, measured_count;

  constexpr const ConfigValue* find(std::string_view axis) const {
    for (std::size_t i = 0; i < config_count; ++i) {
      if (config[i].axis == axis) return &config[i];
    }
    return nullptr;
  }
};

// A workload of a bucket, with provenance: where the chosen config's time and the workload's own
// best time come from.
struct Measured {
  std::string_view workload, workload_hash;
  std::int64_t batch_size, context_len;  // the workload's own values
  bool chosen_measured;                  // false: the entry's config was not measured here
  double chosen_median_us;  // the entry's config on this workload (0 if not measured)
  double slowdown;          // chosen_median_us / best_median_us - 1 (0 if not measured)
  std::int64_t chosen_run_id;
  std::string_view chosen_run_uid, chosen_measurement_uid;
  double best_median_us;  // the fastest (variant, config) measured on it
  std::string_view best_variant, best_config_key;
  std::int64_t best_run_id;
  std::string_view best_measurement_uid;
};

struct Device {
  std::string_view name, uuid, fingerprint;
  // The NVIDIA driver ("580.159.04"; empty: unknown), the CUDA version it supports ("13.0"), the
  // toolkit attn-bench was built with and NVRTC.
  std::string_view driver_version, cuda_driver_version, cuda_version, nvrtc_version;
  int sm_count;
  const Entry* entries;
  std::size_t entry_count;
  const Measured* measured;
  std::size_t measured_count;
};

namespace detail {

// Bucket of a batch size or context length: k holds 2^(k-1) + 1 .. 2^k, 0 holds 0 and 1.
constexpr int pow2_bucket(std::int64_t value) {
  int k = 0;
  for (std::int64_t p = 1; p < value && k < 62; p *= 2) ++k;
  return k;
}

constexpr int distance(int a, int b) {
  return a < b ? b - a : a - b;
}

constexpr bool same_class(const Entry& e, const Query& q) {
  const std::string_view kv = q.kv_dtype.empty() ? q.dtype : q.kv_dtype;
  return e.family == q.family && e.gqa_ratio == q.gqa_ratio && e.head_dim == q.head_dim &&
         e.dtype == q.dtype && e.kv_dtype == kv && e.page_size == q.page_size;
}

}  // namespace detail

// The entry whose bucket holds the query; nullptr when there is none.
constexpr const Entry* select_exact(const Device& device, const Query& q) {
  const int b = detail::pow2_bucket(q.batch_size), c = detail::pow2_bucket(q.context_len);
  for (std::size_t i = 0; i < device.entry_count; ++i) {
    const Entry& e = device.entries[i];
    if (detail::same_class(e, q) && detail::pow2_bucket(e.batch_max) == b &&
        detail::pow2_bucket(e.context_max) == c) {
      return &e;
    }
  }
  return nullptr;
}

// The entry whose bucket holds the query, else the nearest bucket of the same family, GQA ratio,
// head dim, dtypes and page size: fewest power-of-two steps of batch size plus context length,
// the larger bucket on a tie. nullptr when no entry has that family, GQA ratio, head dim, dtypes
// and page size (a config tuned for another of those may not even run).
constexpr const Entry* select(const Device& device, const Query& q) {
  const int b = detail::pow2_bucket(q.batch_size), c = detail::pow2_bucket(q.context_len);
  const Entry* nearest = nullptr;
  int nearest_distance = 0;
  for (std::size_t i = 0; i < device.entry_count; ++i) {
    const Entry& e = device.entries[i];
    if (!detail::same_class(e, q)) continue;
    const int d = detail::distance(detail::pow2_bucket(e.batch_max), b) +
                  detail::distance(detail::pow2_bucket(e.context_max), c);
    if (d == 0) return &e;
    const bool larger =
        nearest != nullptr &&
        (e.batch_max > nearest->batch_max ||
         (e.batch_max == nearest->batch_max && e.context_max > nearest->context_max));
    if (nearest == nullptr || d < nearest_distance || (d == nearest_distance && larger)) {
      nearest = &e;
      nearest_distance = d;
    }
  }
  return nearest;
}

// ---------------------------------------------------------------------------
// Device 0: NVIDIA H100 80GB HBM3
//   uuid GPU-f9da2503-67b4-3b23-234d-60bc7a6e3b03
//   fingerprint 4b1d92582d68af814ea35238137dc75cbda4ccdc1543bc60d70b5dcdc01344d3
//   gpu, compute 9.0, 132 SMs, 85017493504 bytes of memory, SM clock 1980 MHz, memory clock 2619 MHz
//   driver unknown (supports CUDA 13.0), CUDA 13.0, NVRTC 13.0
//   ceiling bf16_tflops 728.717 (2026-11-21T21:07:35.854Z)
//   ceiling copy_gbps 2819.76 (2026-11-21T21:07:35.854Z)
//   ceiling memcpy_gbps 2989.92 (2026-11-21T21:07:35.854Z)
//   ceiling read_gbps 3062.79 (2026-11-21T21:07:35.854Z)
//   5 buckets from 633 measurements; the runs they come from:
//   run 1 (dfc068e0f92c33937eb762bd886c730c): attn-tune tune 0.1.0 (commit b18251fcaabe41cf5c03252e1144602547c9a964), 2026-11-21T21:08:15.171Z, completed
//     build/apps/attn-tune tune decode-llama3-8b-64x4096 --variant 'paged_decode.*' --strategy exhaustive -a tile_tokens=16,32,64 -a stages=2,3,4 -a warps=2,4,8 -a heads_per_cta=4,8 -a num_splits=0,1,8 --db /root/out/generations-H100.db --deadline compile=120,verify=30,measure=120
//   run 2 (575a0d438369fc3756df73fc59e5037a): attn-tune tune 0.1.0 (commit b18251fcaabe41cf5c03252e1144602547c9a964), 2026-11-21T21:08:21.807Z, completed
//     build/apps/attn-tune tune decode-llama3-70b-tp8 --variant 'paged_decode.*' --strategy exhaustive -a tile_tokens=16,32,64 -a stages=2,3,4 -a warps=2,4,8 -a heads_per_cta=4,8 -a num_splits=0,1,8 --db /root/out/generations-H100.db --deadline compile=120,verify=30,measure=120
//   run 3 (af1e2ea969be9f9c79fbea2ffc4fba68): attn-tune tune 0.1.0 (commit b18251fcaabe41cf5c03252e1144602547c9a964), 2026-11-21T21:08:24.426Z, completed
//     build/apps/attn-tune tune prefix-prefill-llama3-8b-8x2048-512 --variant 'prefix_prefill.*' --strategy halving --db /root/out/generations-H100.db --deadline compile=120,verify=30,measure=120
//   run 4 (ba773daea2722cb9df88736c5de4b851): attn-tune tune 0.1.0 (commit b18251fcaabe41cf5c03252e1144602547c9a964), 2026-11-21T21:08:46.156Z, completed
//     build/apps/attn-tune tune prefill-dense-d128-4x4096-causal --variant 'flash_fwd.*' --strategy exhaustive --db /root/out/generations-H100.db --deadline compile=120,verify=30,measure=120
//   run 5 (7f9b783d69d98b693dab899f657aec9c): attn-tune tune 0.1.0 (commit b18251fcaabe41cf5c03252e1144602547c9a964), 2026-11-21T21:08:56.621Z, completed
//     build/apps/attn-tune tune prefill-dense-d128-16x1024 --variant 'flash_fwd.*' --strategy exhaustive --db /root/out/generations-H100.db --deadline compile=120,verify=30,measure=120
// Coverage:
//   flash_fwd: 2 of 2 buckets exported, 0 measured with nothing passed, 0 with no data (the cross product of the measured axis values)
//     gqa 1, head_dim 128, bf16, page 16 (rows batch size, columns context length):
//                [0, 1]
//       [3, 4]   x
//       [9, 16]  x
//   paged_decode: 2 of 2 buckets exported, 0 measured with nothing passed, 0 with no data (the cross product of the measured axis values)
//     gqa 4, head_dim 128, bf16, page 16 (rows batch size, columns context length):
//                 [2049, 4096]
//       [33, 64]  x
//     gqa 8, head_dim 128, bf16, page 16 (rows batch size, columns context length):
//                 [2049, 4096]
//       [33, 64]  x
//   prefix_prefill: 1 of 1 buckets exported, 0 measured with nothing passed, 0 with no data (the cross product of the measured axis values)
//     gqa 4, head_dim 128, bf16, page 16 (rows batch size, columns context length):
//               [1025, 2048]
//       [5, 8]  x
//     (x exported, ! measured but no usable passed result, . no data; batch size and context length in power-of-two buckets)

inline constexpr Measured kMeasured0[] = {
    {"prefill-dense-d128-4x4096-causal", "7a0e71661a8c6bd9dbcb55d401ef566c11eaf74098d15f7f11b5c4782d8d1854", 4, 0, true, 501.96799635887146, 0.0, 4, "ba773daea2722cb9df88736c5de4b851", "f09b7ebd8151b2cdc695ac9def640568", 501.96799635887146, "flash_fwd.sm90_wgmma", "consumers=2,stages=2,tile_m=128,tile_n=128", 4, "f09b7ebd8151b2cdc695ac9def640568"},
    {"prefill-dense-d128-16x1024", "dddad9f2e142b9d75c8c644838c32a66062b96119b11a3a35d1087b7bce07d80", 16, 0, true, 287.08800673484802, 0.0, 5, "7f9b783d69d98b693dab899f657aec9c", "846e89a98a6637c7ff6d0a06ec66326a", 287.08800673484802, "flash_fwd.sm90_wgmma", "consumers=2,stages=2,tile_m=128,tile_n=128", 5, "846e89a98a6637c7ff6d0a06ec66326a"},
    {"decode-llama3-8b-64x4096", "46563be189b24a4b9fa24e122f3a3ba728cbcdc05651c82a46fd67cf287db642", 64, 4096, true, 371.21599912643433, 0.0, 1, "dfc068e0f92c33937eb762bd886c730c", "738b9f6fb5d4517694fca42a42ae1704", 371.21599912643433, "paged_decode.sm90_tma", "num_splits=1,stages=2,tile_tokens=64,warps=4", 1, "738b9f6fb5d4517694fca42a42ae1704"},
    {"decode-llama3-70b-tp8", "f1e93f49f15fe2b2369948818e9f6f07778c0d4eeb64ba543dff9ee956ffe62b", 64, 4096, true, 68.431999534368515, 0.0, 2, "575a0d438369fc3756df73fc59e5037a", "fe5a4bb0bbc8f2fc4c122c29ae1b4f93", 68.431999534368515, "paged_decode.sm90_tma", "num_splits=8,stages=2,tile_tokens=32,warps=2", 2, "fe5a4bb0bbc8f2fc4c122c29ae1b4f93"},
    {"prefix-prefill-llama3-8b-8x2048-512", "93e649b94ab6b4f245f3bb1db89b198beed2915de03e580b9765cecd3fd2b9f0", 8, 2048, true, 354.68800365924835, 0.0, 3, "af1e2ea969be9f9c79fbea2ffc4fba68", "7258a3fb5e9e1108a1ff01cc82419719", 354.68800365924835, "prefix_prefill.sm90_wgmma", "consumers=2,stages=2,tile_m=128,tile_n=128", 3, "7258a3fb5e9e1108a1ff01cc82419719"},
};

inline constexpr Entry kEntries0[] = {
    // flash_fwd: batch [3, 4], context [0, 1], gqa 1, head_dim 128, bf16, page 16: regret max 0.00%, mean 0.00% over 1 of 1 workloads
    {"flash_fwd", 3, 4, 0, 1, 1, 128, "bf16", "bf16", 16,
     "flash_fwd.sm90_wgmma", "consumers=2,stages=2,tile_m=128,tile_n=128", {{{"consumers", 2}, {"stages", 2}, {"tile_m", 128}, {"tile_n", 128}}}, 4,
     0.0, 0.0, 1, 1, false, 0, 1},
    // flash_fwd: batch [9, 16], context [0, 1], gqa 1, head_dim 128, bf16, page 16: regret max 0.00%, mean 0.00% over 1 of 1 workloads
    {"flash_fwd", 9, 16, 0, 1, 1, 128, "bf16", "bf16", 16,
     "flash_fwd.sm90_wgmma", "consumers=2,stages=2,tile_m=128,tile_n=128", {{{"consumers", 2}, {"stages", 2}, {"tile_m", 128}, {"tile_n", 128}}}, 4,
     0.0, 0.0, 1, 1, false, 1, 1},
    // paged_decode: batch [33, 64], context [2049, 4096], gqa 4, head_dim 128, bf16, page 16: regret max 0.00%, mean 0.00% over 1 of 1 workloads
    {"paged_decode", 33, 64, 2049, 4096, 4, 128, "bf16", "bf16", 16,
     "paged_decode.sm90_tma", "num_splits=1,stages=2,tile_tokens=64,warps=4", {{{"num_splits", 1}, {"stages", 2}, {"tile_tokens", 64}, {"warps", 4}}}, 4,
     0.0, 0.0, 1, 1, false, 2, 1},
    // paged_decode: batch [33, 64], context [2049, 4096], gqa 8, head_dim 128, bf16, page 16: regret max 0.00%, mean 0.00% over 1 of 1 workloads
    {"paged_decode", 33, 64, 2049, 4096, 8, 128, "bf16", "bf16", 16,
     "paged_decode.sm90_tma", "num_splits=8,stages=2,tile_tokens=32,warps=2", {{{"num_splits", 8}, {"stages", 2}, {"tile_tokens", 32}, {"warps", 2}}}, 4,
     0.0, 0.0, 1, 1, false, 3, 1},
    // prefix_prefill: batch [5, 8], context [1025, 2048], gqa 4, head_dim 128, bf16, page 16: regret max 0.00%, mean 0.00% over 1 of 1 workloads
    {"prefix_prefill", 5, 8, 1025, 2048, 4, 128, "bf16", "bf16", 16,
     "prefix_prefill.sm90_wgmma", "consumers=2,stages=2,tile_m=128,tile_n=128", {{{"consumers", 2}, {"stages", 2}, {"tile_m", 128}, {"tile_n", 128}}}, 4,
     0.0, 0.0, 1, 1, false, 4, 1},
};

// ---------------------------------------------------------------------------
// Device 1: NVIDIA H200
//   uuid GPU-285b6bf2-2726-4780-e6d7-b7f9188f54d3
//   fingerprint 50e4d5f74c08c768bf179c41037242dff1d59cf9be2508811f094341655cb0be
//   gpu, compute 9.0, 132 SMs, 150109880320 bytes of memory, SM clock 1980 MHz, memory clock 3201 MHz
//   driver unknown (supports CUDA 13.0), CUDA 13.0, NVRTC 13.0
//   ceiling bf16_tflops 713.154 (2026-11-21T21:05:29.782Z)
//   ceiling copy_gbps 3945.96 (2026-11-21T21:05:29.782Z)
//   ceiling memcpy_gbps 4240.15 (2026-11-21T21:05:29.782Z)
//   ceiling read_gbps 4333.52 (2026-11-21T21:05:29.782Z)
//   5 buckets from 633 measurements; the runs they come from:
//   run 6 (ced2406d543d8bf34354d9930d135552): attn-tune tune 0.1.0 (commit b18251fcaabe41cf5c03252e1144602547c9a964), 2026-11-21T21:06:09.372Z, completed
//     build/apps/attn-tune tune decode-llama3-8b-64x4096 --variant 'paged_decode.*' --strategy exhaustive -a tile_tokens=16,32,64 -a stages=2,3,4 -a warps=2,4,8 -a heads_per_cta=4,8 -a num_splits=0,1,8 --db /root/out/generations-H200.db --deadline compile=120,verify=30,measure=120
//   run 7 (2785c1f034279aca97f0ff874d95e803): attn-tune tune 0.1.0 (commit b18251fcaabe41cf5c03252e1144602547c9a964), 2026-11-21T21:06:16.100Z, completed
//     build/apps/attn-tune tune decode-llama3-70b-tp8 --variant 'paged_decode.*' --strategy exhaustive -a tile_tokens=16,32,64 -a stages=2,3,4 -a warps=2,4,8 -a heads_per_cta=4,8 -a num_splits=0,1,8 --db /root/out/generations-H200.db --deadline compile=120,verify=30,measure=120
//   run 8 (dd35c75464c8d68202eb6be46208bb84): attn-tune tune 0.1.0 (commit b18251fcaabe41cf5c03252e1144602547c9a964), 2026-11-21T21:06:18.830Z, completed
//     build/apps/attn-tune tune prefix-prefill-llama3-8b-8x2048-512 --variant 'prefix_prefill.*' --strategy halving --db /root/out/generations-H200.db --deadline compile=120,verify=30,measure=120
//   run 9 (91b18edde4259974dfbda3960ec33c1d): attn-tune tune 0.1.0 (commit b18251fcaabe41cf5c03252e1144602547c9a964), 2026-11-21T21:06:40.716Z, completed
//     build/apps/attn-tune tune prefill-dense-d128-4x4096-causal --variant 'flash_fwd.*' --strategy exhaustive --db /root/out/generations-H200.db --deadline compile=120,verify=30,measure=120
//   run 10 (1b3bf8f380d08e8e1510da50dcadf073): attn-tune tune 0.1.0 (commit b18251fcaabe41cf5c03252e1144602547c9a964), 2026-11-21T21:06:49.881Z, completed
//     build/apps/attn-tune tune prefill-dense-d128-16x1024 --variant 'flash_fwd.*' --strategy exhaustive --db /root/out/generations-H200.db --deadline compile=120,verify=30,measure=120
// Coverage:
//   flash_fwd: 2 of 2 buckets exported, 0 measured with nothing passed, 0 with no data (the cross product of the measured axis values)
//     gqa 1, head_dim 128, bf16, page 16 (rows batch size, columns context length):
//                [0, 1]
//       [3, 4]   x
//       [9, 16]  x
//   paged_decode: 2 of 2 buckets exported, 0 measured with nothing passed, 0 with no data (the cross product of the measured axis values)
//     gqa 4, head_dim 128, bf16, page 16 (rows batch size, columns context length):
//                 [2049, 4096]
//       [33, 64]  x
//     gqa 8, head_dim 128, bf16, page 16 (rows batch size, columns context length):
//                 [2049, 4096]
//       [33, 64]  x
//   prefix_prefill: 1 of 1 buckets exported, 0 measured with nothing passed, 0 with no data (the cross product of the measured axis values)
//     gqa 4, head_dim 128, bf16, page 16 (rows batch size, columns context length):
//               [1025, 2048]
//       [5, 8]  x
//     (x exported, ! measured but no usable passed result, . no data; batch size and context length in power-of-two buckets)

inline constexpr Measured kMeasured1[] = {
    {"prefill-dense-d128-4x4096-causal", "7a0e71661a8c6bd9dbcb55d401ef566c11eaf74098d15f7f11b5c4782d8d1854", 4, 0, true, 504.41598892211914, 0.0, 9, "91b18edde4259974dfbda3960ec33c1d", "ccf85532231e29c77e74a1f7c33b292e", 504.41598892211914, "flash_fwd.sm90_wgmma", "consumers=2,stages=2,tile_m=128,tile_n=128", 9, "ccf85532231e29c77e74a1f7c33b292e"},
    {"prefill-dense-d128-16x1024", "dddad9f2e142b9d75c8c644838c32a66062b96119b11a3a35d1087b7bce07d80", 16, 0, true, 287.9679948091507, 0.0, 10, "1b3bf8f380d08e8e1510da50dcadf073", "b1a3df4cb4e0ef10e24305efb57b80d5", 287.9679948091507, "flash_fwd.sm90_wgmma", "consumers=2,stages=2,tile_m=128,tile_n=128", 10, "b1a3df4cb4e0ef10e24305efb57b80d5"},
    {"decode-llama3-8b-64x4096", "46563be189b24a4b9fa24e122f3a3ba728cbcdc05651c82a46fd67cf287db642", 64, 4096, true, 269.58400011062622, 0.0, 6, "ced2406d543d8bf34354d9930d135552", "d5cc81a4d4fb7b052dd234ae931475e7", 269.58400011062622, "paged_decode.sm90_tma", "num_splits=1,stages=2,tile_tokens=64,warps=4", 6, "d5cc81a4d4fb7b052dd234ae931475e7"},
    {"decode-llama3-70b-tp8", "f1e93f49f15fe2b2369948818e9f6f07778c0d4eeb64ba543dff9ee956ffe62b", 64, 4096, true, 53.087998181581497, 0.0, 7, "2785c1f034279aca97f0ff874d95e803", "b40f9d47e858730bb8eab7139f884773", 53.087998181581497, "paged_decode.sm90_tma", "num_splits=8,stages=2,tile_tokens=32,warps=2", 7, "b40f9d47e858730bb8eab7139f884773"},
    {"prefix-prefill-llama3-8b-8x2048-512", "93e649b94ab6b4f245f3bb1db89b198beed2915de03e580b9765cecd3fd2b9f0", 8, 2048, true, 354.91201281547546, 0.0, 8, "dd35c75464c8d68202eb6be46208bb84", "6d559b383b23f593db7a2cb5251d8f0e", 354.91201281547546, "prefix_prefill.sm90_wgmma", "consumers=2,stages=2,tile_m=128,tile_n=128", 8, "6d559b383b23f593db7a2cb5251d8f0e"},
};

inline constexpr Entry kEntries1[] = {
    // flash_fwd: batch [3, 4], context [0, 1], gqa 1, head_dim 128, bf16, page 16: regret max 0.00%, mean 0.00% over 1 of 1 workloads
    {"flash_fwd", 3, 4, 0, 1, 1, 128, "bf16", "bf16", 16,
     "flash_fwd.sm90_wgmma", "consumers=2,stages=2,tile_m=128,tile_n=128", {{{"consumers", 2}, {"stages", 2}, {"tile_m", 128}, {"tile_n", 128}}}, 4,
     0.0, 0.0, 1, 1, false, 0, 1},
    // flash_fwd: batch [9, 16], context [0, 1], gqa 1, head_dim 128, bf16, page 16: regret max 0.00%, mean 0.00% over 1 of 1 workloads
    {"flash_fwd", 9, 16, 0, 1, 1, 128, "bf16", "bf16", 16,
     "flash_fwd.sm90_wgmma", "consumers=2,stages=2,tile_m=128,tile_n=128", {{{"consumers", 2}, {"stages", 2}, {"tile_m", 128}, {"tile_n", 128}}}, 4,
     0.0, 0.0, 1, 1, false, 1, 1},
    // paged_decode: batch [33, 64], context [2049, 4096], gqa 4, head_dim 128, bf16, page 16: regret max 0.00%, mean 0.00% over 1 of 1 workloads
    {"paged_decode", 33, 64, 2049, 4096, 4, 128, "bf16", "bf16", 16,
     "paged_decode.sm90_tma", "num_splits=1,stages=2,tile_tokens=64,warps=4", {{{"num_splits", 1}, {"stages", 2}, {"tile_tokens", 64}, {"warps", 4}}}, 4,
     0.0, 0.0, 1, 1, false, 2, 1},
    // paged_decode: batch [33, 64], context [2049, 4096], gqa 8, head_dim 128, bf16, page 16: regret max 0.00%, mean 0.00% over 1 of 1 workloads
    {"paged_decode", 33, 64, 2049, 4096, 8, 128, "bf16", "bf16", 16,
     "paged_decode.sm90_tma", "num_splits=8,stages=2,tile_tokens=32,warps=2", {{{"num_splits", 8}, {"stages", 2}, {"tile_tokens", 32}, {"warps", 2}}}, 4,
     0.0, 0.0, 1, 1, false, 3, 1},
    // prefix_prefill: batch [5, 8], context [1025, 2048], gqa 4, head_dim 128, bf16, page 16: regret max 0.00%, mean 0.00% over 1 of 1 workloads
    {"prefix_prefill", 5, 8, 1025, 2048, 4, 128, "bf16", "bf16", 16,
     "prefix_prefill.sm90_wgmma", "consumers=2,stages=2,tile_m=128,tile_n=128", {{{"consumers", 2}, {"stages", 2}, {"tile_m", 128}, {"tile_n", 128}}}, 4,
     0.0, 0.0, 1, 1, false, 4, 1},
};

inline constexpr Device kDevices[] = {
    {"NVIDIA H100 80GB HBM3", "GPU-f9da2503-67b4-3b23-234d-60bc7a6e3b03", "4b1d92582d68af814ea35238137dc75cbda4ccdc1543bc60d70b5dcdc01344d3", "", "13.0", "13.0", "13.0", 132, kEntries0, sizeof(kEntries0) / sizeof(Entry), kMeasured0, sizeof(kMeasured0) / sizeof(Measured)},
    {"NVIDIA H200", "GPU-285b6bf2-2726-4780-e6d7-b7f9188f54d3", "50e4d5f74c08c768bf179c41037242dff1d59cf9be2508811f094341655cb0be", "", "13.0", "13.0", "13.0", 132, kEntries1, sizeof(kEntries1) / sizeof(Entry), kMeasured1, sizeof(kMeasured1) / sizeof(Measured)},
};

// The device whose fingerprint or UUID is `key`; nullptr when no table is for it.
constexpr const Device* find_device(std::string_view key) {
  for (const Device& d : kDevices) {
    if (d.fingerprint == key || d.uuid == key) return &d;
  }
  return nullptr;
}

// select() on the table of the device whose fingerprint or UUID is `key`.
constexpr const Entry* select(std::string_view device_key, const Query& q) {
  const Device* d = find_device(device_key);
  return d == nullptr ? nullptr : select(*d, q);
}

constexpr const Entry* select_exact(std::string_view device_key, const Query& q) {
  const Device* d = find_device(device_key);
  return d == nullptr ? nullptr : select_exact(*d, q);
}

}  // namespace attn_tuned
