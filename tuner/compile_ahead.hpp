// CompileAhead: while one case is verified and measured, the programs of the next cases are
// compiled on a small thread pool into the JIT's on-disk cache (kernels/jit; NVRTC is thread-safe
// and cache entries are written by atomic rename), so the worker that evaluates them finds a cubin
// instead of compiling while its GPU waits. Programs are compiled once each (by cache key). A
// program NVRTC rejects is left to the worker, which records the config compile_failed; so results
// and dispositions are the same with or without it.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/thread_pool.hpp"
#include "kernels/jit/jit_compiler.hpp"

namespace attn {

class CompileAhead {
 public:
  using Compile = std::function<void(const JitProgram&)>;
  using Key = std::function<std::string(const JitProgram&)>;  // the JIT's cache key
  CompileAhead(Compile compile, Key key, size_t threads = 2);
  // Compiles through `jit` (which must outlive this).
  explicit CompileAhead(JitCompiler& jit, size_t threads = 2);
  ~CompileAhead();  // compiles not yet started are dropped; those running finish
  CompileAhead(const CompileAhead&) = delete;
  CompileAhead& operator=(const CompileAhead&) = delete;

  // Queues the programs not queued before.
  void enqueue(const std::vector<JitProgram>& programs);

  size_t queued() const { return queued_; }
  size_t compiled() const { return compiled_; }
  size_t failed() const { return failed_; }  // left to the worker
  // Blocks until every queued compile has finished (tests).
  void wait_idle();

 private:
  Compile compile_;
  Key key_;
  std::mutex mutex_;
  std::set<std::string> seen_;
  std::atomic<size_t> queued_{0}, compiled_{0}, failed_{0}, finished_{0};
  std::atomic<bool> stopping_{false};
  ThreadPool pool_;  // last: its threads join before the members they use are gone
};

}  // namespace attn
