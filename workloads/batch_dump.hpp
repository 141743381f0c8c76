// `attn-bench workload dump`: a generated batch written out so another tool (PyTorch, JAX, a
// vendor kernel's test) can run exactly the same batch: one safetensors file with every tensor
// and index array, and a JSON index with the canonical spec, its hash, what each tensor means,
// and the SHA-256 of each tensor's bytes (to confirm identical bytes without comparing files).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/batch.hpp"
#include "workloads/safetensors.hpp"

namespace attn {

inline constexpr const char* kDumpTensorsFile = "batch.safetensors";
inline constexpr const char* kDumpIndexFile = "batch.json";

struct DumpTensor {
  SafetensorsTensor tensor;
  std::string meaning;  // one line: layout, indexing and units
};

// Every tensor of the batch: Q and the K/V pools (generated; NaN in unowned slots), fp8 scales,
// the page table in both forms, lengths, slot mapping, sinks and masks (those in force).
// Index arrays keep the Batch's element types (int32 page ids, int64 lengths and offsets).
std::vector<DumpTensor> batch_tensors(const Batch& batch);

// The reference output as a tensor: fp32 [total_q, num_q_heads, head_dim].
DumpTensor reference_output_tensor(const Batch& batch, const std::vector<float>& out);

// The index describing `tensors` (order kept) and the batch's scalar parameters.
nlohmann::json dump_index(const Batch& batch, const std::vector<DumpTensor>& tensors);

// Writes kDumpTensorsFile and kDumpIndexFile into `dir` (created if missing). `extra_index`, an
// object or null, adds its keys to the index (the caller's: which oracle made reference_out and
// the tolerance outputs are verified with, which this module does not know).
void write_batch_dump(const Batch& batch, std::vector<DumpTensor> tensors, const std::string& dir,
                      const nlohmann::json& extra_index = nullptr);

// SHA-256 of a tensor's bytes, hex.
std::string tensor_sha256(const SafetensorsTensor& tensor);

}  // namespace attn
