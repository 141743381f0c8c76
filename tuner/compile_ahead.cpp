#include "tuner/compile_ahead.hpp"

#include <chrono>
#include <thread>

namespace attn {

CompileAhead::CompileAhead(Compile compile, Key key, size_t threads)
    : compile_(std::move(compile)), key_(std::move(key)), pool_(threads) {}

CompileAhead::CompileAhead(JitCompiler& jit, size_t threads)
    : CompileAhead([&jit](const JitProgram& p) { jit.compile(p); },
                   [&jit](const JitProgram& p) { return jit.cache_key(p); }, threads) {}

CompileAhead::~CompileAhead() {
  stopping_ = true;
}

void CompileAhead::enqueue(const std::vector<JitProgram>& programs) {
  for (const JitProgram& program : programs) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!seen_.insert(key_(program)).second) continue;
    }
    ++queued_;
    pool_.submit([this, program] {
      if (!stopping_) {
        try {
          compile_(program);
          ++compiled_;
        } catch (const std::exception&) {  // the worker compiles it again and records why
          ++failed_;
        }
      }
      ++finished_;
    });
  }
}

void CompileAhead::wait_idle() {
  while (finished_ < queued_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace attn
