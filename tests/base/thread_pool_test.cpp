#include "base/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

namespace attn {
namespace {

TEST(ThreadPool, RunsSubmittedJobsAndReturnsResults) {
  ThreadPool pool(3);
  std::vector<std::future<int>> results;
  for (int i = 0; i < 50; ++i) results.push_back(pool.submit([i] { return i * i; }));
  for (int i = 0; i < 50; ++i) EXPECT_EQ(results[size_t(i)].get(), i * i);
}

TEST(ThreadPool, PropagatesExceptionsThroughTheFuture) {
  ThreadPool pool(2);
  auto result = pool.submit([]() -> int { throw std::runtime_error("boom"); });
  EXPECT_THROW(result.get(), std::runtime_error);
}

TEST(ParallelFor, VisitsEveryIndexExactlyOnce) {
  std::vector<std::atomic<int>> visits(10007);
  parallel_for(
      visits.size(),
      [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) visits[i]++;
      },
      4);
  for (const auto& v : visits) ASSERT_EQ(v.load(), 1);
}

TEST(ParallelFor, RethrowsAWorkerException) {
  EXPECT_THROW(parallel_for(
                   100,
                   [](size_t begin, size_t) {
                     if (begin >= 50) throw std::logic_error("chunk failed");
                   },
                   4),
               std::logic_error);
}

}  // namespace
}  // namespace attn
