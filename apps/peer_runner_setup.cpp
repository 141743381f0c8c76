#include "apps/peer_runner_setup.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/bounded_file.hpp"
#include "base/embedded_file.hpp"
#include "base/errors.hpp"
#include "base/exit_codes.hpp"
#include "measure/verify.hpp"

extern char** environ;

namespace attn {

// The runner's files, embedded by the executable that links this (apps/CMakeLists.txt).
extern const EmbeddedFile kPeerRunnerFiles[];
extern const size_t kPeerRunnerFiles_count;

namespace fs = std::filesystem;

namespace {

constexpr const char* kRunnerScript = "tools/peers/run_peers.py";

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string tail(const std::string& text) {
  return text.substr(text.size() > 600 ? text.size() - 600 : 0);
}

}  // namespace

nlohmann::json dump_verification_fields(const Batch& batch, const std::string& oracle) {
  return {{"reference_oracle", oracle},
          {"verification",
           {{"rule",
             "every element finite, and the relative L2 error of every output row (one query "
             "token and q head) at most the tolerance (measure/verify.cpp)"},
            {"output_dtype", to_string(batch.dtype)},
            {"tolerance", tolerance_for(batch.dtype)}}}};
}

std::string peer_runner_python(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("ATTN_PEERS_PYTHON"); env && *env) return env;
  return "python3";
}

void add_peer_module_flag(CLI::App* cmd, std::vector<std::string>& modules) {
  cmd->add_option("--peer-module", modules,
                  "add the peers a Python module of yours declares, as peer.user.<module>.<name> "
                  "(repeatable; docs/user-kernels.md)");
}

int run_child(const std::vector<std::string>& argv, const std::string& out_path) {
  std::vector<std::string> storage = argv;
  std::vector<char*> pointers;
  for (std::string& a : storage) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!out_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  }
  std::cout << std::flush;
  std::cerr << std::flush;
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, pointers[0], &actions, nullptr, pointers.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    throw EnvironmentError("cannot start '" + argv[0] + "': " + std::strerror(rc) +
                           " (--python names the interpreter; $ATTN_PEERS_PYTHON too)");
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

WorkFolder::WorkFolder(const std::string& keep) {
  if (!keep.empty()) {
    path_ = keep;
    keep_ = true;
    std::error_code error;
    fs::create_directories(path_, error);
    if (error) throw EnvironmentError("cannot create " + keep + ": " + error.message());
    return;
  }
  std::string pattern = (fs::temp_directory_path() / "attn-peers-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw EnvironmentError("cannot create a temporary folder: " +
                           std::string(std::strerror(errno)));
  }
  path_ = pattern;
}

WorkFolder::~WorkFolder() {
  if (keep_) return;
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

fs::path peer_runner_script(const std::string& runner_dir, const fs::path& folder) {
  if (!runner_dir.empty()) {
    fs::path script = fs::path(runner_dir) / "run_peers.py";
    if (!fs::exists(script)) {
      throw UsageError("--runner '" + runner_dir +
                       "': no run_peers.py there (name the tools/peers folder of a checkout)");
    }
    return script;
  }
  for (size_t i = 0; i < kPeerRunnerFiles_count; ++i) {
    const fs::path target = folder / "runner" / kPeerRunnerFiles[i].name;
    std::error_code error;
    fs::create_directories(target.parent_path(), error);
    std::ofstream out(target, std::ios::binary);
    out.write(kPeerRunnerFiles[i].data, std::streamsize(kPeerRunnerFiles[i].size));
    out.close();
    if (error || !out) throw EnvironmentError("cannot write " + target.string());
  }
  return folder / "runner" / kRunnerScript;
}

std::vector<std::string> checked_peer_modules(const std::vector<std::string>& modules) {
  std::vector<std::string> out;
  for (const std::string& path : modules) {
    constexpr size_t kMaxModuleBytes = size_t(4) << 20;
    BoundedReadFailure failure;
    if (!read_bounded_file(path, kMaxModuleBytes, failure)) {
      throw InputError(path, {"--peer-module: " + describe_failure(failure, kMaxModuleBytes)});
    }
    if (path.size() < 4 || path.compare(path.size() - 3, 3, ".py") != 0) {
      throw InputError(path, {"--peer-module: a peer module is a Python file ending in .py"});
    }
    out.push_back(fs::absolute(path).string());
  }
  return out;
}

std::vector<RunnerPeer> list_runner_peers(const std::string& python, const fs::path& script,
                                          const fs::path& folder,
                                          const std::vector<std::string>& peer_modules) {
  const fs::path listing = folder / "peers-list.json";
  std::vector<std::string> argv = {python, script.string(), "--list-json"};
  for (const std::string& module : peer_modules) {
    argv.push_back("--peer-module");
    argv.push_back(module);
  }
  const int code = run_child(argv, listing.string());
  const std::string text = slurp(listing);
  if (code == int(ExitCode::invalid_input) && !peer_modules.empty()) {
    std::vector<std::string> problems;
    std::istringstream lines(text);
    const std::string prefix = "run_peers.py: invalid input: ";
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(prefix, 0) == 0) problems.push_back(line.substr(prefix.size()));
    }
    if (problems.empty()) problems.push_back(tail(text));
    throw InputError("--peer-module", problems);
  }
  if (code != 0) {
    throw EnvironmentError("the peer runner does not start with '" + python + "' (exit " +
                           std::to_string(code) + "): " + tail(text) +
                           "\n(it needs Python 3 with numpy; --python picks the interpreter)");
  }
  // The array is one line of its own: a module may print while it is imported, and warnings
  // (stderr goes to the same file) may come after it.
  nlohmann::json list;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("[", 0) != 0) continue;
    list = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (list.is_array()) break;
  }
  if (!list.is_array()) {
    throw EnvironmentError("the peer runner's listing is not a JSON array: " + tail(text));
  }
  std::vector<RunnerPeer> peers;
  for (const nlohmann::json& entry : list) {
    RunnerPeer peer;
    peer.unit = entry.value("unit", "");
    peer.name = entry.value("name", "");
    peer.device = entry.value("device", "cuda");
    peer.summary = entry.value("summary", "");
    const size_t at = peer.unit.find('@');
    if (at != std::string::npos) peer.config = peer.unit.substr(at + 1);
    peers.push_back(std::move(peer));
  }
  return peers;
}

}  // namespace attn
