// The SM clock probe: one thread counts clock64() cycles over a window of the global nanosecond
// timer, so cycles / ns is the SM clock at that moment (the timing core launches it beside each
// sample and discards samples taken while the chip ran slow, measure/clock_filter.hpp).
//
// %globaltimer ticks coarsely on some GPUs (every 32 ns to 1 us), so the window starts and ends on
// a tick: both ends are read right after the timer changed, and the quantisation error cancels.
#pragma once

#include "kernels/measure/clock_probe_params.hpp"

namespace attn {

__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void __launch_bounds__(32) clock_probe(const ClockProbeParams p) {
  if (threadIdx.x != 0) return;
  const unsigned long long first = global_timer_ns();
  unsigned long long t0;
  do {
    t0 = global_timer_ns();
  } while (t0 == first);
  const long long c0 = clock64();
  unsigned long long t1;
  long long c1;
  do {
    t1 = global_timer_ns();
    c1 = clock64();
  } while (t1 < t0 + p.span_ns);
  p.out[p.slot].cycles = c1 - c0;
  p.out[p.slot].ns = t1 - t0;
}

}  // namespace attn
