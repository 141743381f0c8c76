#include "workloads/model_reader.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "workloads/workload_validation.hpp"

namespace attn {

bool ModelReader::read(const json& root, ModelShape& model) {
  bool ok = true;
  const json* object = object_member(root, "", "model", true, ok);
  if (object == nullptr) return false;
  const std::string p = "/model";
  check_keys(
      *object, p,
      {"attention", "num_q_heads", "num_kv_heads", "head_dim", "v_head_dim", "dtype",
       "softmax_scale", "kv_dtype", "kv_scale", "logits_soft_cap", "sliding_window",
       "attention_sinks", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim"},
      {"attention", "v_head_dim", "kv_dtype", "kv_scale", "logits_soft_cap", "sliding_window",
       "attention_sinks", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim"});
  bool attention_ok = true;  // an unknown kind: its other fields cannot be judged
  enum_member<AttentionKind>(*object, p, "attention", attention_kind_from_string,
                             "\"mha\", \"mla\"", model.attention, attention_ok);
  if (!attention_ok) return false;
  if (model.latent()) return read_latent_model(*object, p, model, ok);
  for (const char* key : {"kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim"}) {
    if (object->contains(key)) {
      add(p + "/" + key, "only applies to attention \"mla\" (this model's attention is \"" +
                             to_string(model.attention) + "\")");
      ok = false;
    }
  }

  auto q_heads = integer(*object, p, "num_q_heads", true, 1, kMaxQueryHeads, ok);
  if (q_heads) model.num_q_heads = int(*q_heads);
  auto kv_heads = integer(*object, p, "num_kv_heads", true, 1, kMaxQueryHeads, ok);
  if (kv_heads) {
    model.num_kv_heads = int(*kv_heads);
    if (q_heads && *q_heads % *kv_heads != 0) {
      add(p + "/num_kv_heads", "must divide num_q_heads (" + std::to_string(*q_heads) + "), got " +
                                   std::to_string(*kv_heads));
      ok = false;
    }
  }

  if (const json* value = member(*object, p, "head_dim", true)) {
    std::string allowed;
    for (int d : kHeadDims) allowed += (allowed.empty() ? "" : ", ") + std::to_string(d);
    bool valid = value->is_number_integer() &&
                 std::find(std::begin(kHeadDims), std::end(kHeadDims), value->get<int64_t>()) !=
                     std::end(kHeadDims);
    if (valid) {
      model.head_dim = int(value->get<int64_t>());
    } else if (value->is_number_integer()) {
      add(p + "/head_dim", "must be one of " + allowed + ", got " + show(*value));
      ok = false;
    } else {
      add(p + "/head_dim", "expected an integer, got " + describe_wrong_type(*value));
      ok = false;
    }
  } else {
    ok = false;
  }
  read_v_head_dim(*object, p, model, ok);

  read_dtypes(*object, p, model, ok);

  // Both are used as 32-bit floats (Batch::softmax_scale, logits_soft_cap).
  if (member(*object, p, "softmax_scale", false)) {
    if (auto v = positive_float(*object, p, "softmax_scale", false, ok)) model.softmax_scale = v;
  }
  if (member(*object, p, "logits_soft_cap", false)) {
    if (auto v = positive_float(*object, p, "logits_soft_cap", false, ok)) {
      model.logits_soft_cap = v;
    }
  }
  if (auto v = integer(*object, p, "sliding_window", false, 1, kInt64Max, ok)) {
    model.sliding_window = v;
  }
  read_attention_sinks(*object, p, model, ok);
  return ok;
}

// dtype, kv_dtype and kv_scale (every attention kind).
void ModelReader::read_dtypes(const json& object_ref, const std::string& p, ModelShape& model,
                              bool& ok) {
  const json* object = &object_ref;
  bool dtype_ok = false;
  if (const std::string* dtype = string_member(*object, p, "dtype", true, ok)) {
    auto parsed = dtype_from_string(*dtype);
    if (parsed && (*parsed == DType::bf16 || *parsed == DType::fp16)) {
      model.dtype = *parsed;
      dtype_ok = true;
    } else {
      add(p + "/dtype", "must be one of \"bf16\", \"fp16\", got " + show(json(*dtype)));
      ok = false;
    }
  }

  if (const std::string* kv_dtype = string_member(*object, p, "kv_dtype", false, ok)) {
    auto parsed = dtype_from_string(*kv_dtype);
    if (parsed == DType::fp8_e4m3 || (dtype_ok && parsed == model.dtype)) {
      model.kv_dtype = *parsed;
    } else {
      add(p + "/kv_dtype",
          "must be \"fp8_e4m3\" or the same as dtype, got " + show(json(*kv_dtype)));
      ok = false;
    }
  }
  if (object->contains("kv_scale")) {
    if (model.effective_kv_dtype() != DType::fp8_e4m3) {
      if (!object->contains("kv_dtype") || model.kv_dtype) {
        add(p + "/kv_scale", "only applies to an fp8 KV cache (kv_dtype \"fp8_e4m3\")");
      }
      ok = false;
    } else {
      enum_member<KvScaleGranularity>(*object, p, "kv_scale", kv_scale_granularity_from_string,
                                      "\"per_tensor\", \"per_head\"", model.kv_scale, ok);
    }
  }
}

// attention "mla" (docs/workload.md, "Multi-head latent attention"): one latent row of
// kv_lora_rank + qk_rope_head_dim per token, shared by every q head. What does not apply to it
// (more than one kv head, another head_dim, per-head fp8 scales, soft-cap, window, sinks) is
// refused by name.
bool ModelReader::read_latent_model(const json& object, const std::string& p, ModelShape& model,
                                    bool& ok) {
  const std::string why = " for attention \"mla\"";
  auto q_heads = integer(object, p, "num_q_heads", true, 1, kMaxQueryHeads, ok);
  if (q_heads) model.num_q_heads = int(*q_heads);
  model.num_kv_heads = 1;
  if (const json* value = member(object, p, "num_kv_heads", false)) {
    if (!(value->is_number_integer() && value->get<int64_t>() == 1)) {
      add(p + "/num_kv_heads", "must be absent or 1" + why +
                                   " (every q head reads the same latent cache), got " +
                                   show(*value));
      ok = false;
    }
  }
  bool shape_ok = true;
  auto multiple = [&](const char* key, int64_t lo, int64_t hi, int64_t step) -> int {
    const json* value = member(object, p, key, true);
    if (value == nullptr) {
      shape_ok = false;
      return 0;
    }
    if (value->is_number_integer() && value->get<int64_t>() >= lo && value->get<int64_t>() <= hi &&
        value->get<int64_t>() % step == 0) {
      return int(value->get<int64_t>());
    }
    add(p + "/" + key,
        "must be a multiple of " + std::to_string(step) + " from " + std::to_string(lo) + " to " +
            std::to_string(hi) + ", got " +
            (value->is_number_integer() ? show(*value) : describe_wrong_type(*value)));
    shape_ok = false;
    return 0;
  };
  model.kv_lora_rank = multiple("kv_lora_rank", kMinKvLoraRank, kMaxKvLoraRank, kKvLoraRankStep);
  model.qk_rope_head_dim =
      multiple("qk_rope_head_dim", kMinQkRopeHeadDim, kMaxQkRopeHeadDim, kQkRopeHeadDimStep);
  if (auto v = integer(object, p, "qk_nope_head_dim", false, 1, kMaxQkNopeHeadDim, ok)) {
    model.qk_nope_head_dim = int(*v);
  }
  if (shape_ok) {
    model.head_dim = model.kv_lora_rank + model.qk_rope_head_dim;
    if (const json* value = member(object, p, "head_dim", false)) {
      if (!(value->is_number_integer() && value->get<int64_t>() == model.head_dim)) {
        add(p + "/head_dim", "is kv_lora_rank + qk_rope_head_dim (" +
                                 std::to_string(model.head_dim) + ")" + why +
                                 ": leave it out or write that, got " + show(*value));
        ok = false;
      }
    }
  } else {
    ok = false;
  }
  read_dtypes(object, p, model, ok);
  if (object.contains("kv_scale") && model.effective_kv_dtype() == DType::fp8_e4m3 &&
      model.kv_scale != KvScaleGranularity::per_tensor) {
    add(p + "/kv_scale", "must be \"per_tensor\"" + why + " (the cache has one latent head)");
    ok = false;
  }
  if (member(object, p, "softmax_scale", false)) {
    if (auto v = positive_float(object, p, "softmax_scale", false, ok)) model.softmax_scale = v;
  }
  for (const char* key : {"logits_soft_cap", "sliding_window", "attention_sinks"}) {
    if (object.contains(key)) {
      add(p + "/" + key, std::string("is not supported") + why);
      ok = false;
    }
  }
  if (object.contains("v_head_dim")) {
    add(p + "/v_head_dim", "must be absent" + why +
                               " (V is the first kv_lora_rank elements of each latent row; the "
                               "output is kv_lora_rank wide)");
    ok = false;
  }
  return ok;
}

// V's head dim: one of the head dims, and not above head_dim (every model that splits the two,
// DeepSeek's MLA prefill with Q/K 192 and V 128, has the narrower V; the pools' and the
// kernels' widest row is head_dim). Equal to head_dim: the same workload as leaving it out.
void ModelReader::read_v_head_dim(const json& object, const std::string& p, ModelShape& model,
                                  bool& ok) {
  const json* value = member(object, p, "v_head_dim", false);
  if (value == nullptr) return;
  const std::string where = p + "/v_head_dim";
  if (!value->is_number_integer()) {
    add(where, "expected an integer, got " + describe_wrong_type(*value));
    ok = false;
    return;
  }
  const int64_t dim = value->get<int64_t>();
  if (std::find(std::begin(kHeadDims), std::end(kHeadDims), dim) == std::end(kHeadDims)) {
    std::string allowed;
    for (int d : kHeadDims) allowed += (allowed.empty() ? "" : ", ") + std::to_string(d);
    add(where, "must be one of " + allowed + ", got " + show(*value));
    ok = false;
    return;
  }
  if (model.head_dim > 0 && dim > model.head_dim) {
    add(where, "must not be larger than head_dim (" + std::to_string(model.head_dim) + "), got " +
                   show(*value));
    ok = false;
    return;
  }
  if (model.head_dim > 0 && dim != model.head_dim) model.v_head_dim = int(dim);
}

void ModelReader::read_attention_sinks(const json& object, const std::string& p, ModelShape& model,
                                       bool& ok) {
  const json* value = member(object, p, "attention_sinks", false);
  if (value == nullptr) return;
  const std::string where = p + "/attention_sinks";
  if (value->is_boolean()) {
    model.attention_sinks = value->get<bool>();
    return;
  }
  if (!value->is_array()) {
    add(where, "expected a boolean or an array of numbers, got " + describe_wrong_type(*value));
    ok = false;
    return;
  }
  if (model.num_q_heads > 0 && value->size() != size_t(model.num_q_heads)) {
    add(where, "must list one logit per q head (" + std::to_string(model.num_q_heads) + "), got " +
                   std::to_string(value->size()));
    ok = false;
    return;
  }
  std::vector<double> logits;
  for (size_t h = 0; h < value->size(); ++h) {
    const json& logit = (*value)[h];
    // Used as a 32-bit float (Batch::sink_logits): finite there too.
    if (!logit.is_number() || !std::isfinite(static_cast<float>(logit.get<double>()))) {
      add(where + "/" + std::to_string(h),
          "expected a finite number of at most 3.4028235e+38 in magnitude (it is used as a "
          "32-bit float), got " +
              describe_wrong_type(logit));
      ok = false;
      continue;
    }
    logits.push_back(logit.get<double>());
  }
  if (logits.size() == value->size()) {
    model.attention_sinks = true;
    model.sink_logits = std::move(logits);
  }
}

}  // namespace attn
