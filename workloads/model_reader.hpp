// The `model` section of a workload file (docs/workload.md): the attention kind, heads, head dims
// (and V's), dtypes and fp8 scales, softmax scale, soft-cap, window, sinks, and the latent shape
// of attention "mla". Every problem is collected with its JSON pointer, as for the whole file
// (workloads/workload_spec.hpp reads the rest and takes these problems).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "workloads/json_field_reader.hpp"
#include "workloads/workload_spec.hpp"

namespace attn {

class ModelReader : public JsonFieldReader {
 public:
  // `version`: the document's schema_version (some keys are version 2 only).
  explicit ModelReader(int version) : JsonFieldReader(version) {}

  // Reads root["model"] into `model`; false when a field is missing or wrong (then reported).
  bool read(const json& root, ModelShape& model);

 private:
  // dtype, kv_dtype and kv_scale (every attention kind).
  void read_dtypes(const json& object, const std::string& p, ModelShape& model, bool& ok);
  // attention "mla": the latent row's shape; what does not apply to it refused by name.
  bool read_latent_model(const json& object, const std::string& p, ModelShape& model, bool& ok);
  // V's head dim: one of the head dims and not above head_dim.
  void read_v_head_dim(const json& object, const std::string& p, ModelShape& model, bool& ok);
  void read_attention_sinks(const json& object, const std::string& p, ModelShape& model, bool& ok);
};

}  // namespace attn
