// Parameters of the SM clock probe (clock_probe.cuh), shared by host and device code.
#pragma once

namespace attn {

struct ClockProbeReading {
  long long cycles;       // clock64() ticks over the window
  unsigned long long ns;  // %globaltimer nanoseconds over the same window
};

struct ClockProbeParams {
  ClockProbeReading* out;      // [capacity]
  int slot;                    // which reading this launch writes
  unsigned long long span_ns;  // length of the window
};

}  // namespace attn
