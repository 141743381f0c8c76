// The seconds one evaluation spent in each of its phases (compile, verify, measure;
// measure/phase_deadlines.hpp), or a sum of them over many evaluations, and the clock that takes
// them from the phases' starts as they are reported. The sweep sums them per variant beside the
// evaluations' total wall time, so that a comparison of strategies can look at the measure phase
// alone: a cold JIT cache makes the compile phase of the first sweep dominate its wall time.
#pragma once

#include <chrono>
#include <string>

#include "measure/phase_deadlines.hpp"

namespace attn {

struct PhaseSeconds {
  double compile = 0, verify = 0, measure = 0;
  double of(EvalPhase phase) const;
  void add(EvalPhase phase, double seconds);
  void add(const PhaseSeconds& other);
  double total() const { return compile + verify + measure; }
  // False when no evaluator reported phases (a fake, or nothing evaluated): print no breakdown.
  bool known() const { return total() > 0; }
  std::string describe() const;  // "compile 10.2s, verify 30.1s, measure 83.1s"
};

// Times the phases of one evaluation (a fresh clock for each): each phase runs from its start()
// until the next phase starts or stop() ends the evaluation. A start() of the phase already
// running changes nothing.
class PhaseClock {
 public:
  using Clock = std::chrono::steady_clock;
  void start(EvalPhase phase, Clock::time_point now = Clock::now());
  // The phase in progress (compile before any start()), and the seconds since it started (0 when
  // none has).
  EvalPhase phase() const { return phase_; }
  double seconds_in_phase(Clock::time_point now = Clock::now()) const;
  // Ends the phase in progress; the seconds of every phase.
  PhaseSeconds stop(Clock::time_point now = Clock::now());

 private:
  PhaseSeconds seconds_;
  EvalPhase phase_ = EvalPhase::compile;
  Clock::time_point phase_start_;
  bool running_ = false;
};

}  // namespace attn
