#include "base/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <exception>

namespace attn {

size_t hardware_threads() {
  return std::max<size_t>(1, std::thread::hardware_concurrency());
}

ThreadPool::ThreadPool(size_t threads) {
  if (threads == 0) threads = hardware_threads();
  workers_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::enqueue(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push(std::move(job));
  }
  ready_.notify_one();
}

void ThreadPool::work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping and drained
      job = std::move(jobs_.front());
      jobs_.pop();
    }
    job();  // packaged_task stores any exception in its future
  }
}

void parallel_for(size_t count, const std::function<void(size_t, size_t)>& body, size_t threads) {
  if (count == 0) return;
  if (threads == 0) threads = hardware_threads();
  threads = std::min(threads, count);
  if (threads == 1) {
    body(0, count);
    return;
  }
  // Small chunks handed out dynamically, so that uneven work (a long sequence beside short ones)
  // still spreads over every thread.
  const size_t grain = std::max<size_t>(1, count / (threads * 8));
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  std::vector<std::exception_ptr> errors(threads);
  for (size_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      try {
        for (;;) {
          size_t begin = next.fetch_add(grain);
          if (begin >= count) return;
          body(begin, std::min(count, begin + grain));
        }
      } catch (...) {
        errors[t] = std::current_exception();
        next.store(count);  // stop handing out work
      }
    });
  }
  for (auto& w : workers) w.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace attn
