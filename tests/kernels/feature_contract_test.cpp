// The feature contract (docs/architecture.md): every variant declares the features it implements
// (Variant::features()) and Variant::check() declines it for every other one a batch uses.
//  - Each feature and value of the schema, on a real batch: every variant declares it or is
//    declined naming it.
//  - A feature added tomorrow (a test-only flag no variant has heard of) is declined by every
//    variant, naming it.
//  - Declarations use only the schema's names and values (a typo would decline silently).
//  - The CPU oracle implements the whole schema, and each family's CPU reference takes at least
//    what the family's GPU variants take.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "kernels/reference/cpu_reference_variant.hpp"
#include "kernels/registry.hpp"
#include "kernels/test_faults/fault_variants.hpp"
#include "tests/target_fixtures.hpp"
#include "workloads/presets.hpp"

namespace attn {
namespace {

using nlohmann::json;

Registry every_variant() {
  Registry registry = make_registry();
  if (!test_variants_enabled()) {
    add_test_fault_variants(registry);
    add_test_cpu_variants(registry);
  }
  return registry;
}

std::vector<Target> contract_targets() {
  return {testing::hopper_target(), testing::ampere_target(), Target::cpu()};
}

// Three sequences of 40 cached tokens and `query_len` new ones each.
json contract_base(int query_len) {
  return {
      {"schema_version", 2},
      {"name", "contract"},
      {"model", {{"num_q_heads", 8}, {"num_kv_heads", 2}, {"head_dim", 128}, {"dtype", "bf16"}}},
      {"kv_cache", {{"page_size", 16}, {"layout", "NHD"}, {"allocation", "shuffled"}}},
      {"sequences", json::array({{{"context_len", 40}, {"query_len", query_len}, {"count", 3}}})},
      {"seed", 3}};
}

Batch contract_batch(const json& spec) {
  return generate_batch(parse_workload(spec.dump(), "contract"));
}

// A batch that uses `value` of feature `name` (a flag: value ""), or nullopt when this test
// knows of no such batch yet.
std::optional<Batch> batch_using(const std::string& name, const std::string& value) {
  json spec = contract_base(4);
  if (name == feature::kQueries) {
    if (value == "decode") return contract_batch(contract_base(1));
    if (value == "prefill") return contract_batch(spec);
    if (value == "mixed") {
      spec["sequences"].push_back({{"context_len", 7}, {"query_len", 1}});
      return contract_batch(spec);
    }
  } else if (name == feature::kMask) {
    if (value == "causal") return contract_batch(spec);
    if (value == "non_causal") spec["mask"]["causal"] = false;
    if (value == "explicit") spec["mask"]["explicit"] = {{"kind", "causal"}};
    if (value == "block_sparse" || value == "block_sparse_non_causal") {
      spec["mask"]["block_sparse"] = {
          {"block_size", 16}, {"local_blocks", 1}, {"vertical_stride", 2}};
      Batch batch = contract_batch(spec);
      batch.causal = value == "block_sparse";  // the workload schema needs causal with a layout
      return batch;
    }
    if (spec.contains("mask")) return contract_batch(spec);
  } else if (name == feature::kSlidingWindow) {
    spec["model"]["sliding_window"] = 8;
    return contract_batch(spec);
  } else if (name == feature::kLogitsSoftCap) {
    spec["model"]["logits_soft_cap"] = 30.0;
    return contract_batch(spec);
  } else if (name == feature::kAttentionSinks) {
    spec["model"]["attention_sinks"] = true;
    return contract_batch(spec);
  } else if (name == feature::kSharedPrefix) {
    spec["kv_cache"]["allocation"] = "shared_prefix";
    spec["kv_cache"]["shared_prefix"] = {{"tokens", 32}, {"group_size", 3}};
    return contract_batch(spec);
  } else if (name == feature::kKvLayout) {
    spec["kv_cache"]["layout"] = value == "nhd" ? "NHD" : value == "hnd" ? "HND" : value;
    return contract_batch(spec);
  } else if (name == feature::kDtype) {
    spec["model"]["dtype"] = value;
    return contract_batch(spec);
  } else if (name == feature::kKvDtype) {
    if (value == "fp8_e4m3.per_tensor" || value == "fp8_e4m3.per_head") {
      spec["model"]["kv_dtype"] = "fp8_e4m3";
      spec["model"]["kv_scale"] = value == "fp8_e4m3.per_head" ? "per_head" : "per_tensor";
      return contract_batch(spec);
    }
    if (value == "bf16" || value == "fp16") {  // K/V of the other 16-bit dtype: built in code
      spec["model"]["dtype"] = value == "bf16" ? "fp16" : "bf16";
      Batch batch = contract_batch(spec);
      batch.kv_dtype = *dtype_from_string(value);
      return batch;
    }
  } else if (name == feature::kHeadDim) {
    spec["model"]["head_dim"] = std::stoi(value);
    return contract_batch(spec);
  } else if (name == feature::kPageSize) {
    spec["kv_cache"]["page_size"] = std::stoi(value);
    return contract_batch(spec);
  } else if (name == feature::kVHeadDim) {  // V narrower than the widest Q/K head dim
    spec["model"]["head_dim"] = 256;
    spec["model"]["v_head_dim"] = std::stoi(value);
    return contract_batch(spec);
  } else if (name == feature::kLatentAttention || name == feature::kKvLoraRank ||
             name == feature::kQkRopeHeadDim) {
    json latent = contract_base(1);
    latent["model"] = {{"attention", "mla"},
                       {"num_q_heads", 8},
                       {"kv_lora_rank", 512},
                       {"qk_rope_head_dim", 64},
                       {"dtype", "bf16"}};
    if (name == feature::kKvLoraRank) latent["model"]["kv_lora_rank"] = std::stoi(value);
    if (name == feature::kQkRopeHeadDim) latent["model"]["qk_rope_head_dim"] = std::stoi(value);
    return contract_batch(latent);
  }
  return std::nullopt;
}

// Every (name, value) of the schema: a flag once with value "", a choice per value, a number per
// value.
std::vector<std::pair<std::string, std::string>> schema_entries() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const FeatureInfo& info : feature_schema()) {
    if (info.kind == FeatureKind::flag) out.emplace_back(info.name, "");
    for (const std::string& value : info.choices) out.emplace_back(info.name, value);
    for (int64_t n : info.numbers) out.emplace_back(info.name, std::to_string(n));
  }
  return out;
}

FeatureUse schema_use(const std::string& name, const std::string& value) {
  const FeatureInfo* info = find_feature(name);
  if (info->kind == FeatureKind::flag) return FeatureUse::flag(name, name);
  if (info->kind == FeatureKind::number) return FeatureUse::integer(name, std::stoll(value), name);
  return FeatureUse::choice(name, value, name);
}

TEST(FeatureContract, EveryFeatureOfTheSchemaIsDeclaredOrDeclinedByEveryVariant) {
  const Registry registry = every_variant();
  size_t declines = 0;
  for (const auto& [name, value] : schema_entries()) {
    const std::string entry = name + (value.empty() ? "" : "=" + value);
    const std::optional<Batch> batch = batch_using(name, value);
    ASSERT_TRUE(batch.has_value())
        << "no test batch uses " << entry << ": add one to batch_using() in this file";
    const BatchFeatures used = batch_features(*batch);
    const FeatureUse* use = used.find(name);
    ASSERT_NE(use, nullptr) << "the batch for " << entry << " does not report it";
    ASSERT_EQ(use->value, value) << entry;
    for (const auto& variant : registry.variants()) {
      if (variant->features().implements(*use)) continue;
      for (const Target& target : contract_targets()) {
        const Support s = variant->check(*batch, variant->default_config(*batch, target), target);
        EXPECT_FALSE(s.ok) << variant->name() << " takes " << entry << " on " << target.arch
                           << " without declaring it";
        EXPECT_NE(s.reason.find(use->description), std::string::npos)
            << variant->name() << " on " << entry << ": " << s.reason;
        ++declines;
      }
    }
  }
  EXPECT_GT(declines, 0u);
}

// For each variant, a workload it takes on its target: presets first, then small workloads of the
// shapes no preset has (an explicit mask).
std::vector<Batch> accepting_candidates() {
  std::vector<Batch> out;
  for (const std::string& preset : preset_names())
    out.push_back(generate_batch(load_preset(preset)));
  json masked = contract_base(4);
  masked["mask"]["explicit"] = {{"kind", "causal"}};
  out.push_back(contract_batch(masked));
  return out;
}

TEST(FeatureContract, AFeatureNoVariantKnowsIsDeclinedByEveryVariantNamingIt) {
  const Registry registry = every_variant();
  const std::vector<Batch> candidates = accepting_candidates();
  const FeatureUse tomorrow = FeatureUse::flag("test_only_feature", "a test-only feature");
  for (const auto& variant : registry.variants()) {
    const Target target =
        variant->backend() == Backend::cpu ? Target::cpu() : testing::hopper_target();
    bool found = false;
    for (const Batch& batch : candidates) {
      const KernelConfig config = variant->default_config(batch, target);
      BatchFeatures used = batch_features(batch);
      if (!variant->check(batch, used, config, target)) continue;
      found = true;
      used.uses.push_back(tomorrow);
      const Support s = variant->check(batch, used, config, target);
      EXPECT_FALSE(s.ok) << variant->name() << " took a feature it never declared";
      EXPECT_EQ(s.reason, "does not implement: a test-only feature") << variant->name();
      break;
    }
    EXPECT_TRUE(found) << variant->name() << " takes none of the candidate workloads";
  }
}

TEST(FeatureContract, DeclarationsUseOnlyTheSchemasNamesAndValues) {
  const Registry registry = every_variant();
  for (const auto& variant : registry.variants()) {
    const FeatureSet declared = variant->features();
    EXPECT_FALSE(declared.entries().empty()) << variant->name();
    for (const auto& [name, value] : declared.entries()) {
      const FeatureInfo* info = find_feature(name);
      ASSERT_NE(info, nullptr) << variant->name() << " declares an unknown feature " << name;
      switch (info->kind) {
        case FeatureKind::flag:
          EXPECT_EQ(value, "") << variant->name() << " " << name;
          break;
        case FeatureKind::choice:
          EXPECT_NE(std::find(info->choices.begin(), info->choices.end(), value),
                    info->choices.end())
              << variant->name() << " declares " << name << "=" << value;
          break;
        case FeatureKind::number: {
          const size_t dots = value.find("..");
          const int64_t lo = std::stoll(value.substr(0, dots));
          const int64_t hi = dots == std::string::npos ? lo : std::stoll(value.substr(dots + 2));
          EXPECT_LE(lo, hi) << variant->name() << " " << name;
          EXPECT_NE(std::find(info->numbers.begin(), info->numbers.end(), lo), info->numbers.end())
              << variant->name() << " declares " << name << "=" << value;
          EXPECT_NE(std::find(info->numbers.begin(), info->numbers.end(), hi), info->numbers.end())
              << variant->name() << " declares " << name << "=" << value;
          break;
        }
      }
    }
  }
}

TEST(FeatureContract, TheCpuOracleImplementsTheWholeSchema) {
  const FeatureSet oracle = reference_features();
  for (const auto& [name, value] : schema_entries()) {
    EXPECT_TRUE(oracle.implements(schema_use(name, value))) << name << "=" << value;
  }
}

TEST(FeatureContract, EachFamilysCpuReferenceTakesWhatItsGpuVariantsTake) {
  const Registry registry = make_registry();
  for (const auto& variant : registry.variants()) {
    if (variant->backend() != Backend::cuda) continue;
    const Variant* cpu = registry.find(to_string(variant->family()) + ".cpu_reference");
    ASSERT_NE(cpu, nullptr) << variant->name();
    const FeatureSet gpu_declared = variant->features();
    const FeatureSet cpu_declared = cpu->features();
    for (const auto& [name, value] : schema_entries()) {
      const FeatureUse use = schema_use(name, value);
      if (gpu_declared.implements(use)) {
        EXPECT_TRUE(cpu_declared.implements(use))
            << cpu->name() << " lacks " << name << "=" << value << " that " << variant->name()
            << " implements";
      }
    }
  }
}

}  // namespace
}  // namespace attn
