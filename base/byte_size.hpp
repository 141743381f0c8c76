// Sizes in bytes as people write and read them: "16GiB", "512 MiB", "8G", "1.5GiB" or a plain
// number of bytes in; "8.5 GiB" out. K, M, G and T mean powers of 1024, with or without "iB".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace attn {

// The size `text` names, or nullopt when it is not a size: empty, negative, an unknown unit, or
// over 2^62 bytes.
std::optional<int64_t> parse_byte_size(std::string_view text);

// "512 B", "4.0 KiB", "8.5 GiB": one decimal above 1 KiB.
std::string format_bytes(int64_t bytes);

}  // namespace attn
