#include "workloads/batch_dump.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/errors.hpp"
#include "base/sha256.hpp"
#include "workloads/batch_data.hpp"

namespace attn {

namespace {

template <typename T>
const char* integer_dtype() {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "int32 or int64 index arrays");
  return sizeof(T) == 4 ? "I32" : "I64";
}

template <typename T>
DumpTensor vector_tensor(const std::string& name, const std::string& dtype,
                         std::vector<int64_t> shape, const std::vector<T>& values,
                         std::string meaning) {
  DumpTensor t;
  t.tensor.name = name;
  t.tensor.dtype = dtype;
  t.tensor.shape = std::move(shape);
  t.tensor.data.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(t.tensor.data.data(), values.data(), t.tensor.data.size());
  t.meaning = std::move(meaning);
  return t;
}

template <typename T>
DumpTensor index_tensor(const std::string& name, const std::vector<T>& values,
                        std::string meaning) {
  return vector_tensor(name, integer_dtype<T>(), {int64_t(values.size())}, values,
                       std::move(meaning));
}

// Shape of a K or V pool in the batch's layout (workload_spec.hpp, KvLayout).
std::vector<int64_t> pool_shape(const Batch& batch, DataStream stream) {
  const int64_t pages = batch.num_pages, page = batch.page_size;
  const int64_t heads = batch.spec.model.num_kv_heads, dim = stream_head_dim(batch, stream);
  switch (batch.spec.kv_cache.layout) {
    case KvLayout::nhd:
      return {pages, page, heads, dim};
    case KvLayout::hnd:
      return {pages, heads, page, dim};
    case KvLayout::vllm: {
      if (stream == DataStream::value) return {pages, heads, dim, page};
      const int64_t x = 16 / int64_t(size_of(batch.kv_dtype));
      return {pages, heads, dim / x, page, x};
    }
  }
  return {};
}

std::string pool_meaning(const Batch& batch, DataStream stream) {
  const char* which = stream == DataStream::key ? "K" : "V";
  // V's rows are v_head_dim wide when the workload sets it.
  const std::string dim =
      stream == DataStream::value && batch.spec.model.v_head_dim ? "v_head_dim" : "head_dim";
  std::string layout;
  switch (batch.spec.kv_cache.layout) {
    case KvLayout::nhd:
      layout = "[pages, page_size, kv_heads, " + dim + "]";
      break;
    case KvLayout::hnd:
      layout = "[pages, kv_heads, page_size, " + dim + "]";
      break;
    case KvLayout::vllm:
      layout = stream == DataStream::key ? "[pages, kv_heads, head_dim / x, page_size, x], x = 16 "
                                           "bytes / element"
                                         : "[pages, kv_heads, " + dim + ", page_size]";
      break;
  }
  std::string text = std::string(which) + " cache pool " + layout + " (" +
                     to_string(batch.spec.kv_cache.layout) +
                     " layout); slots no sequence owns and the poison page are NaN";
  if (batch.kv_dtype == DType::fp8_e4m3) {
    text += "; fp8 codes: value = code * " + std::string(stream == DataStream::key ? "k" : "v") +
            "_scales";
  }
  return text;
}

// mla's one latent pool (batch.hpp): [pages, page_size, kv_lora_rank + qk_rope_head_dim].
DumpTensor latent_pool_tensor(const Batch& batch) {
  const ModelShape& m = batch.spec.model;
  DumpTensor t;
  t.tensor.name = "latent_cache";
  t.tensor.dtype = safetensors_dtype(batch.kv_dtype);
  t.tensor.shape = {batch.num_pages, batch.page_size, m.head_dim};
  t.tensor.data.resize(size_t(pool_elements(batch, DataStream::key)) * size_of(batch.kv_dtype));
  fill_kv_pool(batch, DataStream::key, t.tensor.data.data());
  t.meaning =
      "latent cache pool [pages, page_size, kv_lora_rank + qk_rope_head_dim], a row [c | "
      "k_rope] (V is c); slots no sequence owns and the poison page are NaN";
  if (batch.kv_dtype == DType::fp8_e4m3) t.meaning += "; fp8 codes: value = code * latent_scale";
  return t;
}

DumpTensor pool_tensor(const Batch& batch, DataStream stream) {
  DumpTensor t;
  t.tensor.name = stream == DataStream::key ? "k_cache" : "v_cache";
  t.tensor.dtype = safetensors_dtype(batch.kv_dtype);
  t.tensor.shape = pool_shape(batch, stream);
  t.tensor.data.resize(size_t(pool_elements(batch, stream)) * size_of(batch.kv_dtype));
  fill_kv_pool(batch, stream, t.tensor.data.data());
  t.meaning = pool_meaning(batch, stream);
  return t;
}

}  // namespace

std::vector<DumpTensor> batch_tensors(const Batch& batch) {
  const ModelShape& m = batch.spec.model;
  const int64_t seqs = batch.num_seqs;
  std::vector<DumpTensor> out;

  DumpTensor q;
  q.tensor.name = "q";
  q.tensor.dtype = safetensors_dtype(batch.dtype);
  q.tensor.shape = {batch.total_q, m.num_q_heads, m.head_dim};
  q.tensor.data.resize(size_t(query_elements(batch)) * size_of(batch.dtype));
  fill_query(batch, q.tensor.data.data());
  q.meaning =
      "queries [total_q, num_q_heads, head_dim], sequence s's new tokens at rows "
      "cu_seqlens_q[s] .. cu_seqlens_q[s+1]-1";
  if (m.latent()) {
    q.meaning +=
        "; mla: head_dim = kv_lora_rank + qk_rope_head_dim, a row [q_nope absorbed | "
        "q_rope]";
  }
  out.push_back(std::move(q));
  if (m.latent()) {
    out.push_back(latent_pool_tensor(batch));
    if (!batch.k_scales.empty()) {
      out.push_back(vector_tensor("latent_scale", "F32", {1}, batch.k_scales,
                                  "fp8 dequantisation scale of the latent cache [1], per tensor"));
    }
  } else {
    out.push_back(pool_tensor(batch, DataStream::key));
    out.push_back(pool_tensor(batch, DataStream::value));
  }
  if (!batch.k_scales.empty() && !m.latent()) {
    const std::string per = batch.k_scales.size() == 1 ? "[1], per tensor" : "[num_kv_heads]";
    out.push_back(vector_tensor("k_scales", "F32", {int64_t(batch.k_scales.size())}, batch.k_scales,
                                "fp8 dequantisation scales of K " + per));
    out.push_back(vector_tensor("v_scales", "F32", {int64_t(batch.v_scales.size())}, batch.v_scales,
                                "fp8 dequantisation scales of V " + per));
  }
  out.push_back(vector_tensor(
      "block_table", integer_dtype<int32_t>(), {seqs, int64_t(batch.max_pages_per_seq)},
      padded_block_table(batch),
      "page ids [num_seqs, max_pages_per_seq] in token order, padded with the poison page"));
  out.push_back(index_tensor("page_indptr", batch.page_indptr,
                             "CSR row pointers [num_seqs + 1] into page_indices"));
  out.push_back(index_tensor("page_indices", batch.page_indices,
                             "CSR page ids, sequence by sequence, in token order"));
  out.push_back(index_tensor("last_page_len", batch.last_page_len,
                             "tokens in each sequence's last page (0: no pages)"));
  out.push_back(
      index_tensor("cu_seqlens_q", batch.cu_seqlens_q, "prefix sums [num_seqs + 1] of query_lens"));
  out.push_back(
      index_tensor("cu_seqlens_kv", batch.cu_seqlens_kv, "prefix sums [num_seqs + 1] of kv_lens"));
  out.push_back(index_tensor("context_lens", batch.context_lens,
                             "tokens already in the cache before the new ones"));
  out.push_back(index_tensor("query_lens", batch.query_lens, "new (query) tokens per sequence"));
  out.push_back(index_tensor("kv_lens", batch.kv_lens,
                             "keys per sequence: context_lens + query_lens (new tokens' keys are "
                             "in the cache)"));
  out.push_back(index_tensor("slot_mapping", batch.slot_mapping,
                             "cache slot (page * page_size + offset) of each new token [total_q]"));
  out.push_back(index_tensor("prefix_source", batch.prefix_source,
                             "sequence whose data the shared prefix holds (itself: no sharing)"));
  out.push_back(index_tensor("shared_prefix_len", batch.shared_prefix_len,
                             "leading tokens on pages shared with prefix_source"));
  if (!batch.sink_logits.empty()) {
    out.push_back(vector_tensor("sink_logits", "F32", {int64_t(batch.sink_logits.size())},
                                batch.sink_logits,
                                "attention sink logit per q head: joins the softmax "
                                "denominator, contributes no value"));
  }
  if (batch.block_sparse) {
    const BlockSparseLayout& l = *batch.block_sparse;
    out.push_back(vector_tensor("block_sparse_crow", integer_dtype<int32_t>(),
                                {l.num_heads, int64_t(l.num_blocks) + 1}, l.crow,
                                "block-sparse CSR row offsets per q head [num_heads, num_blocks "
                                "+ 1] into that head's row of block_sparse_col"));
    out.push_back(vector_tensor("block_sparse_col", integer_dtype<int32_t>(),
                                {l.num_heads, int64_t(l.max_nnz)}, l.col,
                                "kept key blocks per q head [num_heads, max_nnz], blocks of "
                                "block_size tokens"));
  }
  if (batch.explicit_mask) {
    const ExplicitMask& mask = *batch.explicit_mask;
    out.push_back(index_tensor("explicit_mask_offsets", mask.offsets,
                               "start of sequence s's grid in explicit_mask [num_seqs + 1]"));
    out.push_back(vector_tensor("explicit_mask", "BOOL", {int64_t(mask.bits.size())}, mask.bits,
                                "row-major (query_len, kv_len) grid per sequence, 1 = visible"));
  }
  return out;
}

DumpTensor reference_output_tensor(const Batch& batch, const std::vector<float>& out) {
  const ModelShape& m = batch.spec.model;
  ATTN_ASSERT(int64_t(out.size()) == output_elements(batch), "reference output size");
  const std::string dim =
      m.latent() ? "kv_lora_rank], in latent space" : (m.v_head_dim ? "v_head_dim]" : "head_dim]");
  return vector_tensor("reference_out", "F32",
                       {batch.total_q, m.num_q_heads, m.effective_v_head_dim()}, out,
                       "attention output of the CPU reference (fp32, double accumulation) "
                       "[total_q, num_q_heads, " +
                           dim);
}

std::string tensor_sha256(const SafetensorsTensor& tensor) {
  Sha256 hash;
  hash.update(tensor.data.data(), tensor.data.size());
  return hash.hex_digest();
}

nlohmann::json dump_index(const Batch& batch, const std::vector<DumpTensor>& tensors) {
  using nlohmann::json;
  const ModelShape& m = batch.spec.model;
  json index;
  index["format"] = "attn-bench batch dump";
  index["format_version"] = 1;
  index["tensors_file"] = kDumpTensorsFile;
  index["spec"] = json::parse(canonical_json(batch.spec));
  index["spec_hash"] = batch.spec_hash;
  index["batch"] = {
      {"num_seqs", batch.num_seqs},
      {"total_q", batch.total_q},
      {"total_kv", batch.total_kv},
      {"num_q_heads", m.num_q_heads},
      {"num_kv_heads", m.num_kv_heads},
      {"head_dim", m.head_dim},
      {"v_head_dim", m.effective_v_head_dim()},
      {"dtype", to_string(batch.dtype)},
      {"kv_dtype", to_string(batch.kv_dtype)},
      {"layout", to_string(batch.spec.kv_cache.layout)},
      {"page_size", batch.page_size},
      {"num_pages", batch.num_pages},
      {"poison_page", batch.poison_page},
      {"softmax_scale", batch.softmax_scale},
      {"logits_soft_cap", batch.logits_soft_cap},
      {"sliding_window", batch.sliding_window},
      {"causal", batch.causal},
      {"data_seed", batch.data_seed},
  };
  if (batch.block_sparse)
    index["batch"]["block_sparse_block_size"] = batch.block_sparse->block_size;
  if (m.latent()) {  // head_dim above is kv_lora_rank + qk_rope_head_dim
    index["batch"]["attention"] = to_string(m.attention);
    index["batch"]["kv_lora_rank"] = m.kv_lora_rank;
    index["batch"]["qk_rope_head_dim"] = m.qk_rope_head_dim;
  }
  json list = json::array();
  for (const DumpTensor& t : tensors) {
    list.push_back({{"name", t.tensor.name},
                    {"dtype", t.tensor.dtype},
                    {"shape", t.tensor.shape},
                    {"bytes", t.tensor.data.size()},
                    {"sha256", tensor_sha256(t.tensor)},
                    {"meaning", t.meaning}});
  }
  index["tensors"] = std::move(list);
  return index;
}

void write_batch_dump(const Batch& batch, std::vector<DumpTensor> tensors, const std::string& dir,
                      const nlohmann::json& extra_index) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw EnvironmentError("cannot create " + dir + ": " + error.message());
  nlohmann::json index = dump_index(batch, tensors);
  if (extra_index.is_object()) {
    for (const auto& [key, value] : extra_index.items()) index[key] = value;
  }
  SafetensorsWriter writer;
  writer.add_metadata("format", "attn-bench batch dump");
  writer.add_metadata("spec_hash", batch.spec_hash);
  writer.add_metadata("index", kDumpIndexFile);
  for (DumpTensor& t : tensors) writer.add(std::move(t.tensor));
  writer.write((fs::path(dir) / kDumpTensorsFile).string());
  const fs::path index_path = fs::path(dir) / kDumpIndexFile;
  std::ofstream out(index_path);
  out << index.dump(2) << "\n";
  out.close();
  if (!out) throw EnvironmentError("cannot write " + index_path.string());
}

}  // namespace attn
