// The three phases of one evaluation (measure/evaluator.hpp) and a deadline for each. A worker
// reports the start of each phase (tuner/worker_protocol.hpp); the orchestrator gives the phase in
// progress its own deadline, counted from that phase's start, and kills a worker that passes it.
// Separate deadlines because the phases differ by orders of magnitude: a cold NVRTC compile takes
// seconds, verification on a fresh worker computes the CPU reference, a confirm measurement of a
// slow config can take minutes; one deadline for all three is either too loose to catch a hung
// compile or too tight for a long measurement.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace attn {

enum class EvalPhase { compile, verify, measure };
std::string to_string(EvalPhase phase);
std::optional<EvalPhase> eval_phase_from_string(const std::string& text);

// The member of a {compile, verify, measure} triple (PhaseDeadlines, PhaseSeconds) that belongs to
// `phase`.
template <class Triple>
auto& phase_member(Triple& triple, EvalPhase phase) {
  switch (phase) {
    case EvalPhase::compile:
      return triple.compile;
    case EvalPhase::verify:
      return triple.verify;
    case EvalPhase::measure:
      break;
  }
  return triple.measure;
}

// Called when a phase starts (in the process that evaluates).
using PhaseObserver = std::function<void(EvalPhase)>;

struct PhaseDeadlines {
  double compile = 300, verify = 300, measure = 300;  // seconds
  double of(EvalPhase phase) const;
  static PhaseDeadlines all(double seconds) { return {seconds, seconds, seconds}; }
  std::string describe() const;  // "compile 120s, verify 60s, measure 300s"
};

// "compile=120,verify=60,measure=300": any subset, in any order; a phase not named keeps its value
// in `base`. Throws UsageError naming the entry for an unknown phase, a repeated one, a value that
// is not a positive number, or an entry without '='.
PhaseDeadlines parse_phase_deadlines(const std::string& text, PhaseDeadlines base = {});

}  // namespace attn
