#include "measure/phase_seconds.hpp"

#include "results/table.hpp"

namespace attn {

double PhaseSeconds::of(EvalPhase phase) const {
  return phase_member(*this, phase);
}

void PhaseSeconds::add(EvalPhase phase, double seconds) {
  phase_member(*this, phase) += seconds;
}

void PhaseSeconds::add(const PhaseSeconds& other) {
  compile += other.compile;
  verify += other.verify;
  measure += other.measure;
}

std::string PhaseSeconds::describe() const {
  return format("compile %.1fs, verify %.1fs, measure %.1fs", compile, verify, measure);
}

void PhaseClock::start(EvalPhase phase, Clock::time_point now) {
  if (running_ && phase == phase_) return;
  if (running_) seconds_.add(phase_, std::chrono::duration<double>(now - phase_start_).count());
  phase_ = phase;
  phase_start_ = now;
  running_ = true;
}

double PhaseClock::seconds_in_phase(Clock::time_point now) const {
  return running_ ? std::chrono::duration<double>(now - phase_start_).count() : 0;
}

PhaseSeconds PhaseClock::stop(Clock::time_point now) {
  if (running_) seconds_.add(phase_, std::chrono::duration<double>(now - phase_start_).count());
  running_ = false;
  return seconds_;
}

}  // namespace attn
