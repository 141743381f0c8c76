// Files that are not regular files, made at test time, as a workload or as a file a workload
// refers to (block-sparse layout, explicit mask, trace): a FIFO nobody writes (fopen would wait
// for ever), a socket, a directory, devices, a symbolic-link loop and a dangling link. Each is
// refused at once with the invalid-input exit code and what the file is, by `workload validate`
// and `run --cpu` of the real binary (docs/reliability.md).
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/apps/cli_runner.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kSpecialFileSeconds = 5.0;

json special_files_workload() {
  return json::parse(R"({
    "schema_version": 2,
    "name": "special",
    "model": {"num_q_heads": 4, "num_kv_heads": 2, "head_dim": 64, "dtype": "bf16"},
    "kv_cache": {"page_size": 16},
    "sequences": [{"context_len": 40, "query_len": 8, "count": 2}],
    "seed": 7
  })");
}

class SpecialFiles : public testing::Cli {
 protected:
  void TearDown() override {
    for (int fd : sockets_) ::close(fd);
    testing::Cli::TearDown();
  }

  // A bound Unix socket at `path` (open() on it fails with ENXIO).
  fs::path make_socket(const std::string& name) {
    const fs::path path = dir_ / name;
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0) << path;
    sockets_.push_back(fd);
    return path;
  }

  fs::path make_fifo(const std::string& name) {
    const fs::path path = dir_ / name;
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
    return path;
  }

  // validate and run --cpu of `workload`: both refused at once with `message`.
  void expect_refused(const std::string& workload, const std::string& message) {
    for (const bool validate : {true, false}) {
      SCOPED_TRACE(workload + (validate ? " (validate)" : " (run --cpu)"));
      std::vector<std::string> argv = {binary_};
      if (validate) {
        argv.insert(argv.end(), {"workload", "validate", workload});
      } else {
        argv.insert(argv.end(), {"run", "--cpu", "--db", (dir_ / "results.db").string(), workload});
      }
      const testing::MeasuredRun r =
          testing::run_measured(argv, {"ATTN_DB=", "ATTN_JIT_CACHE_DIR=" + (dir_ / "jit").string()},
                                dir_, kSpecialFileSeconds * 2);
      EXPECT_FALSE(r.killed) << "it waited on the file";
      EXPECT_EQ(r.exit_code, testing::kInvalidInput) << r.out << r.err;
      EXPECT_LT(r.seconds, kSpecialFileSeconds);
      EXPECT_NE(r.err.find("attn-bench: invalid input: "), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
      EXPECT_FALSE(fs::exists(dir_ / "results.db")) << "a database was opened first";
    }
  }

  // A workload whose `pointer` names `file`, written beside it.
  std::string workload_referring_to(const std::string& name, const std::string& pointer,
                                    const json& value) {
    json doc = special_files_workload();
    doc[json::json_pointer(pointer)] = value;
    std::ofstream(dir_ / name) << doc.dump(2);
    return (dir_ / name).string();
  }

  std::vector<int> sockets_;
};

TEST_F(SpecialFiles, AWorkloadThatIsNotARegularFileIsRefusedAtOnce) {
  expect_refused(make_fifo("workload.fifo").string(), "the file is a FIFO (named pipe)");
  expect_refused(make_socket("workload.sock").string(), "the file is a socket");
  fs::create_directories(dir_ / "folder.json");
  expect_refused((dir_ / "folder.json").string(), "the file is a directory");
  expect_refused("/dev/zero", "the file is a character device, not a regular file");
  expect_refused("/dev/null", "the file is a character device, not a regular file");
  fs::create_symlink("loop-b.json", dir_ / "loop-a.json");
  fs::create_symlink("loop-a.json", dir_ / "loop-b.json");
  expect_refused((dir_ / "loop-a.json").string(), "Too many levels of symbolic links");
  fs::create_symlink("nowhere.json", dir_ / "dangling.json");
  expect_refused((dir_ / "dangling.json").string(), "No such file or directory");
}

TEST_F(SpecialFiles, AReferencedFileThatIsNotARegularFileIsRefusedAtOnce) {
  make_fifo("layout.fifo");
  expect_refused(
      workload_referring_to("layout-fifo.json", "/mask/block_sparse", {{"file", "layout.fifo"}}),
      "/mask/block_sparse/file: \"" + (dir_ / "layout.fifo").string() +
          "\" is a FIFO (named pipe), not a regular file");
  make_fifo("mask.fifo");
  expect_refused(workload_referring_to("mask-fifo.json", "/mask/explicit",
                                       {{"kind", "file"}, {"file", "mask.fifo"}}),
                 "/mask/explicit/file: \"" + (dir_ / "mask.fifo").string() + "\" is a FIFO");
  make_fifo("trace.fifo");
  expect_refused(workload_referring_to("trace-fifo.json", "/sequences/0",
                                       {{"trace", {{"file", "trace.fifo"}}}}),
                 "/sequences/0/trace/file: \"" + (dir_ / "trace.fifo").string() + "\" is a FIFO");
  make_socket("layout.sock");
  expect_refused(
      workload_referring_to("layout-socket.json", "/mask/block_sparse", {{"file", "layout.sock"}}),
      "is a socket, not a regular file");
  fs::create_directories(dir_ / "mask-folder");
  expect_refused(workload_referring_to("mask-folder.json", "/mask/explicit",
                                       {{"kind", "file"}, {"file", "mask-folder"}}),
                 "is a directory, not a regular file");
  fs::create_symlink("trace-loop-b.csv", dir_ / "trace-loop-a.csv");
  fs::create_symlink("trace-loop-a.csv", dir_ / "trace-loop-b.csv");
  expect_refused(workload_referring_to("trace-loop.json", "/sequences/0",
                                       {{"trace", {{"file", "trace-loop-a.csv"}}}}),
                 "Too many levels of symbolic links");
}

}  // namespace
}  // namespace attn
