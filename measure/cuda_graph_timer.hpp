// GraphTimer: for launches too short to time one by one (the CPU's launch gap and the event's
// resolution are then a large part of the time), a CUDA graph of N launches is timed as one replay
// between two CUDA events and the time divided by N.
//
// The L2 is not flushed inside the graph; instead the launches cycle through `rotation`, launchers
// bound to separate copies of the problem's data, enough copies that their working set is at least
// twice the L2 (the evaluator makes them). Each launch so reads inputs the previous ones evicted.
#pragma once

#include <vector>

#include "kernels/device/cuda_context.hpp"
#include "measure/cuda_graph.hpp"
#include "measure/sample_timer.hpp"

namespace attn {

class GraphTimer : public SampleTimer {
 public:
  GraphTimer(const std::vector<Launcher*>& rotation, int launches, const CudaContext& context,
             const Stream& stream);
  double sample_us() override;
  int launches_per_sample() const override { return launches_; }
  std::string name() const override { return "graph"; }

  // Launches per graph so that one replay lasts about `sample_us` given one launch's time.
  static int launches_for(double launch_us, double sample_us);

 private:
  int launches_;
  const Stream& stream_;
  CudaGraph graph_;
  Event start_, stop_;
};

}  // namespace attn
