// The peer runner's results file read into measurements (measure/peer_results.hpp): statistics,
// noise and stability computed here from the raw samples, the verdict re-checked with our
// tolerance, problems reported with their line and field, and the family whose work model a
// peer is given.
#include "measure/peer_results.hpp"

#include <gtest/gtest.h>

#include "base/errors.hpp"
#include "base/sha256.hpp"
#include "workloads/presets.hpp"

namespace attn {
namespace {

using nlohmann::json;

json header_for(const WorkloadSpec& spec) {
  const json canonical = json::parse(canonical_json(spec));
  return {{"kind", "header"},
          {"format", "attn-bench peer results"},
          {"format_version", 1},
          {"spec_hash", content_hash(spec)},
          {"spec", canonical},
          {"workload", spec.name},
          {"output_dtype", "bf16"},
          {"tolerance", 5e-3},
          {"reference", "gpu_naive_fp32"},
          {"policy",
           {{"name", "confirm"},
            {"min_samples", 20},
            {"max_samples", 2000},
            {"noise", 0.005},
            {"max_seconds", 15.0},
            {"flush_l2", true}}},
          {"device", {{"kind", "gpu"}, {"uuid", "GPU-abc"}, {"name", "NVIDIA H100"}}}};
}

json row(const std::string& variant, const std::string& disposition, double rel_l2,
         std::vector<double> samples, const std::string& stop = "noise") {
  json r = {{"kind", "peer"},
            {"variant", variant},
            {"library", "torch"},
            {"disposition", disposition},
            {"reason", ""},
            {"config", {{"backend", "flash"}}},
            {"verification", nullptr},
            {"timing", nullptr}};
  if (disposition == "passed" || disposition == "incorrect") {
    r["verification"] = {{"checked", true},       {"max_abs_error", 1e-3}, {"rel_l2_error", rel_l2},
                         {"nonfinite", 0},        {"elements", 100},       {"tolerance", 1.0},
                         {"reference", "ignored"}};
  }
  if (!samples.empty()) {
    r["timing"] = {{"timer", "events"},
                   {"samples_us", samples},
                   {"warmup_samples", 5},
                   {"stop_reason", stop},
                   {"noise", 0.0}};
  }
  return r;
}

std::string lines(const std::vector<json>& values) {
  std::string text;
  for (const json& v : values) text += v.dump() + "\n";
  return text;
}

TEST(PeerResults, StatisticsAndVerdictAreComputedHere) {
  const WorkloadSpec spec = load_preset("default");
  const PeerResults results = parse_peer_results(
      lines({header_for(spec),
             row("peer.torch.sdpa_flash", "passed", 1e-3, {10, 11, 12, 13, 100}, "max_samples"),
             // Says passed, with an error over bf16's tolerance: recorded incorrect, untimed.
             row("peer.torch.sdpa_cudnn", "passed", 6e-3, {9, 9, 9}),
             row("peer.flashinfer.decode", "unsupported", 0, {})}),
      "test");
  ASSERT_EQ(results.rows.size(), 3u);
  EXPECT_EQ(results.header.device_uuid(), "GPU-abc");
  const Measurement& flash = results.rows[0].measurement;
  EXPECT_EQ(flash.disposition, Disposition::passed);
  EXPECT_EQ(flash.backend, "cuda");
  EXPECT_EQ(flash.policy, "confirm");
  EXPECT_EQ(flash.config_key, "");
  EXPECT_NE(flash.config_json.find("\"peer_library\":\"torch\""), std::string::npos);
  EXPECT_DOUBLE_EQ(flash.stats.median, 12);
  EXPECT_EQ(flash.stats.count, 5u);
  EXPECT_EQ(flash.timing.outliers, 1);  // 100 us is far beyond 5 MADs
  EXPECT_GT(flash.timing.noise, 0);
  EXPECT_DOUBLE_EQ(flash.timing.noise_target, 0.005);
  EXPECT_DOUBLE_EQ(flash.verification.tolerance, 5e-3) << "our tolerance, not the file's";
  EXPECT_EQ(flash.verification.reference, "gpu_naive_fp32");
  // Stopped at the sample cap with a noise above 0.5%: flagged, as ours would be.
  EXPECT_TRUE(flash.unstable);
  EXPECT_NE(flash.unstable_reason.find("max_samples"), std::string::npos) << flash.unstable_reason;
  const Measurement& cudnn = results.rows[1].measurement;
  EXPECT_EQ(cudnn.disposition, Disposition::incorrect);
  EXPECT_TRUE(cudnn.samples_us.empty());
  EXPECT_EQ(cudnn.stats.count, 0u);
  EXPECT_EQ(results.rows[2].measurement.disposition, Disposition::unsupported);
}

TEST(PeerResults, ProblemsNameTheLineAndTheField) {
  const WorkloadSpec spec = load_preset("default");
  json bad_header = header_for(spec);
  bad_header["format_version"] = 2;
  json bad_row = row("peer.torch.flex", "passed", 1e-3, {1, 2});
  bad_row["timing"]["stop_reason"] = "bored";
  try {
    parse_peer_results(lines({bad_header, bad_row, row("peer.torch.flex", "unsupported", 0, {})}),
                       "results.jsonl");
    FAIL() << "accepted";
  } catch (const InputError& e) {
    const std::vector<std::string>& p = e.problems();
    ASSERT_EQ(p.size(), 3u) << e.what();
    EXPECT_EQ(p[0], "line 1: /format_version: 2: this attn-bench reads 1");
    EXPECT_EQ(p[1].rfind("line 2: /timing/stop_reason: 'bored'", 0), 0u) << p[1];
    EXPECT_EQ(p[2], "line 3: /variant: 'peer.torch.flex' appears twice");
  }
  EXPECT_THROW(parse_peer_results("", "empty"), InputError);
  EXPECT_THROW(parse_peer_results("[1, 2]\n", "array"), InputError);
}

TEST(PeerResults, TheWorkloadRecordIsTheOneRunStores) {
  const WorkloadSpec spec = load_preset("decode-llama3-8b-64x4096");
  const PeerResults results = parse_peer_results(lines({header_for(spec)}), "test");
  const WorkloadRecord record = peer_workload_record(results.header, "test");
  EXPECT_EQ(record.hash, content_hash(spec));
  EXPECT_EQ(record.canonical_json, canonical_json(spec));
  EXPECT_EQ(record.name, "decode-llama3-8b-64x4096");
  PeerResultsHeader changed = results.header;
  changed.spec["seed"] = 1;
  EXPECT_THROW(peer_workload_record(changed, "test"), InputError);
}

TEST(PeerResults, PeersTakeTheWorkModelOfTheBatchsFamily) {
  const Registry registry = make_registry();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"decode-llama3-8b-64x4096", "paged_decode"},
      {"prefix-prefill-llama3-8b-8x2048-512", "prefix_prefill"},
      {"prefill-phi3-small-block-sparse", "blocksparse"},
      {"prefill-dense-d128-4x4096-causal", "flash_fwd"},
      {"mixed-chunked-prefill-llama3-8b", "prefix_prefill"}};
  for (const auto& [preset, family] : cases) {
    const Batch batch = generate_batch(load_preset(preset));
    EXPECT_EQ(to_string(peer_family(batch, registry)), family) << preset;
    Measurement m;
    apply_peer_work(batch, registry, m);
    const Work work = registry.find(family + ".cpu_reference")->work(batch);
    EXPECT_EQ(m.family, family);
    EXPECT_DOUBLE_EQ(m.bytes, work.bytes) << preset;
    ASSERT_TRUE(m.unique_bytes.has_value()) << preset;
    EXPECT_DOUBLE_EQ(*m.unique_bytes, work.unique_bytes) << preset;
    EXPECT_DOUBLE_EQ(m.flops, work.flops) << preset;
  }
  EXPECT_TRUE(is_peer_variant("peer.torch.sdpa_flash"));
  EXPECT_FALSE(is_peer_variant("paged_decode.sm80_simt"));
}

}  // namespace
}  // namespace attn
