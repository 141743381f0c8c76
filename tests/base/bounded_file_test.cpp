// read_bounded_file: whole regular files under the bound, a clear failure kind otherwise.
#include "base/bounded_file.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
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
}

// A FIFO nobody writes to would block fopen for ever: it is refused at once, as are devices,
// sockets and directories (opened without blocking and checked with fstat).
TEST(BoundedFile, OnlyRegularFilesAreRead) {
  const fs::path dir =
      fs::temp_directory_path() / ("attn-bounded-special-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path socket_path = dir / "socket";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);

  struct Case {
    fs::path path;
    const char* type;
  };
  for (const Case& c :
       {Case{fifo, "a FIFO (named pipe)"}, Case{socket_path, "a socket"}, Case{dir, "a directory"},
        Case{"/dev/zero", "a character device"}, Case{"/dev/null", "a character device"}}) {
    BoundedReadFailure failure;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(read_bounded_file(c.path.string(), 100, failure).has_value()) << c.path;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1)) << c.path;
    EXPECT_EQ(failure.kind, BoundedReadFailure::Kind::not_regular) << c.path;
    EXPECT_EQ(failure.file_type, c.type) << c.path;
    EXPECT_EQ(describe_failure(failure, 100),
              std::string("the file is ") + c.type + ", not a regular file");
  }
  ::close(fd);
  fs::remove_all(dir);
}

// A path from JSON may hold "\u0000": the system would read up to the NUL, a shorter path.
TEST(BoundedFile, APathWithANulByteIsRefused) {
  const fs::path path =
      fs::temp_directory_path() / ("attn-bounded-nul-" + std::to_string(::getpid()));
  { std::ofstream(path) << "x"; }
  BoundedReadFailure failure;
  EXPECT_FALSE(read_bounded_file(path.string() + std::string(1, '\0') + "tail", 100, failure));
  EXPECT_EQ(failure.kind, BoundedReadFailure::Kind::nul_in_path);
  EXPECT_TRUE(read_bounded_file(path.string(), 100, failure).has_value());
  fs::remove(path);
}

TEST(BoundedFile, PrintablePathsAreOneShortLine) {
  EXPECT_EQ(printable_path("a/b.json"), "a/b.json");
  EXPECT_EQ(printable_path(std::string("a\nb\tc\0d\x7f", 8)), "a\\nb\\tc\\x00d\\x7F");
  const std::string shown = printable_path(std::string(5000, 'x'));
  EXPECT_EQ(shown, std::string(256, 'x') + "...");
}

}  // namespace
}  // namespace attn
