// PhaseClock and PhaseSeconds: each phase gets the time from its start to the next phase's start or
// the end of the evaluation, a repeated start changes nothing, and sums add phase by phase.
#include <gtest/gtest.h>

#include "measure/phase_seconds.hpp"

namespace attn {
namespace {

using Clock = PhaseClock::Clock;

Clock::time_point at(double seconds) {
  return Clock::time_point(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1000 + seconds)));
}

TEST(PhaseClock, EachPhaseRunsUntilTheNextStartsOrTheEvaluationEnds) {
  PhaseClock clock;
  EXPECT_EQ(clock.seconds_in_phase(at(0)), 0);
  clock.start(EvalPhase::compile, at(0));
  clock.start(EvalPhase::compile, at(0.5));  // a worker's first report repeats the phase assumed
  EXPECT_EQ(clock.phase(), EvalPhase::compile);
  EXPECT_DOUBLE_EQ(clock.seconds_in_phase(at(1)), 1);
  clock.start(EvalPhase::verify, at(2));
  EXPECT_EQ(clock.phase(), EvalPhase::verify);
  EXPECT_DOUBLE_EQ(clock.seconds_in_phase(at(2.25)), 0.25);
  clock.start(EvalPhase::measure, at(2.5));
  const PhaseSeconds s = clock.stop(at(6));
  EXPECT_DOUBLE_EQ(s.compile, 2);
  EXPECT_DOUBLE_EQ(s.verify, 0.5);
  EXPECT_DOUBLE_EQ(s.measure, 3.5);
  EXPECT_DOUBLE_EQ(s.total(), 6);
  EXPECT_TRUE(s.known());
  EXPECT_EQ(s.describe(), "compile 2.0s, verify 0.5s, measure 3.5s");
}

TEST(PhaseClock, AnEvaluationThatStopsInAPhaseKeepsTheTimeOfThatPhase) {
  PhaseClock clock;
  clock.start(EvalPhase::compile, at(0));
  clock.start(EvalPhase::verify, at(1));
  const PhaseSeconds s = clock.stop(at(31));  // killed at its verify deadline
  EXPECT_DOUBLE_EQ(s.compile, 1);
  EXPECT_DOUBLE_EQ(s.verify, 30);
  EXPECT_EQ(s.measure, 0);
}

TEST(PhaseSeconds, AddsPhaseByPhaseAndIsUnknownWhenNothingWasTimed) {
  PhaseSeconds sum;
  EXPECT_FALSE(sum.known());
  sum.add({1, 2, 3});
  sum.add({0.5, 0, 4});
  sum.add(EvalPhase::verify, 1);
  EXPECT_DOUBLE_EQ(sum.compile, 1.5);
  EXPECT_DOUBLE_EQ(sum.verify, 3);
  EXPECT_DOUBLE_EQ(sum.measure, 7);
  EXPECT_DOUBLE_EQ(sum.of(EvalPhase::measure), 7);
  EXPECT_DOUBLE_EQ(sum.total(), 11.5);
  EXPECT_TRUE(sum.known());
  EXPECT_FALSE(PhaseClock().stop().known()) << "a clock never started times nothing";
}

}  // namespace
}  // namespace attn
