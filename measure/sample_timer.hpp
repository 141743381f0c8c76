// SampleTimer: takes one timing sample of a launcher. Three kinds:
//   events  (event_timer.hpp)       flush L2, CUDA event, one launch, CUDA event
//   graph   (cuda_graph_timer.hpp)  CUDA events around one replay of a graph of N launches, / N
//   cpu     (this file)             steady_clock around one launch of a CPU variant
// The sampler (sampler.hpp) drives a timer through warm-up and the stopping rules.
#pragma once

#include <chrono>
#include <string>

#include "kernels/variant.hpp"

namespace attn {

class SampleTimer {
 public:
  virtual ~SampleTimer() = default;
  // One sample: microseconds per launch.
  virtual double sample_us() = 0;
  virtual int launches_per_sample() const { return 1; }
  virtual std::string name() const = 0;
};

class CpuTimer : public SampleTimer {
 public:
  explicit CpuTimer(Launcher& launcher) : launcher_(launcher) {}
  double sample_us() override {
    const auto start = std::chrono::steady_clock::now();
    launcher_.launch();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
        .count();
  }
  std::string name() const override { return "cpu"; }

 private:
  Launcher& launcher_;
};

}  // namespace attn
