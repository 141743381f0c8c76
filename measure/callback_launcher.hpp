// CallbackLauncher: a Launcher whose launch() calls a function (it enqueues whatever the caller
// times: attn-bench calibrate's kernels and copies, a test's own kernel).
#pragma once

#include <functional>
#include <utility>

#include "kernels/variant.hpp"

namespace attn {

class CallbackLauncher : public Launcher {
 public:
  explicit CallbackLauncher(std::function<void()> f) : f_(std::move(f)) {}
  void launch() override { f_(); }

 private:
  std::function<void()> f_;
};

}  // namespace attn
