// What a batch reports of its features (workloads/batch_features.hpp): each feature of the schema
// from the workload field that turns it on, only when it changes what a kernel computes, with the
// value and description a message shows; and every field of workload.json classified, so a new
// one cannot arrive without a decision about its feature.
#include "workloads/batch_features.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "tests/workloads/test_util.hpp"

namespace attn {
namespace {

using nlohmann::json;

// A small decode batch as JSON (query_len 1, contexts of 40 tokens), for a test to change.
json features_test_workload() {
  json spec = test::valid_workload_json();
  spec["schema_version"] = 2;
  return spec;
}

BatchFeatures features_of(const json& spec) {
  return batch_features(generate_batch(parse_workload(spec.dump(), "features-test")));
}

// The value of `name` in `features`, "-" when not reported, "flag" for a reported flag.
std::string reported(const BatchFeatures& features, const std::string& name) {
  const FeatureUse* use = features.find(name);
  if (use == nullptr) return "-";
  return use->value.empty() ? "flag" : use->value;
}

TEST(BatchFeatures, APlainDecodeBatchReportsItsShapeAndNoOptionalFeature) {
  const BatchFeatures f = features_of(features_test_workload());
  EXPECT_EQ(reported(f, feature::kQueries), "decode");
  EXPECT_EQ(reported(f, feature::kMask), "causal");
  EXPECT_EQ(reported(f, feature::kKvLayout), "nhd");
  EXPECT_EQ(reported(f, feature::kDtype), "bf16");
  EXPECT_EQ(reported(f, feature::kHeadDim), "64");
  EXPECT_EQ(reported(f, feature::kPageSize), "16");
  ASSERT_NE(f.find(feature::kHeadDim), nullptr);
  EXPECT_EQ(f.find(feature::kHeadDim)->number, 64);
  for (const char* absent : {feature::kSlidingWindow, feature::kLogitsSoftCap,
                             feature::kAttentionSinks, feature::kSharedPrefix, feature::kKvDtype}) {
    EXPECT_EQ(reported(f, absent), "-") << absent;
  }
  EXPECT_EQ(f.uses.size(), 6u);
}

TEST(BatchFeatures, EachWorkloadFieldTurnsOnItsFeature) {
  struct Case {
    std::string what;
    std::function<void(json&)> change;
    std::string name;
    std::string value;  // "flag" for a flag
    std::string description;
  };
  const std::vector<Case> cases = {
      {"prefill",
       [](json& s) { s["sequences"] = json::parse(R"([{"context_len": 0, "query_len": 9}])"); },
       feature::kQueries, "prefill", "prefill batches (more than one query token per sequence)"},
      {"mixed",
       [](json& s) {
         s["sequences"] = json::parse(
             R"([{"context_len": 30, "query_len": 1}, {"context_len": 0, "query_len": 9}])");
       },
       feature::kQueries, "mixed", "mixed batches (decode and prefill sequences together)"},
      {"non-causal", [](json& s) { s["mask"]["causal"] = false; }, feature::kMask, "non_causal",
       "dense non-causal attention"},
      {"block-sparse",
       [](json& s) {
         s["mask"]["block_sparse"] = {
             {"block_size", 16}, {"local_blocks", 1}, {"vertical_stride", 2}};
       },
       feature::kMask, "block_sparse", "block-sparse masks"},
      {"explicit",
       [](json& s) {
         s["mask"]["explicit"] = {{"kind", "causal"}};
       },
       feature::kMask, "explicit", "explicit masks"},
      {"window", [](json& s) { s["model"]["sliding_window"] = 8; }, feature::kSlidingWindow, "flag",
       "sliding window"},
      {"soft-cap", [](json& s) { s["model"]["logits_soft_cap"] = 30.0; }, feature::kLogitsSoftCap,
       "flag", "logits soft-cap"},
      {"sinks", [](json& s) { s["model"]["attention_sinks"] = true; }, feature::kAttentionSinks,
       "flag", "attention sinks"},
      {"shared prefix",
       [](json& s) {
         s["kv_cache"]["allocation"] = "shared_prefix";
         s["kv_cache"]["shared_prefix"] = {{"tokens", 32}, {"group_size", 3}};
       },
       feature::kSharedPrefix, "flag", "shared-prefix pages"},
      {"hnd", [](json& s) { s["kv_cache"]["layout"] = "HND"; }, feature::kKvLayout, "hnd",
       "the HND KV layout"},
      {"vllm", [](json& s) { s["kv_cache"]["layout"] = "vllm"; }, feature::kKvLayout, "vllm",
       "the vllm KV layout"},
      {"fp16", [](json& s) { s["model"]["dtype"] = "fp16"; }, feature::kDtype, "fp16",
       "fp16 queries and output"},
      {"fp8 per tensor", [](json& s) { s["model"]["kv_dtype"] = "fp8_e4m3"; }, feature::kKvDtype,
       "fp8_e4m3.per_tensor", "fp8 KV cache (per-tensor scales)"},
      {"fp8 per head",
       [](json& s) {
         s["model"]["kv_dtype"] = "fp8_e4m3";
         s["model"]["kv_scale"] = "per_head";
       },
       feature::kKvDtype, "fp8_e4m3.per_head", "fp8 KV cache (per-head scales)"},
      {"head dim", [](json& s) { s["model"]["head_dim"] = 80; }, feature::kHeadDim, "80",
       "head dim 80"},
      {"page size", [](json& s) { s["kv_cache"]["page_size"] = 1; }, feature::kPageSize, "1",
       "page size 1"},
  };
  for (const Case& c : cases) {
    json spec = features_test_workload();
    c.change(spec);
    const BatchFeatures f = features_of(spec);
    EXPECT_EQ(reported(f, c.name), c.value) << c.what;
    if (const FeatureUse* use = f.find(c.name)) {
      EXPECT_EQ(use->description, c.description) << c.what;
    }
  }
}

TEST(BatchFeatures, AWindowIsReportedOnlyWhereItHidesKeys) {
  json spec = features_test_workload();  // kv_len 41
  spec["model"]["sliding_window"] = 41;
  EXPECT_EQ(reported(features_of(spec), feature::kSlidingWindow), "-");
  spec["model"]["sliding_window"] = 40;
  EXPECT_EQ(reported(features_of(spec), feature::kSlidingWindow), "flag");
  // An explicit mask decides alone (workloads/visibility.hpp): a window beside it, in a batch
  // built in code, hides nothing.
  Batch batch = generate_batch(parse_workload(features_test_workload().dump(), "explicit"));
  batch.explicit_mask = ExplicitMask{};
  batch.sliding_window = 4;
  EXPECT_EQ(reported(batch_features(batch), feature::kSlidingWindow), "-");
  EXPECT_EQ(reported(batch_features(batch), feature::kMask), "explicit");
}

TEST(BatchFeatures, FieldsEditedInCodeAreReportedFromTheBatchNotItsSpec) {
  Batch batch = generate_batch(parse_workload(features_test_workload().dump(), "edited"));
  batch.kv_dtype = DType::fp16;
  EXPECT_EQ(reported(batch_features(batch), feature::kKvDtype), "fp16");
  EXPECT_EQ(batch_features(batch).find(feature::kKvDtype)->description,
            "fp16 K/V under bf16 queries");
  batch.kv_dtype = DType::fp8_e4m3;
  batch.k_scales = {1.0f, 2.0f, 3.0f};
  batch.v_scales = {1.0f};
  EXPECT_EQ(reported(batch_features(batch), feature::kKvDtype), "fp8_e4m3.scales_3_1");
  EXPECT_EQ(batch_features(batch).find(feature::kKvDtype)->description,
            "fp8 KV cache with 3 K and 1 V scales for 2 KV heads");
  batch.kv_dtype = batch.dtype;
  batch.sink_logits.assign(8, 0.5f);
  batch.logits_soft_cap = 10.0f;
  batch.causal = false;
  batch.block_sparse = BlockSparseLayout{};
  const BatchFeatures f = batch_features(batch);
  EXPECT_EQ(reported(f, feature::kAttentionSinks), "flag");
  EXPECT_EQ(reported(f, feature::kLogitsSoftCap), "flag");
  EXPECT_EQ(reported(f, feature::kMask), "block_sparse_non_causal");
  EXPECT_EQ(reported(f, feature::kKvDtype), "-");
}

TEST(BatchFeatures, EveryReportedNameAndValueIsInTheSchema) {
  std::vector<json> specs;
  for (const char* layout : {"NHD", "HND", "vllm"}) {
    json spec = features_test_workload();
    spec["kv_cache"]["layout"] = layout;
    spec["model"]["kv_dtype"] = "fp8_e4m3";
    spec["model"]["kv_scale"] = "per_head";
    spec["model"]["sliding_window"] = 3;
    spec["model"]["logits_soft_cap"] = 3.0;
    spec["model"]["attention_sinks"] = true;
    specs.push_back(spec);
  }
  for (const json& spec : specs) {
    for (const FeatureUse& use : features_of(spec).uses) {
      const FeatureInfo* info = find_feature(use.name);
      ASSERT_NE(info, nullptr) << use.name;
      switch (info->kind) {
        case FeatureKind::flag:
          EXPECT_TRUE(use.value.empty() && !use.number) << use.name;
          break;
        case FeatureKind::choice:
          EXPECT_NE(std::find(info->choices.begin(), info->choices.end(), use.value),
                    info->choices.end())
              << use.name << " " << use.value;
          break;
        case FeatureKind::number:
          ASSERT_TRUE(use.number.has_value()) << use.name;
          EXPECT_NE(std::find(info->numbers.begin(), info->numbers.end(), *use.number),
                    info->numbers.end())
              << use.name << " " << use.value;
          break;
      }
    }
  }
}

TEST(BatchFeatures, TheSchemaListsWhatTheWorkloadSchemaAllows) {
  const FeatureInfo* head_dim = find_feature(feature::kHeadDim);
  ASSERT_NE(head_dim, nullptr);
  EXPECT_EQ(head_dim->numbers, (std::vector<int64_t>{64, 80, 96, 128, 192, 256}));
  const FeatureInfo* page_size = find_feature(feature::kPageSize);
  ASSERT_NE(page_size, nullptr);
  EXPECT_EQ(page_size->numbers.front(), 1);
  EXPECT_EQ(page_size->numbers.back(), 256);
  EXPECT_EQ(page_size->numbers.size(), 256u);
  std::set<std::string> names;
  for (const FeatureInfo& info : feature_schema()) {
    EXPECT_TRUE(names.insert(info.name).second) << "twice: " << info.name;
    EXPECT_FALSE(info.description.empty()) << info.name;
    EXPECT_EQ(info.kind == FeatureKind::choice, !info.choices.empty()) << info.name;
    EXPECT_EQ(info.kind == FeatureKind::number, !info.numbers.empty()) << info.name;
  }
  EXPECT_EQ(find_feature("no_such_feature"), nullptr);
}

// The path of every field of `value` that holds a value (not an object of fields) as a JSON
// pointer without array indices ("/sequences/context_len/distribution").
void collect_paths(const json& value, const std::string& path, std::set<std::string>& out) {
  if (value.is_object()) {
    for (const auto& [key, child] : value.items()) collect_paths(child, path + "/" + key, out);
  } else if (value.is_array() && !value.empty() && (value[0].is_object() || value[0].is_array())) {
    for (const json& child : value) collect_paths(child, path, out);
  } else {
    out.insert(path);
  }
}

TEST(WorkloadFieldRoles, EveryFieldOfWorkloadJsonHasARole) {
  // Workloads that between them write every field the canonical form has.
  std::vector<json> specs;
  json all = features_test_workload();
  all["description"] = "every field";
  all["model"]["softmax_scale"] = 0.1;
  all["model"]["kv_dtype"] = "fp8_e4m3";
  all["model"]["kv_scale"] = "per_head";
  all["model"]["logits_soft_cap"] = 30.0;
  all["model"]["sliding_window"] = 8;
  all["model"]["attention_sinks"] = true;
  all["kv_cache"]["num_pages"] = 4000;
  all["kv_cache"]["allocation"] = "shared_prefix";
  all["kv_cache"]["shared_prefix"] = {{"tokens", 16}, {"group_size", 3}};
  all["sequences"] = json::parse(R"([
      {"context_len": {"distribution": "normal", "mean": 30, "stddev": 3, "min": 20, "max": 40},
       "query_len": {"distribution": "lognormal", "median": 2, "sigma": 0.5, "max": 4},
       "count": 2},
      {"context_len": {"distribution": "zipf", "exponent": 1.1, "min": 1, "max": 40},
       "query_len": {"distribution": "uniform", "min": 1, "max": 3}},
      {"trace": {"file": "builtin:chat-sample", "phase": "chunked_prefill", "chunk": 64,
                 "first": 0, "count": 2}}])");
  all["mask"] = {
      {"causal", true},
      {"block_sparse", {{"block_size", 16}, {"local_blocks", 1}, {"vertical_stride", 2}}}};
  specs.push_back(all);
  json masked = features_test_workload();
  masked["mask"]["explicit"] = {{"kind", "tree"}, {"parents", {-1}}};
  specs.push_back(masked);
  for (const char* kind : {"branches", "random"}) {
    json other = features_test_workload();
    other["mask"]["explicit"] = {{"kind", kind}};
    if (std::string(kind) == "branches") other["mask"]["explicit"]["branches"] = 1;
    if (std::string(kind) == "random") other["mask"]["explicit"]["density"] = 0.5;
    specs.push_back(other);
  }
  std::set<std::string> paths;
  for (const json& spec : specs) {
    collect_paths(to_json(parse_workload(spec.dump(), "roles")), "", paths);
  }
  ASSERT_TRUE(paths.count("/mask/explicit/parents"));
  ASSERT_TRUE(paths.count("/sequences/trace/chunk"));
  for (const std::string& path : paths) {
    const WorkloadFieldRole* role = nullptr;
    for (const WorkloadFieldRole& r : workload_field_roles()) {
      if (path == r.path || path.rfind(r.path + "/", 0) == 0) role = &r;
    }
    ASSERT_NE(role, nullptr)
        << path << " has no role: add it to workload_field_roles() (workloads/batch_features.cpp) "
        << "with the feature batches report for it, or with why no kernel must implement it";
    if (role->feature.empty()) {
      EXPECT_FALSE(role->why_not.empty()) << path;
    } else {
      EXPECT_NE(find_feature(role->feature), nullptr) << path << ": " << role->feature;
    }
  }
  // And every feature comes from some field.
  for (const FeatureInfo& info : feature_schema()) {
    bool used = false;
    for (const WorkloadFieldRole& r : workload_field_roles()) used = used || r.feature == info.name;
    EXPECT_TRUE(used) << info.name << " comes from no workload field";
  }
}

}  // namespace
}  // namespace attn
