// Which variants take which workloads: for every preset (workloads/presets/*.json) and every
// probe below (small workloads that each turn on one feature of the schema, or a few together),
// every variant (the test-only ones included) and three targets (an sm_90a and an sm_80 GPU
// described without one, and the CPU), whether the variant accepts the workload with its default
// config, and how many configs of its space it accepts. The table
// (tests/kernels/data/workload_verdicts.tsv) was first written from the refusal lists that each
// variant's supports() held before the feature contract; keeping it passing shows the contract
// declines what they declined.
//
// Rewrite it only on purpose (a variant that takes more or less), and say why in the commit:
//   ATTN_WORKLOAD_VERDICTS_WRITE=1 build/tests/attn_kernels_tests --gtest_filter=WorkloadVerdicts.*
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/registry.hpp"
#include "kernels/test_faults/fault_variants.hpp"
#include "tests/target_fixtures.hpp"
#include "workloads/presets.hpp"

namespace attn {
namespace {

const char* const kTablePath = ATTN_SOURCE_DIR "/tests/kernels/data/workload_verdicts.tsv";
const char* const kHeader = "workload\tvariant\ttarget\tdefault_config\taccepted_configs\n";

struct NamedTarget {
  std::string name;
  Target target;
};

std::vector<NamedTarget> verdict_targets() {
  return {{"sm_90a", testing::hopper_target()},
          {"sm_80", testing::ampere_target()},
          {"cpu", Target::cpu()}};
}

Registry registry_with_test_variants() {
  Registry registry = make_registry();
  if (!test_variants_enabled()) {
    add_test_fault_variants(registry);
    add_test_cpu_variants(registry);
  }
  return registry;
}

// Every config of the variant's space, in odometer order (the last axis fastest).
std::vector<KernelConfig> every_config(const std::vector<ConfigAxis>& axes) {
  std::vector<KernelConfig> configs(1);
  for (const ConfigAxis& axis : axes) {
    std::vector<KernelConfig> longer;
    for (const KernelConfig& prefix : configs) {
      for (int64_t value : axis.values) {
        KernelConfig config = prefix;
        config.set(axis.name, value);
        longer.push_back(std::move(config));
      }
    }
    configs = std::move(longer);
  }
  return configs;
}

using nlohmann::json;

// A small workload of each query shape: decode, prefill without context, prefill over a context,
// and a mixed batch (decodes beside a chunk of prefill).
json probe_base(const std::string& shape) {
  json sequences;
  if (shape == "decode") {
    sequences = json::array({{{"context_len", 99}, {"query_len", 1}},
                             {{"context_len", 36}, {"query_len", 1}},
                             {{"context_len", 299}, {"query_len", 1}}});
  } else if (shape == "prefill") {
    sequences = json::array(
        {{{"context_len", 0}, {"query_len", 128}}, {{"context_len", 0}, {"query_len", 70}}});
  } else if (shape == "prefix") {
    sequences = json::array(
        {{{"context_len", 100}, {"query_len", 40}}, {{"context_len", 64}, {"query_len", 17}}});
  } else {
    sequences = json::array(
        {{{"context_len", 200}, {"query_len", 1}}, {{"context_len", 50}, {"query_len", 33}}});
  }
  return {
      {"schema_version", 2},
      {"name", "probe-" + shape},
      {"model", {{"num_q_heads", 8}, {"num_kv_heads", 2}, {"head_dim", 128}, {"dtype", "bf16"}}},
      {"kv_cache", {{"page_size", 16}, {"layout", "NHD"}, {"allocation", "shuffled"}}},
      {"sequences", sequences},
      {"seed", 7}};
}

// One change of the base: a feature, a value of a valued feature, or a few together.
struct Probe {
  std::string name;
  void (*apply)(json& spec);
};

const std::vector<Probe>& probe_changes() {
  static const std::vector<Probe> probes = {
      {"plain", [](json&) {}},
      {"fp16", [](json& s) { s["model"]["dtype"] = "fp16"; }},
      {"non_causal", [](json& s) { s["mask"]["causal"] = false; }},
      {"window_32", [](json& s) { s["model"]["sliding_window"] = 32; }},
      {"window_past_every_key", [](json& s) { s["model"]["sliding_window"] = 100000; }},
      {"window_32_non_causal",
       [](json& s) {
         s["model"]["sliding_window"] = 32;
         s["mask"]["causal"] = false;
       }},
      {"soft_cap", [](json& s) { s["model"]["logits_soft_cap"] = 30.0; }},
      {"sinks", [](json& s) { s["model"]["attention_sinks"] = true; }},
      {"fp8_per_tensor", [](json& s) { s["model"]["kv_dtype"] = "fp8_e4m3"; }},
      {"fp8_per_head",
       [](json& s) {
         s["model"]["kv_dtype"] = "fp8_e4m3";
         s["model"]["kv_scale"] = "per_head";
       }},
      {"hnd", [](json& s) { s["kv_cache"]["layout"] = "HND"; }},
      {"vllm", [](json& s) { s["kv_cache"]["layout"] = "vllm"; }},
      {"fp8_vllm",
       [](json& s) {
         s["model"]["kv_dtype"] = "fp8_e4m3";
         s["kv_cache"]["layout"] = "vllm";
       }},
      {"d64", [](json& s) { s["model"]["head_dim"] = 64; }},
      {"d80", [](json& s) { s["model"]["head_dim"] = 80; }},
      {"d96", [](json& s) { s["model"]["head_dim"] = 96; }},
      {"d192", [](json& s) { s["model"]["head_dim"] = 192; }},
      {"d256", [](json& s) { s["model"]["head_dim"] = 256; }},
      {"page_1", [](json& s) { s["kv_cache"]["page_size"] = 1; }},
      {"page_5", [](json& s) { s["kv_cache"]["page_size"] = 5; }},
      {"page_64", [](json& s) { s["kv_cache"]["page_size"] = 64; }},
      {"page_256", [](json& s) { s["kv_cache"]["page_size"] = 256; }},
      {"mha", [](json& s) { s["model"]["num_kv_heads"] = 8; }},
      {"group_32",
       [](json& s) {
         s["model"]["num_q_heads"] = 32;
         s["model"]["num_kv_heads"] = 1;
       }},
      {"shared_prefix",
       [](json& s) {
         s["kv_cache"]["allocation"] = "shared_prefix";
         s["kv_cache"]["shared_prefix"] = {{"tokens", 32}, {"group_size", 2}};
       }},
      {"block_sparse",
       [](json& s) {
         s["mask"]["block_sparse"] = {
             {"block_size", 64}, {"local_blocks", 2}, {"vertical_stride", 2}};
       }},
      {"block_sparse_16_window",
       [](json& s) {
         s["mask"]["block_sparse"] = {
             {"block_size", 16}, {"local_blocks", 2}, {"vertical_stride", 3}};
         s["model"]["sliding_window"] = 40;
       }},
      {"explicit_causal",
       [](json& s) {
         s["mask"]["explicit"] = {{"kind", "causal"}};
       }},
      {"explicit_random",
       [](json& s) {
         s["mask"]["explicit"] = {{"kind", "random"}, {"density", 0.5}};
       }},
      {"cap_sinks_window_fp8_hnd",
       [](json& s) {
         s["model"]["logits_soft_cap"] = 50.0;
         s["model"]["attention_sinks"] = true;
         s["model"]["sliding_window"] = 48;
         s["model"]["kv_dtype"] = "fp8_e4m3";
         s["model"]["kv_scale"] = "per_head";
         s["kv_cache"]["layout"] = "HND";
       }},
  };
  return probes;
}

// name -> spec: every base with every change, and an explicit tree and branches mask (their
// query lengths are fixed by the mask).
std::vector<std::pair<std::string, WorkloadSpec>> probe_workloads() {
  std::vector<std::pair<std::string, WorkloadSpec>> out;
  for (const std::string shape : {"decode", "prefill", "prefix", "mixed"}) {
    for (const Probe& probe : probe_changes()) {
      json spec = probe_base(shape);
      probe.apply(spec);
      const std::string name = "probe:" + shape + "." + probe.name;
      out.emplace_back(name, parse_workload(spec.dump(), name));
    }
  }
  json tree = probe_base("prefix");
  for (json& seq : tree["sequences"]) seq["query_len"] = 3;
  tree["mask"]["explicit"] = {{"kind", "tree"}, {"parents", {-1, 0, 0}}};
  out.emplace_back("probe:prefix.explicit_tree", parse_workload(tree.dump(), "tree"));
  json branches = probe_base("prefix");
  for (json& seq : branches["sequences"]) seq["query_len"] = 8;
  branches["mask"]["explicit"] = {{"kind", "branches"}, {"branches", 2}};
  out.emplace_back("probe:prefix.explicit_branches", parse_workload(branches.dump(), "branches"));
  return out;
}

// Every preset, then every probe.
std::vector<std::pair<std::string, WorkloadSpec>> verdict_workloads() {
  std::vector<std::pair<std::string, WorkloadSpec>> out;
  for (const std::string& preset : preset_names()) out.emplace_back(preset, load_preset(preset));
  for (auto& probe : probe_workloads()) out.push_back(std::move(probe));
  return out;
}

struct Row {
  std::string key;      // workload, variant, target (tab-separated)
  std::string verdict;  // default config's accept/decline, accepted configs of the space
  std::string reason;   // the default config's reason, for a failure's message
};

std::vector<Row> current_rows() {
  const Registry registry = registry_with_test_variants();
  std::vector<Row> rows;
  for (const auto& [workload, spec] : verdict_workloads()) {
    const Batch batch = generate_batch(spec);
    const BatchFeatures used = batch_features(batch);
    for (const auto& variant : registry.variants()) {
      for (const NamedTarget& t : verdict_targets()) {
        const Support by_default =
            variant->check(batch, variant->default_config(batch, t.target), t.target);
        const std::vector<KernelConfig> space = every_config(variant->space(batch, t.target));
        size_t accepted = 0;
        for (const KernelConfig& config : space) {
          if (variant->check(batch, used, config, t.target)) ++accepted;
        }
        rows.push_back({workload + "\t" + variant->name() + "\t" + t.name,
                        std::string(by_default ? "accept" : "decline") + "\t" +
                            std::to_string(accepted) + "/" + std::to_string(space.size()),
                        by_default.reason});
      }
    }
  }
  return rows;
}

std::map<std::string, std::string> read_table() {
  std::ifstream in(kTablePath);
  EXPECT_TRUE(in.good()) << "cannot read " << kTablePath;
  std::map<std::string, std::string> table;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    // key: the first three columns (workload, variant, target); verdict: the last two.
    size_t tab = 0;
    for (int i = 0; i < 3; ++i) tab = line.find('\t', tab) + 1;
    table[line.substr(0, tab - 1)] = line.substr(tab);
  }
  return table;
}

TEST(WorkloadVerdicts, EveryVariantTakesTheWorkloadsItTookBefore) {
  const std::vector<Row> rows = current_rows();
  if (std::getenv("ATTN_WORKLOAD_VERDICTS_WRITE") != nullptr) {
    std::ofstream out(kTablePath);
    out << kHeader;
    for (const Row& row : rows) out << row.key << "\t" << row.verdict << "\n";
    ASSERT_TRUE(out.good()) << "cannot write " << kTablePath;
    GTEST_SKIP() << "wrote " << rows.size() << " rows to " << kTablePath;
  }
  const std::map<std::string, std::string> table = read_table();
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(rows.size(), table.size()) << "workloads or variants were added or removed";
  size_t differ = 0;
  for (const Row& row : rows) {
    const auto it = table.find(row.key);
    if (it == table.end()) {
      ADD_FAILURE() << "no recorded verdict for " << row.key;
      continue;
    }
    if (it->second != row.verdict && ++differ <= 20) {
      ADD_FAILURE() << row.key << ": recorded " << it->second << ", now " << row.verdict
                    << (row.reason.empty() ? "" : " (" + row.reason + ")");
    }
  }
  EXPECT_EQ(differ, 0u) << "rows whose verdict changed";
}

}  // namespace
}  // namespace attn
