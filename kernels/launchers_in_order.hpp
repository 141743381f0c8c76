// A launcher of several launchers, enqueued in order on the context's stream and timed together
// (a kernel that prepares data, then the kernel that reads it). Owns them; the plan is the last
// one's.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/variant.hpp"

namespace attn {

class LaunchersInOrder : public Launcher {
 public:
  explicit LaunchersInOrder(std::vector<std::unique_ptr<Launcher>> launchers)
      : launchers_(std::move(launchers)) {}
  void launch() override {
    for (const std::unique_ptr<Launcher>& launcher : launchers_) launcher->launch();
  }
  std::string plan() const override {
    return launchers_.empty() ? std::string() : launchers_.back()->plan();
  }

 private:
  std::vector<std::unique_ptr<Launcher>> launchers_;
};

}  // namespace attn
