// attn-tune export's outputs, rendered from an ExportResult (results/export_table.hpp): a JSON
// document, a self-contained C++17 header with select(), and the coverage report as text lines.
// docs/export.md shows each.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/export_table.hpp"

namespace attn {

// Who made the export, written into both outputs.
struct ExportProvenance {
  std::string tool_version, git_commit, command_line;
  std::string generated_at;  // ISO 8601 UTC
};

nlohmann::ordered_json export_json(const ExportResult& result, const ExportProvenance& provenance);

// `namespace_name` is a C++ identifier (checked by valid_cpp_namespace).
std::string export_cpp_header(const ExportResult& result, const ExportProvenance& provenance,
                              const std::string& namespace_name);
// A namespace name such as "attn_tuned" or "my::tuned": identifiers joined by "::", no keyword
// check beyond the shape.
bool valid_cpp_namespace(const std::string& name);

// For each family of the table: how many buckets of the cross product of its measured axis values
// were exported, measured with nothing passed, or have no data, and a grid of batch size by
// context length per (GQA ratio, head dim, dtypes, page size).
std::vector<std::string> coverage_lines(const ExportDeviceTable& table);

// "NVIDIA H100 80GB HBM3, uuid GPU-..., fingerprint ..., driver 13.0, CUDA 13.0, NVRTC 13.0"
std::string describe_export_device(const StoredDevice& device);

}  // namespace attn
