// The progress bar: on a terminal it says what the current step is doing and is cleared, not left
// behind, when the run ends or a table is to be printed; elsewhere it prints one plain line per
// step and nothing within a step.
#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "base/progress.hpp"

namespace attn {
namespace {

TEST(Progress, OnATerminalTheCurrentStepsDetailIsDrawnAndTheBarIsClearedAtTheEnd) {
  std::ostringstream out;
  {
    Progress progress(out, 2, true);
    progress.begin("paged_decode.sm80_mma");
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    progress.within_step("samples 45 (20..100), 2.3s of 5s", 0.5);
    EXPECT_NE(out.str().find("paged_decode.sm80_mma  samples 45 (20..100), 2.3s of 5s"),
              std::string::npos)
        << out.str();
    progress.finish_step();
  }
  const std::string text = out.str();
  // The last thing written clears the line: what follows starts at its beginning, on a clean line.
  ASSERT_GE(text.size(), 4u);
  EXPECT_EQ(text.substr(text.size() - 4), "\r\033[K");
  EXPECT_EQ(text.find('\n'), std::string::npos) << "a terminal bar leaves no line behind";
}

TEST(Progress, ClearRemovesTheBarBeforeATableAndBeginDrawsItAgain) {
  std::ostringstream out;
  Progress progress(out, 3, true);
  progress.begin("a");
  progress.clear();
  EXPECT_EQ(out.str().substr(out.str().size() - 4), "\r\033[K");
  out << "table\n";
  progress.begin("b");
  EXPECT_NE(out.str().find("table\n\r\033[K["), std::string::npos) << out.str();
}

TEST(Progress, ElsewhereOneLinePerStepAndNothingWithinAStep) {
  std::ostringstream out;
  {
    Progress progress(out, 2, false);
    progress.begin("first");
    progress.within_step("samples 3", 0.5);
    progress.finish_step();
    progress.begin("second");
    progress.finish_step();
  }
  EXPECT_EQ(out.str().find("samples 3"), std::string::npos);
  EXPECT_EQ(out.str().find('\r'), std::string::npos);
  EXPECT_NE(out.str().find("[1/2] first\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("[2/2] second"), std::string::npos) << out.str();
}

TEST(Progress, TheEtaCountsThePartOfTheCurrentStepDone) {
  std::ostringstream out;
  Progress progress(out, 4, true);
  progress.begin("a");
  EXPECT_EQ(progress.eta(), "-");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  progress.within_step("half", 0.5);
  EXPECT_NE(progress.eta(), "-");  // known before the first step ends
}

}  // namespace
}  // namespace attn
