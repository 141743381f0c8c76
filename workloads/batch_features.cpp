#include "workloads/batch_features.hpp"

#include <algorithm>

#include "workloads/workload_validation.hpp"

namespace attn {

std::string to_string(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::flag:
      return "flag";
    case FeatureKind::choice:
      return "choice";
    case FeatureKind::number:
      return "number";
  }
  return "unknown";
}

FeatureUse FeatureUse::flag(std::string name, std::string description) {
  return {std::move(name), "", std::nullopt, std::move(description)};
}

FeatureUse FeatureUse::choice(std::string name, std::string value, std::string description) {
  return {std::move(name), std::move(value), std::nullopt, std::move(description)};
}

FeatureUse FeatureUse::integer(std::string name, int64_t number, std::string description) {
  return {std::move(name), std::to_string(number), number, std::move(description)};
}

const FeatureUse* BatchFeatures::find(const std::string& name) const {
  for (const FeatureUse& use : uses) {
    if (use.name == name) return &use;
  }
  return nullptr;
}

namespace {

// The descriptions of the choices' values, for messages ("does not implement: the vllm KV layout").
struct Choice {
  const char* value;
  const char* description;
};

const Choice kQueryShapes[] = {
    {"decode", "decode batches (one query token per sequence)"},
    {"prefill", "prefill batches (more than one query token per sequence)"},
    {"mixed", "mixed batches (decode and prefill sequences together)"},
};
const Choice kMasks[] = {
    {"causal", "dense causal attention"},
    {"non_causal", "dense non-causal attention"},
    {"block_sparse", "block-sparse masks"},
    {"block_sparse_non_causal", "non-causal block-sparse masks"},
    {"explicit", "explicit masks"},
};
const Choice kKvLayouts[] = {
    {"nhd", "the NHD KV layout"},
    {"hnd", "the HND KV layout"},
    {"vllm", "the vllm KV layout"},
};
const Choice kDtypes[] = {
    {"bf16", "bf16 queries and output"},
    {"fp16", "fp16 queries and output"},
};
const Choice kKvDtypes[] = {
    {"fp8_e4m3.per_tensor", "fp8 KV cache (per-tensor scales)"},
    {"fp8_e4m3.per_head", "fp8 KV cache (per-head scales)"},
    {"bf16", "bf16 K/V under fp16 queries"},
    {"fp16", "fp16 K/V under bf16 queries"},
};

template <size_t N>
std::string described(const Choice (&choices)[N], const std::string& value,
                      const std::string& otherwise) {
  for (const Choice& c : choices) {
    if (value == c.value) return c.description;
  }
  return otherwise;
}

template <size_t N>
std::vector<std::string> values_of(const Choice (&choices)[N]) {
  std::vector<std::string> out;
  for (const Choice& c : choices) out.push_back(c.value);
  return out;
}

FeatureUse choice_use(const char* name, const std::string& value, const std::string& description) {
  return FeatureUse::choice(name, value, description);
}

std::string query_shape(const Batch& batch) {
  if (batch.decode_only()) return "decode";
  const bool all_prefill = std::all_of(batch.query_lens.begin(), batch.query_lens.end(),
                                       [](int64_t q) { return q > 1; });
  return all_prefill ? "prefill" : "mixed";
}

std::string mask_kind(const Batch& batch) {
  if (batch.explicit_mask) return "explicit";  // it alone decides (workloads/visibility.hpp)
  if (batch.block_sparse) return batch.causal ? "block_sparse" : "block_sparse_non_causal";
  return batch.causal ? "causal" : "non_causal";
}

std::string layout_name(KvLayout layout) {
  switch (layout) {
    case KvLayout::nhd:
      return "nhd";
    case KvLayout::hnd:
      return "hnd";
    case KvLayout::vllm:
      return "vllm";
  }
  return "unknown";
}

// K/V of another dtype than Q's. An fp8 cache's value names how its scales are given, from the
// scales the batch carries: one (per tensor), one per KV head (per head), or any other count,
// which has a name no variant declares. Another 16-bit dtype than Q's (only in batches built in
// code) is the dtype's name.
FeatureUse kv_dtype_use(const Batch& batch) {
  const std::string kv = to_string(batch.kv_dtype);
  const std::string plain = kv + " K/V under " + to_string(batch.dtype) + " queries";
  if (batch.kv_dtype != DType::fp8_e4m3) {
    return choice_use(feature::kKvDtype, kv, described(kKvDtypes, kv, plain));
  }
  const size_t kv_heads = size_t(batch.spec.model.num_kv_heads);
  const size_t k = batch.k_scales.size(), v = batch.v_scales.size();
  std::string value;
  if (k == 1 && v == 1) {
    value = kv + ".per_tensor";
  } else if (k == kv_heads && v == kv_heads) {
    value = kv + ".per_head";
  } else {
    value = kv + ".scales_" + std::to_string(k) + "_" + std::to_string(v);
  }
  return choice_use(
      feature::kKvDtype, value,
      described(kKvDtypes, value,
                "fp8 KV cache with " + std::to_string(k) + " K and " + std::to_string(v) +
                    " V scales for " + std::to_string(kv_heads) + " KV heads"));
}

}  // namespace

BatchFeatures batch_features(const Batch& batch) {
  BatchFeatures out;
  std::vector<FeatureUse>& uses = out.uses;
  const std::string queries = query_shape(batch);
  uses.push_back(choice_use(feature::kQueries, queries,
                            described(kQueryShapes, queries, queries + " query shapes")));
  const std::string mask = mask_kind(batch);
  uses.push_back(choice_use(feature::kMask, mask, described(kMasks, mask, mask + " masks")));
  if (batch.sliding_window > 0 && batch.sliding_window < batch.max_kv_len() &&
      !batch.explicit_mask) {
    uses.push_back(FeatureUse::flag(feature::kSlidingWindow, "sliding window"));
  }
  if (batch.logits_soft_cap > 0) {
    uses.push_back(FeatureUse::flag(feature::kLogitsSoftCap, "logits soft-cap"));
  }
  if (!batch.sink_logits.empty()) {
    uses.push_back(FeatureUse::flag(feature::kAttentionSinks, "attention sinks"));
  }
  if (std::any_of(batch.shared_prefix_len.begin(), batch.shared_prefix_len.end(),
                  [](int64_t len) { return len > 0; })) {
    uses.push_back(FeatureUse::flag(feature::kSharedPrefix, "shared-prefix pages"));
  }
  const std::string layout = layout_name(batch.spec.kv_cache.layout);
  uses.push_back(choice_use(feature::kKvLayout, layout,
                            described(kKvLayouts, layout, "the " + layout + " KV layout")));
  const std::string dtype = to_string(batch.dtype);
  uses.push_back(
      choice_use(feature::kDtype, dtype, described(kDtypes, dtype, dtype + " queries and output")));
  if (batch.kv_dtype != batch.dtype) uses.push_back(kv_dtype_use(batch));
  const ModelShape& m = batch.spec.model;
  if (m.latent()) {
    uses.push_back(FeatureUse::flag(feature::kLatentAttention, "multi-head latent attention"));
    uses.push_back(FeatureUse::integer(feature::kKvLoraRank, m.kv_lora_rank,
                                       "kv_lora_rank " + std::to_string(m.kv_lora_rank)));
    uses.push_back(FeatureUse::integer(feature::kQkRopeHeadDim, m.qk_rope_head_dim,
                                       "qk_rope_head_dim " + std::to_string(m.qk_rope_head_dim)));
  } else {
    uses.push_back(FeatureUse::integer(feature::kHeadDim, m.head_dim,
                                       "head dim " + std::to_string(m.head_dim)));
    const int v_head_dim = m.effective_v_head_dim();
    if (v_head_dim != m.head_dim) {
      uses.push_back(FeatureUse::integer(feature::kVHeadDim, v_head_dim,
                                         "V head dim " + std::to_string(v_head_dim) +
                                             " (narrower than Q/K's " + std::to_string(m.head_dim) +
                                             ")"));
    }
  }
  uses.push_back(FeatureUse::integer(feature::kPageSize, batch.page_size,
                                     "page size " + std::to_string(batch.page_size)));
  return out;
}

const std::vector<FeatureInfo>& feature_schema() {
  static const std::vector<FeatureInfo> schema = [] {
    std::vector<int64_t> head_dims(std::begin(kHeadDims), std::end(kHeadDims));
    std::vector<int64_t> page_sizes;
    for (int p = 1; p <= kMaxPageSize; ++p) page_sizes.push_back(p);
    std::vector<int64_t> ranks, ropes;
    for (int r = kMinKvLoraRank; r <= kMaxKvLoraRank; r += kKvLoraRankStep) ranks.push_back(r);
    for (int r = kMinQkRopeHeadDim; r <= kMaxQkRopeHeadDim; r += kQkRopeHeadDimStep) {
      ropes.push_back(r);
    }
    return std::vector<FeatureInfo>{
        {feature::kQueries, FeatureKind::choice, "query shape", values_of(kQueryShapes), {}},
        {feature::kMask, FeatureKind::choice, "mask", values_of(kMasks), {}},
        {feature::kSlidingWindow, FeatureKind::flag, "sliding window", {}, {}},
        {feature::kLogitsSoftCap, FeatureKind::flag, "logits soft-cap", {}, {}},
        {feature::kAttentionSinks, FeatureKind::flag, "attention sinks", {}, {}},
        {feature::kSharedPrefix, FeatureKind::flag, "shared-prefix pages", {}, {}},
        {feature::kKvLayout, FeatureKind::choice, "KV layout", values_of(kKvLayouts), {}},
        {feature::kDtype, FeatureKind::choice, "Q and output dtype", values_of(kDtypes), {}},
        {feature::kKvDtype,
         FeatureKind::choice,
         "KV dtype other than Q's, with its scales",
         values_of(kKvDtypes),
         {}},
        {feature::kHeadDim, FeatureKind::number, "head dim", {}, head_dims},
        {feature::kVHeadDim,
         FeatureKind::number,
         "V head dim narrower than Q/K's",
         {},
         std::vector<int64_t>(head_dims.begin(), head_dims.end() - 1)},
        {feature::kPageSize, FeatureKind::number, "page size", {}, page_sizes},
        {feature::kLatentAttention, FeatureKind::flag, "multi-head latent attention", {}, {}},
        {feature::kKvLoraRank, FeatureKind::number, "kv_lora_rank", {}, ranks},
        {feature::kQkRopeHeadDim, FeatureKind::number, "qk_rope_head_dim", {}, ropes},
    };
  }();
  return schema;
}

const FeatureInfo* find_feature(const std::string& name) {
  for (const FeatureInfo& info : feature_schema()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

const std::vector<WorkloadFieldRole>& workload_field_roles() {
  static const std::vector<WorkloadFieldRole> roles = {
      {"/schema_version", "", "the file's format"},
      {"/name", "", "a label"},
      {"/description", "", "a label"},
      {"/seed", "", "chooses the data, lengths and page ids, not the computation"},
      {"/model/num_q_heads", "",
       "a shape every kernel takes (a variant's limit on the GQA group is its own rule)"},
      {"/model/num_kv_heads", "",
       "a shape every kernel takes (a variant's limit on the GQA group is its own rule)"},
      {"/model/head_dim", feature::kHeadDim, ""},
      {"/model/v_head_dim", feature::kVHeadDim, ""},
      {"/model/attention", feature::kLatentAttention, ""},
      {"/model/kv_lora_rank", feature::kKvLoraRank, ""},
      {"/model/qk_rope_head_dim", feature::kQkRopeHeadDim, ""},
      {"/model/qk_nope_head_dim", "",
       "sets only the default softmax_scale, a number every kernel multiplies the logits by"},
      {"/model/dtype", feature::kDtype, ""},
      {"/model/kv_dtype", feature::kKvDtype, ""},
      {"/model/kv_scale", feature::kKvDtype, ""},
      {"/model/softmax_scale", "", "a number every kernel multiplies the logits by"},
      {"/model/logits_soft_cap", feature::kLogitsSoftCap, ""},
      {"/model/sliding_window", feature::kSlidingWindow, ""},
      {"/model/attention_sinks", feature::kAttentionSinks, ""},
      {"/kv_cache/page_size", feature::kPageSize, ""},
      {"/kv_cache/layout", feature::kKvLayout, ""},
      // sequential, shuffled and fragmented differ only in page ids, which every kernel reads
      // through the page table; shared_prefix is reported as the shared_prefix flag.
      {"/kv_cache/allocation", feature::kSharedPrefix, ""},
      {"/kv_cache/shared_prefix", feature::kSharedPrefix, ""},
      {"/kv_cache/num_pages", "", "the pool's capacity: unused pages are never read"},
      {"/sequences", feature::kQueries, ""},
      {"/mask/causal", feature::kMask, ""},
      {"/mask/block_sparse", feature::kMask, ""},
      {"/mask/explicit", feature::kMask, ""},
  };
  return roles;
}

}  // namespace attn
