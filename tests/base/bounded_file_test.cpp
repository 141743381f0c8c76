// read_bounded_file: whole files under the bound, a clear failure kind otherwise.
#include "base/bounded_file.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace attn {
namespace {

namespace fs = std::filesystem;

TEST(BoundedFile, ReadsUpToTheBoundAndRefusesMore) {
  const fs::path path =
      fs::temp_directory_path() / ("attn-bounded-file-" + std::to_string(::getpid()));
  {
    std::ofstream out(path, std::ios::binary);
    out << std::string(100000, 'x');  // more than one 64 KiB read
  }
  BoundedReadFailure failure;
  const auto whole = read_bounded_file(path.string(), 100000, failure);
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->size(), 100000u);

  EXPECT_FALSE(read_bounded_file(path.string(), 99999, failure).has_value());
  EXPECT_EQ(failure.kind, BoundedReadFailure::Kind::too_large);
  fs::remove(path);

  EXPECT_FALSE(read_bounded_file(path.string(), 100, failure).has_value());
  EXPECT_EQ(failure.kind, BoundedReadFailure::Kind::cannot_open);
  EXPECT_NE(failure.error, 0);

  EXPECT_FALSE(read_bounded_file(fs::temp_directory_path().string(), 100, failure).has_value());
  EXPECT_EQ(failure.kind, BoundedReadFailure::Kind::cannot_read);
}

}  // namespace
}  // namespace attn
