// EventTimer: one launch between two CUDA events, after an optional L2 flush. The flush is
// enqueued before the start event, so it is not timed, and while the GPU runs it the CPU enqueues
// the launch: the time is the kernel's plus the small gap from the start event to its start.
#pragma once

#include "kernels/device/cuda_context.hpp"
#include "measure/l2_flush.hpp"
#include "measure/sample_timer.hpp"

namespace attn {

class EventTimer : public SampleTimer {
 public:
  // `flusher` may be null (no flush).
  EventTimer(Launcher& launcher, const CudaContext& context, const Stream& stream,
             L2Flusher* flusher);
  double sample_us() override;
  std::string name() const override { return "events"; }

 private:
  Launcher& launcher_;
  const Stream& stream_;
  L2Flusher* flusher_;
  Event start_, stop_;
};

}  // namespace attn
