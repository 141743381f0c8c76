#include "workloads/safetensors.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/errors.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

SafetensorsTensor tensor(const std::string& name, const std::string& dtype,
                         std::vector<int64_t> shape, size_t bytes, uint8_t fill) {
  SafetensorsTensor t{name, dtype, std::move(shape), std::vector<uint8_t>(bytes)};
  for (size_t i = 0; i < bytes; ++i) t.data[i] = uint8_t(fill + i);
  return t;
}

SafetensorsWriter sample_writer() {
  SafetensorsWriter writer;
  writer.add(tensor("q", "BF16", {2, 3}, 12, 1));
  writer.add(tensor("codes", "F8_E4M3", {5}, 5, 50));  // odd size: the next tensor is unaligned
  writer.add(tensor("table", "I32", {2, 2}, 16, 100));
  writer.add(tensor("scalar", "F32", {}, 4, 7));
  writer.add(tensor("empty", "I64", {0, 4}, 0, 0));
  writer.add_metadata("spec_hash", "abc123");
  return writer;
}

std::vector<uint8_t> file_bytes(const SafetensorsWriter& writer) {
  const std::string head = writer.header();
  std::vector<uint8_t> bytes(head.begin(), head.end());
  for (const auto& t : writer.tensors()) bytes.insert(bytes.end(), t.data.begin(), t.data.end());
  return bytes;
}

// The layout the format specifies, checked byte by byte rather than through our own reader.
TEST(Safetensors, HeaderFollowsTheFormat) {
  const SafetensorsWriter writer = sample_writer();
  const std::string head = writer.header();
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(head[size_t(i)])) << (8 * i);
  ASSERT_EQ(n + 8, head.size());
  EXPECT_EQ(head.size() % 8, 0u) << "data must start 8-byte aligned";
  EXPECT_EQ(head[8], '{');
  const auto json = nlohmann::json::parse(head.substr(8));  // trailing spaces are allowed
  EXPECT_EQ(json["__metadata__"]["spec_hash"], "abc123");
  EXPECT_EQ(json["q"]["dtype"], "BF16");
  EXPECT_EQ(json["q"]["shape"], nlohmann::json::array({2, 3}));
  EXPECT_EQ(json["q"]["data_offsets"], nlohmann::json::array({0, 12}));
  EXPECT_EQ(json["codes"]["data_offsets"], nlohmann::json::array({12, 17}));
  EXPECT_EQ(json["table"]["data_offsets"], nlohmann::json::array({17, 33}));
  EXPECT_EQ(json["scalar"]["shape"], nlohmann::json::array());
  EXPECT_EQ(json["empty"]["data_offsets"], nlohmann::json::array({37, 37}));
}

TEST(Safetensors, RoundTripsThroughAFile) {
  const fs::path path = fs::temp_directory_path() / ("attn-safetensors-roundtrip-" + std::to_string(::getpid()) + ".safetensors");
  const SafetensorsWriter writer = sample_writer();
  writer.write(path.string());
  const SafetensorsFile file = read_safetensors(path.string());
  fs::remove(path);
  EXPECT_EQ(file.metadata.at("spec_hash"), "abc123");
  ASSERT_EQ(file.tensors.size(), writer.tensors().size());
  for (const auto& written : writer.tensors()) {
    const SafetensorsTensor* read = file.find(written.name);
    ASSERT_NE(read, nullptr) << written.name;
    EXPECT_EQ(read->dtype, written.dtype);
    EXPECT_EQ(read->shape, written.shape);
    EXPECT_EQ(read->data, written.data) << written.name;
  }
  EXPECT_EQ(file.find("absent"), nullptr);
}

TEST(Safetensors, MalformedFilesAreInputErrors) {
  const std::vector<uint8_t> good = file_bytes(sample_writer());
  EXPECT_NO_THROW(parse_safetensors(good, "good"));

  std::vector<uint8_t> truncated(good.begin(), good.end() - 1);
  EXPECT_THROW(parse_safetensors(truncated, "truncated"), InputError);
  std::vector<uint8_t> longer = good;
  longer.push_back(0);  // a byte no tensor covers
  EXPECT_THROW(parse_safetensors(longer, "longer"), InputError);
  std::vector<uint8_t> huge_header = good;
  huge_header[7] = 0x7F;
  EXPECT_THROW(parse_safetensors(huge_header, "huge"), InputError);
  EXPECT_THROW(parse_safetensors({1, 2, 3}, "short"), InputError);

  auto with_header = [](const std::string& json) {
    std::string text = json;
    std::vector<uint8_t> bytes(8, 0);
    bytes[0] = uint8_t(text.size());
    bytes.insert(bytes.end(), text.begin(), text.end());
    bytes.insert(bytes.end(), 4, 0);
    return bytes;
  };
  EXPECT_NO_THROW(parse_safetensors(
      with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})"), "ok"));
  for (const char* bad : {
           R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})",  // unknown dtype
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})",  // shape vs bytes
           R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})",  // past the end
           R"({"a":{"dtype":"I8","shape":[2],"data_offsets":[2,4]}})",   // a hole at 0
           R"({"a":{"dtype":"F32","shape":[1]}})",                       // no offsets
           R"({"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
           R"([1,2])",
           // Shapes whose element count wraps around 64 bits to the 4 bytes there are.
           R"({"a":{"dtype":"U8","shape":[4,4611686018427387905],"data_offsets":[0,4]}})",
           R"({"a":{"dtype":"U8","shape":[4294967296,4294967296,4],"data_offsets":[0,4]}})",
           R"({"a":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,4]}})",
       }) {
    EXPECT_THROW(parse_safetensors(with_header(bad), "bad"), InputError) << bad;
  }
}

TEST(Safetensors, DtypeNames) {
  EXPECT_EQ(safetensors_dtype(DType::bf16), "BF16");
  EXPECT_EQ(safetensors_dtype(DType::fp16), "F16");
  EXPECT_EQ(safetensors_dtype(DType::fp32), "F32");
  EXPECT_EQ(safetensors_dtype(DType::fp8_e4m3), "F8_E4M3");
  EXPECT_EQ(safetensors_element_size("F8_E4M3"), 1u);
  EXPECT_EQ(safetensors_element_size("I64"), 8u);
  EXPECT_EQ(safetensors_element_size("bf16"), 0u);
}

}  // namespace
}  // namespace attn
