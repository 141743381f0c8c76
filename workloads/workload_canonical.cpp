// The canonical form of a WorkloadSpec (every field that matters written, keys sorted by
// nlohmann's ordered-by-key objects) and its content hash: what the database and dumps key on.
#include <string>

#include "base/sha256.hpp"
#include "workloads/workload_spec.hpp"

namespace attn {

using nlohmann::json;

namespace {

// A fixed length is written as its integer, a drawn one as its distribution object.
json length_json(const LengthSpec& length) {
  if (length.is_fixed()) return length.value;
  json out = {
      {"distribution", to_string(length.distribution)}, {"min", length.min}, {"max", length.max}};
  switch (length.distribution) {
    case LengthDistribution::normal:
      out["mean"] = length.mean;
      out["stddev"] = length.stddev;
      break;
    case LengthDistribution::lognormal:
      out["median"] = length.median;
      out["sigma"] = length.sigma;
      break;
    case LengthDistribution::zipf:
      out["exponent"] = length.exponent;
      break;
    default:
      break;
  }
  return out;
}

// A file reference: the path as written and the hash of the bytes, never where it was found
// (the same file elsewhere is the same workload).
void write_file_reference(json& out, const std::string& file, const std::string& sha256) {
  out["file"] = file;
  if (!sha256.empty()) out["sha256"] = sha256;
}

}  // namespace

// Fields added by schema version 2 are written only when they differ from their defaults, so a
// version 1 file keeps the canonical form, and the hash, it always had.
json to_json(const WorkloadSpec& spec) {
  const ModelShape& m = spec.model;
  json model = json::object();
  if (m.latent()) {  // absent for mha: the canonical form, and hash, of other workloads stay
    model["attention"] = to_string(m.attention);
    model["kv_lora_rank"] = m.kv_lora_rank;
    model["qk_rope_head_dim"] = m.qk_rope_head_dim;
    if (m.qk_nope_head_dim) model["qk_nope_head_dim"] = *m.qk_nope_head_dim;
  }
  model["num_q_heads"] = m.num_q_heads;
  model["num_kv_heads"] = m.num_kv_heads;
  model["head_dim"] = m.head_dim;
  if (m.v_head_dim && *m.v_head_dim != m.head_dim) model["v_head_dim"] = *m.v_head_dim;
  model["dtype"] = to_string(m.dtype);
  if (m.softmax_scale) model["softmax_scale"] = *m.softmax_scale;
  if (m.kv_dtype) model["kv_dtype"] = to_string(*m.kv_dtype);
  if (m.effective_kv_dtype() == DType::fp8_e4m3) model["kv_scale"] = to_string(m.kv_scale);
  if (m.logits_soft_cap) model["logits_soft_cap"] = *m.logits_soft_cap;
  if (m.sliding_window) model["sliding_window"] = *m.sliding_window;
  if (!m.sink_logits.empty()) {
    model["attention_sinks"] = m.sink_logits;
  } else if (m.attention_sinks) {
    model["attention_sinks"] = true;
  }

  const KvCacheSpec& k = spec.kv_cache;
  json kv = json::object();
  kv["page_size"] = k.page_size;
  kv["layout"] = to_string(k.layout);
  kv["allocation"] = to_string(k.allocation);
  if (k.num_pages) kv["num_pages"] = *k.num_pages;
  if (k.shared_prefix) {
    kv["shared_prefix"] = {{"tokens", k.shared_prefix->tokens},
                           {"group_size", k.shared_prefix->group_size}};
  }

  json sequences = json::array();
  for (const SequenceSpec& seq : spec.sequences) {
    json entry = json::object();
    if (seq.trace) {
      const TraceSpec& t = *seq.trace;
      json trace = {{"phase", to_string(t.phase)}, {"first", t.first}};
      write_file_reference(trace, t.file, t.sha256);
      if (t.count) trace["count"] = *t.count;
      if (t.format) trace["format"] = to_string(*t.format);
      if (t.columns)
        trace["columns"] = {{"context", t.columns->context}, {"query", t.columns->query}};
      if (t.phase == TracePhase::chunked_prefill) trace["chunk"] = t.chunk;
      entry["trace"] = std::move(trace);
    } else {
      entry["context_len"] = length_json(seq.context_len);
      entry["query_len"] = length_json(seq.query_len);
      entry["count"] = seq.count;
    }
    sequences.push_back(std::move(entry));
  }

  json out = json::object();
  out["schema_version"] = spec.schema_version;
  out["name"] = spec.name;
  out["description"] = spec.description;
  out["model"] = std::move(model);
  out["kv_cache"] = std::move(kv);
  out["sequences"] = std::move(sequences);
  out["seed"] = spec.seed;

  const MaskSpec& mask = spec.mask;
  if (!mask.causal || mask.block_sparse || mask.explicit_mask) {
    json m_out = {{"causal", mask.causal}};
    if (mask.block_sparse) {
      const BlockSparseSpec& b = *mask.block_sparse;
      json sparse = {{"block_size", b.block_size}};
      if (!b.file.empty()) {
        write_file_reference(sparse, b.file, b.sha256);
      } else {
        sparse["local_blocks"] = b.local_blocks;
        sparse["vertical_stride"] = b.vertical_stride;
        sparse["head_sliding_step"] = b.head_sliding_step;
        sparse["homo_head"] = b.homo_head;
      }
      m_out["block_sparse"] = std::move(sparse);
    }
    if (mask.explicit_mask) {
      const ExplicitMaskSpec& e = *mask.explicit_mask;
      json explicit_mask = {{"kind", to_string(e.kind)}};
      switch (e.kind) {
        case ExplicitMaskKind::tree:
          explicit_mask["parents"] = e.tree_parents;
          break;
        case ExplicitMaskKind::branches:
          explicit_mask["branches"] = e.branches;
          break;
        case ExplicitMaskKind::random:
          explicit_mask["density"] = e.density;
          break;
        case ExplicitMaskKind::file:
          write_file_reference(explicit_mask, e.file, e.sha256);
          break;
        case ExplicitMaskKind::causal:
          break;
      }
      m_out["explicit"] = std::move(explicit_mask);
    }
    out["mask"] = std::move(m_out);
  }
  return out;
}

std::string canonical_json(const WorkloadSpec& spec) {
  return to_json(spec).dump();
}

std::string content_hash(const WorkloadSpec& spec) {
  return sha256_hex(canonical_json(spec));
}

}  // namespace attn
