// A minimal reader and writer of the safetensors format (huggingface/safetensors), so that a
// generated batch can be handed to other tools (PyTorch, JAX, numpy) byte for byte.
//
// File layout: an 8-byte little-endian header length N, N bytes of JSON header, then the tensor
// bytes. The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets relative to the start of the data, tensors packed back to back with no holes) and may
// hold "__metadata__", a string-to-string map. The header is padded with spaces so the data starts
// at an 8-byte boundary, as the reference implementation does.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/dtype.hpp"

namespace attn {

// Bytes per element of a safetensors dtype name ("BF16", "F32", "I32", "F8_E4M3", ...); 0 if the
// name is not one this module knows.
size_t safetensors_element_size(const std::string& dtype);
// The safetensors name of a DType: BF16, F16, F32, F8_E4M3.
std::string safetensors_dtype(DType dtype);

struct SafetensorsTensor {
  std::string name;
  std::string dtype;           // safetensors dtype name
  std::vector<int64_t> shape;  // row-major; {} for a scalar
  std::vector<uint8_t> data;   // element count * element size bytes
};

// Collects tensors, then writes them in the order added.
class SafetensorsWriter {
 public:
  // Throws (internal) when the byte count does not match dtype and shape, or the name repeats.
  void add(SafetensorsTensor tensor);
  void add_metadata(const std::string& key, const std::string& value);
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }

  // The complete header bytes (length prefix, JSON, padding) for the tensors added so far.
  std::string header() const;
  // Writes the file; an unwritable path is an EnvironmentError.
  void write(const std::string& path) const;

 private:
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A parsed file. Reading checks everything the format promises: header length within the file,
// a JSON object, known dtypes, byte counts that match shapes, offsets packed without holes or
// overlap and covering the data exactly. A violation is an InputError naming the file.
struct SafetensorsFile {
  std::map<std::string, std::string> metadata;
  std::vector<SafetensorsTensor> tensors;  // in data-offset order
  uint64_t header_length = 0;              // N, the JSON header's bytes (padding included)

  const SafetensorsTensor* find(const std::string& name) const;
};

SafetensorsFile read_safetensors(const std::string& path);
SafetensorsFile parse_safetensors(const std::vector<uint8_t>& bytes, const std::string& source);

}  // namespace attn
