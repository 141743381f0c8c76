// The NVRTC JIT: one rendered program per config, compiled to a cubin for one architecture, with a
// content-addressed on-disk cache and a thread pool for parallel compiles.
//
// A program is a translation unit that includes one family header plus the name expressions of the
// template instantiations it needs (the config enters as template arguments); kernel bodies are
// never assembled from strings. Headers come from the binary itself (embedded at build time), so
// the binary does not depend on the source tree.
//
// Cache: <dir>/<key[0..1]>/<key>.cubin, where key = SHA-256 of the NVRTC version, arch, options,
// source, name expressions and every embedded header, and beside it <key>.cubin.sha256, the
// SHA-256 of the entry's bytes. Each is written to a temporary file and renamed, so a reader never
// sees a partial file; an entry whose bytes do not hash to the recorded value (damaged, cut short,
// changed) is a cache miss: compiled again and overwritten, never loaded. <dir> is
// $ATTN_JIT_CACHE_DIR, else $XDG_CACHE_HOME/attn-bench/jit, else ~/.cache/attn-bench/jit, else
// (neither variable set) <tmp>/attn-bench-jit-<uid>. The folder must belong to this user and not be
// writable by its group or others (a folder this program creates is 0700): cubins are loaded and
// run. A failed compile leaves its source, options and log in <dir>/failed/<key>.log.
#pragma once

#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/errors.hpp"
#include "base/thread_pool.hpp"

namespace attn {

struct NvrtcApi;

struct JitProgram {
  std::string name;                  // for messages, e.g. "paged_decode.sm80_simt.t64.w4.h4"
  std::string source;                // the translation unit (includes only)
  std::vector<std::string> kernels;  // name expressions, e.g. "attn::f<0, 128>"
  std::string arch;                  // "sm_90a", "sm_80", ...
  std::vector<std::string> options;  // extra NVRTC options
  // Headers of this program beside the embedded ones, as (include name, text): a user kernel's
  // source files and the public parameter block (docs/user-kernels.md). Part of the cache key.
  std::vector<std::pair<std::string, std::string>> headers;
};

struct CompiledProgram {
  std::string key;
  std::string name;
  std::vector<char> cubin;
  std::map<std::string, std::string> lowered_names;  // name expression -> mangled symbol
  bool cache_hit = false;
  double compile_seconds = 0;
  std::string log;  // NVRTC's log (warnings) when compiled now; empty on a cache hit
};

// NVRTC rejected a program. The full log is kept in log() and in the file log_path().
class CompileError : public Error {
 public:
  CompileError(const std::string& program, std::string log, std::string log_path);
  const std::string& log() const { return log_; }
  const std::string& log_path() const { return log_path_; }

 private:
  std::string log_;
  std::string log_path_;
};

struct JitOptions {
  std::string cache_dir;  // empty: the default above
  bool use_cache = true;  // false: always compile (the result is still written)
  size_t threads = 0;     // compile threads; 0: one per hardware thread
};

// A cache entry's bytes when they hash to the SHA-256 recorded beside them (<entry>.sha256);
// nullopt when either file is missing or they do not match: the entry must not be used.
std::optional<std::string> read_verified_cache_entry(const std::string& entry_path);
// Writes the entry and its SHA-256 beside it, each atomically (the hash first).
void write_verified_cache_entry(const std::string& entry_path, const std::string& bytes);

class JitCompiler {
 public:
  // Loads NVRTC; throws EnvironmentError when it is missing or the cache folder is unusable
  // (check_cache_folder).
  explicit JitCompiler(JitOptions options = {});
  ~JitCompiler();
  JitCompiler(const JitCompiler&) = delete;
  JitCompiler& operator=(const JitCompiler&) = delete;

  CompiledProgram compile(const JitProgram& program);
  std::future<CompiledProgram> compile_async(JitProgram program);

  std::string cache_key(const JitProgram& program) const;
  const std::string& cache_dir() const { return cache_dir_; }
  std::string nvrtc_version() const;
  std::string nvrtc_library() const;

  // The default cache folder from the environment (see the header comment).
  static std::string default_cache_dir();
  // Creates the folder if needed (0700) and checks that it belongs to this user, is not writable
  // by its group or others, and can be listed and written (a file is written by atomic rename and
  // removed); throws EnvironmentError naming the folder otherwise, so that an unusable or untrusted
  // cache stops a run once instead of failing every compile.
  static void check_cache_folder(const std::string& dir);

 private:
  bool read_cache(const std::string& key, CompiledProgram* out) const;
  void write_cache(const CompiledProgram& compiled) const;
  std::string entry_path(const std::string& key) const;

  std::unique_ptr<NvrtcApi> nvrtc_;
  JitOptions options_;
  std::string cache_dir_;
  std::string headers_digest_;
  std::string nvrtc_version_;
  ThreadPool pool_;
};

}  // namespace attn
