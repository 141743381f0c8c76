// How many cases a random GPU test checks: as many as a time budget allows, and never fewer than
// the test's minimum. On a fresh machine every case compiles a program with NVRTC (seconds each),
// on a warm JIT cache it runs in a fraction of one, so a fixed count is either too slow for the
// first or too few for the second. The budget is $ATTN_GPU_TEST_BUDGET seconds per test
// (kDefaultCaseBudgetSeconds when unset; 0 checks each test's minimum only), and each test prints
// how many cases it checked and its seed. The draws are reproducible: a test's cases come from one
// random stream, from its fixed seed or $ATTN_TEST_SEED, so case k of a run is case k of any other
// run with that seed (a larger budget reaches further into the stream).
//
// Host code only: the CPU tests check it (tests/kernels/gpu_case_budget_test.cpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>

#include "base/errors.hpp"

namespace attn::testing {

inline constexpr const char* kCaseBudgetVariable = "ATTN_GPU_TEST_BUDGET";
inline constexpr double kDefaultCaseBudgetSeconds = 40.0;
inline constexpr const char* kTestSeedVariable = "ATTN_TEST_SEED";

// The budget in seconds from the variable's text: the default when unset or empty, else a
// non-negative decimal number ("30", "12.5", "0"). Anything else throws UsageError naming the
// variable, so a typo does not silently run the default.
inline double parse_case_budget(const char* text) {
  if (text == nullptr || *text == '\0') return kDefaultCaseBudgetSeconds;
  const std::string value(text);
  char* end = nullptr;
  const double seconds = std::strtod(value.c_str(), &end);
  const bool whole = end != nullptr && *end == '\0' && end != value.c_str();
  const bool plain = value.find_first_not_of("0123456789.") == std::string::npos;
  if (!whole || !plain || !(seconds >= 0) || seconds > 1e6) {
    throw UsageError(std::string(kCaseBudgetVariable) + "='" + value +
                     "': expected seconds per random GPU test, a number >= 0 (default " +
                     std::to_string(int(kDefaultCaseBudgetSeconds)) + ")");
  }
  return seconds;
}

// $ATTN_TEST_SEED when set (a decimal integer; anything else throws UsageError), else `fallback`.
inline uint64_t test_seed_or(uint64_t fallback) {
  const char* text = std::getenv(kTestSeedVariable);
  if (text == nullptr || *text == '\0') return fallback;
  const std::string value(text);
  if (value.find_first_not_of("0123456789") != std::string::npos || value.size() > 20) {
    throw UsageError(std::string(kTestSeedVariable) + "='" + value + "': expected an integer");
  }
  return std::strtoull(value.c_str(), nullptr, 10);
}

// $ATTN_TEST_SEED when set, else a seed from the clock: fresh draws on every run.
inline uint64_t test_seed_or_clock() {
  return test_seed_or(uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
}

class CaseBudget {
 public:
  using Clock = std::function<double()>;  // seconds on a monotonic clock

  static double steady_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // At least `min_cases` checked cases, then more while `seconds` have not passed since now.
  CaseBudget(int min_cases, double seconds, Clock clock = steady_seconds)
      : min_cases_(min_cases), seconds_(seconds), clock_(std::move(clock)), start_(clock_()) {}
  // The budget from $ATTN_GPU_TEST_BUDGET.
  static CaseBudget from_environment(int min_cases) {
    return CaseBudget(min_cases, parse_case_budget(std::getenv(kCaseBudgetVariable)));
  }

  // Whether to draw another case; counts the draw. The draw before it counts as checked unless
  // declined() was called for it. Yes while fewer than the minimum were checked (up to
  // kMaxDrawsPerCase draws per case of the minimum, so that a test whose every draw is declined
  // ends), then while the budget lasts.
  bool another() {
    settle();
    const bool below_minimum =
        checked_ < min_cases_ && draws_ < kMaxDrawsPerCase * std::max(min_cases_, 1);
    if (!below_minimum && elapsed() >= seconds_) return false;
    ++draws_;
    in_flight_ = true;
    return true;
  }
  // The last draw was not checked (the variant declines it): it does not count toward the minimum.
  void declined() {
    if (in_flight_) ++declined_;
    in_flight_ = false;
  }

  int draws() const { return draws_; }
  // Draws checked so far (the one in flight included once another() is called again).
  int checked() const { return checked_ + (in_flight_ ? 1 : 0); }
  int declined_draws() const { return declined_; }
  double elapsed() const { return clock_() - start_; }
  // "12 cases checked (3 declined) in 41.2 s: ATTN_GPU_TEST_BUDGET 40 s, at least 8".
  std::string summary() const {
    char text[200];
    std::snprintf(text, sizeof(text), "%d cases checked%s in %.1f s: %s %g s, at least %d",
                  checked(),
                  declined_ > 0 ? (" (" + std::to_string(declined_) + " declined)").c_str() : "",
                  elapsed(), kCaseBudgetVariable, seconds_, min_cases_);
    return text;
  }

  static constexpr int kMaxDrawsPerCase = 20;

 private:
  void settle() {
    if (in_flight_) ++checked_;
    in_flight_ = false;
  }
  int min_cases_;
  double seconds_;
  Clock clock_;
  double start_;
  int draws_ = 0;
  int checked_ = 0;
  int declined_ = 0;
  bool in_flight_ = false;
};

// The line a random test prints at its end: "[ info ] 12 cases checked in 41.2 s: ...;
// ATTN_TEST_SEED=20261208".
inline void print_case_summary(const CaseBudget& budget, uint64_t seed) {
  std::cout << "[ info ] " << budget.summary() << "; " << kTestSeedVariable << "=" << seed
            << std::endl;
}

}  // namespace attn::testing
