// The case budget of the random GPU tests (tests/gpu_case_budget.hpp) on a fake clock: its
// variable's parsing, the minimum that holds whatever the time, the budget that ends the draws,
// declined draws, and the seed variable.
#include "tests/gpu_case_budget.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

namespace attn::testing {
namespace {

TEST(GpuCaseBudget, ParsesSecondsAndRefusesAnythingElse) {
  EXPECT_EQ(parse_case_budget(nullptr), kDefaultCaseBudgetSeconds);
  EXPECT_EQ(parse_case_budget(""), kDefaultCaseBudgetSeconds);
  EXPECT_EQ(parse_case_budget("30"), 30.0);
  EXPECT_EQ(parse_case_budget("12.5"), 12.5);
  EXPECT_EQ(parse_case_budget("0"), 0.0);
  for (const char* bad : {"-1", "ten", "10s", " 10", "1e3", ".", "1.2.3", "inf", "nan"}) {
    try {
      parse_case_budget(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("ATTN_GPU_TEST_BUDGET='" + std::string(bad) + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

// A clock the test moves by hand.
struct FakeClock {
  std::shared_ptr<double> now = std::make_shared<double>(100.0);
  CaseBudget::Clock clock() const {
    return [now = now] { return *now; };
  }
};

TEST(GpuCaseBudget, ChecksTheMinimumEvenWhenTheTimeIsSpent) {
  FakeClock time;
  CaseBudget budget(3, 10.0, time.clock());
  int cases = 0;
  while (budget.another()) {
    ++cases;
    *time.now += 60;  // every case far over the budget
  }
  EXPECT_EQ(cases, 3);
  EXPECT_EQ(budget.checked(), 3);
  EXPECT_EQ(budget.draws(), 3);
  EXPECT_DOUBLE_EQ(budget.elapsed(), 180.0);
}

TEST(GpuCaseBudget, DrawsWhileTheBudgetLastsThenStops) {
  FakeClock time;
  CaseBudget budget(2, 10.0, time.clock());
  int cases = 0;
  while (budget.another()) {
    ++cases;
    *time.now += 1.5;
  }
  // Starts of cases at 0, 1.5, ..., 9.0: seven under 10 s; the eighth would start at 10.5.
  EXPECT_EQ(cases, 7);
  EXPECT_EQ(budget.checked(), 7);
  EXPECT_EQ(budget.summary(), "7 cases checked in 10.5 s: ATTN_GPU_TEST_BUDGET 10 s, at least 2");
}

TEST(GpuCaseBudget, ZeroBudgetChecksTheMinimumOnly) {
  FakeClock time;
  CaseBudget budget(4, 0.0, time.clock());
  int cases = 0;
  while (budget.another()) ++cases;
  EXPECT_EQ(cases, 4);
}

// A declined draw does not count toward the minimum; one checked counts once.
TEST(GpuCaseBudget, DeclinedDrawsDoNotCountTowardTheMinimum) {
  FakeClock time;
  CaseBudget budget(3, 0.0, time.clock());
  int draws = 0;
  while (budget.another()) {
    if (draws++ % 2 == 0) {  // draws 0, 2, 4 declined; 1, 3, 5 checked
      budget.declined();
      budget.declined();  // a second call for the same draw changes nothing
    }
  }
  EXPECT_EQ(draws, 6);
  EXPECT_EQ(budget.checked(), 3);
  EXPECT_EQ(budget.declined_draws(), 3);
  EXPECT_EQ(budget.summary(),
            "3 cases checked (3 declined) in 0.0 s: ATTN_GPU_TEST_BUDGET 0 s, at least 3");
}

// When every draw is declined the test still ends: after kMaxDrawsPerCase draws per minimum case.
TEST(GpuCaseBudget, EndsWhenEveryDrawIsDeclined) {
  FakeClock time;
  CaseBudget budget(2, 0.0, time.clock());
  while (budget.another()) budget.declined();
  EXPECT_EQ(budget.draws(), 2 * CaseBudget::kMaxDrawsPerCase);
  EXPECT_EQ(budget.checked(), 0);
}

TEST(GpuCaseBudget, SeedComesFromTheVariableWhenSet) {
  const char* saved = std::getenv(kTestSeedVariable);
  const std::string restore = saved ? saved : "";
  ::unsetenv(kTestSeedVariable);
  EXPECT_EQ(test_seed_or(42), 42u);
  ::setenv(kTestSeedVariable, "18446744073709551615", 1);
  EXPECT_EQ(test_seed_or(42), 18446744073709551615u);
  EXPECT_EQ(test_seed_or_clock(), 18446744073709551615u);
  ::setenv(kTestSeedVariable, "-3", 1);
  EXPECT_THROW(test_seed_or(42), UsageError);
  if (saved) {
    ::setenv(kTestSeedVariable, restore.c_str(), 1);
  } else {
    ::unsetenv(kTestSeedVariable);
  }
}

}  // namespace
}  // namespace attn::testing
