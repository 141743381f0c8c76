#include "workloads/safetensors.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"

namespace attn {

namespace {

using nlohmann::json;

// A header larger than this is refused unread (the reference implementation's limit is 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t dim : shape) n *= dim;
  return n;
}

// The byte count a shape and element size claim, or nullopt when it does not fit 64 bits (a file
// could otherwise claim a shape whose product wraps around to its few bytes).
std::optional<uint64_t> claimed_bytes(const std::vector<int64_t>& shape, size_t element) {
  uint64_t n = element;
  for (int64_t dim : shape) {
    if (dim < 0 || __builtin_mul_overflow(n, uint64_t(dim), &n)) return std::nullopt;
  }
  return n;
}

}  // namespace

size_t safetensors_element_size(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"I64", 8}, {"U64", 8},     {"F64", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

std::string safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return "BF16";
    case DType::fp16:
      return "F16";
    case DType::fp32:
      return "F32";
    case DType::fp8_e4m3:
      return "F8_E4M3";
  }
  return "?";
}

void SafetensorsWriter::add(SafetensorsTensor tensor) {
  const size_t element = safetensors_element_size(tensor.dtype);
  ATTN_ASSERT(element > 0, "unknown safetensors dtype " + tensor.dtype);
  ATTN_ASSERT(tensor.data.size() == size_t(element_count(tensor.shape)) * element,
              "tensor " + tensor.name + ": byte count does not match its shape");
  ATTN_ASSERT(tensor.name != "__metadata__", "reserved tensor name");
  for (const auto& t : tensors_) ATTN_ASSERT(t.name != tensor.name, "duplicate " + tensor.name);
  tensors_.push_back(std::move(tensor));
}

void SafetensorsWriter::add_metadata(const std::string& key, const std::string& value) {
  metadata_[key] = value;
}

std::string SafetensorsWriter::header() const {
  json header = json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    const uint64_t end = offset + t.data.size();
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  std::string out(8, '\0');
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((n >> (8 * i)) & 0xFF);
  return out + text;
}

void SafetensorsWriter::write(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw EnvironmentError("cannot write " + path);
  const std::string head = header();
  out.write(head.data(), std::streamsize(head.size()));
  for (const auto& t : tensors_)
    out.write(reinterpret_cast<const char*>(t.data.data()), std::streamsize(t.data.size()));
  out.close();
  if (!out) throw EnvironmentError("cannot write " + path + " (disk full?)");
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

SafetensorsFile parse_safetensors(const std::vector<uint8_t>& bytes, const std::string& source) {
  auto fail = [&](const std::string& problem) -> InputError {
    return InputError(source, {problem});
  };
  if (bytes.size() < 8) throw fail("shorter than the 8-byte header length");
  SafetensorsFile file;
  for (int i = 0; i < 8; ++i) file.header_length |= uint64_t(bytes[size_t(i)]) << (8 * i);
  if (file.header_length > kMaxHeaderBytes || file.header_length > bytes.size() - 8) {
    throw fail("header length " + std::to_string(file.header_length) + " exceeds the file");
  }
  json header;
  try {
    header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + long(file.header_length));
  } catch (const json::parse_error& e) {
    throw fail(std::string("header is not JSON: ") + e.what());
  }
  if (!header.is_object()) throw fail("header is not a JSON object");

  const size_t data_begin = 8 + size_t(file.header_length);
  const uint64_t data_bytes = bytes.size() - data_begin;
  std::vector<std::string> problems;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) {
        problems.push_back("/__metadata__: must be an object of strings");
        continue;
      }
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string())
          problems.push_back("/__metadata__/" + key + ": must be a string");
        else
          file.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = "/" + name;
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets") || !entry["dtype"].is_string() ||
        !entry["shape"].is_array() || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2) {
      problems.push_back(where + ": needs dtype, shape and data_offsets [begin, end]");
      continue;
    }
    SafetensorsTensor t;
    t.name = name;
    t.dtype = entry["dtype"].get<std::string>();
    bool shape_ok = true;
    for (const auto& dim : entry["shape"]) {
      if (!dim.is_number_unsigned() ||
          dim.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        shape_ok = false;
      else
        t.shape.push_back(dim.get<int64_t>());
    }
    const auto& offsets = entry["data_offsets"];
    if (!shape_ok || !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
      problems.push_back(where + ": shape and data_offsets must be non-negative integers");
      continue;
    }
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    const size_t element = safetensors_element_size(t.dtype);
    if (element == 0) {
      problems.push_back(where + ": unknown dtype " + t.dtype);
      continue;
    }
    if (begin > end || end > data_bytes) {
      problems.push_back(where + ": data_offsets [" + std::to_string(begin) + ", " +
                         std::to_string(end) + "] outside the " + std::to_string(data_bytes) +
                         " data bytes");
      continue;
    }
    const std::optional<uint64_t> claimed = claimed_bytes(t.shape, element);
    if (!claimed) {
      problems.push_back(where + ": the shape's element count does not fit 64 bits");
      continue;
    }
    if (end - begin != *claimed) {
      problems.push_back(where + ": " + std::to_string(end - begin) +
                         " bytes do not match dtype and shape");
      continue;
    }
    t.data.assign(bytes.begin() + long(data_begin + begin), bytes.begin() + long(data_begin + end));
    spans.push_back({begin, end});
    file.tensors.push_back(std::move(t));
  }
  if (problems.empty()) {
    // Packed: sorted by offset, each tensor starts where the previous ended, the last ends the
    // file.
    std::vector<size_t> order(file.tensors.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return spans[a] < spans[b]; });
    uint64_t expected = 0;
    std::vector<SafetensorsTensor> sorted;
    for (size_t i : order) {
      if (spans[i].first != expected) {
        problems.push_back("/" + file.tensors[i].name + ": starts at " +
                           std::to_string(spans[i].first) + ", expected " +
                           std::to_string(expected) + " (hole or overlap)");
      }
      expected = spans[i].second;
      sorted.push_back(std::move(file.tensors[i]));
    }
    if (problems.empty() && expected != data_bytes) {
      problems.push_back("tensors cover " + std::to_string(expected) + " of " +
                         std::to_string(data_bytes) + " data bytes");
    }
    file.tensors = std::move(sorted);
  }
  if (!problems.empty()) throw InputError(source, problems);
  return file;
}

SafetensorsFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, {"cannot read the file"});
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  return parse_safetensors(bytes, path);
}

}  // namespace attn
