// A fixed pool of worker threads and a parallel_for over an index range. Used for parallel NVRTC
// compiles and for the multi-threaded CPU reference and data generation.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <future>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace attn {

class ThreadPool {
 public:
  // threads == 0 means one per hardware thread.
  explicit ThreadPool(size_t threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size(); }

  template <typename F>
  auto submit(F&& fn) -> std::future<decltype(fn())> {
    using R = decltype(fn());
    auto task = std::make_shared<std::packaged_task<R()>>(std::forward<F>(fn));
    std::future<R> result = task->get_future();
    enqueue([task] { (*task)(); });
    return result;
  }

 private:
  void enqueue(std::function<void()> job);
  void work();

  std::vector<std::thread> workers_;
  std::queue<std::function<void()>> jobs_;
  std::mutex mutex_;
  std::condition_variable ready_;
  bool stopping_ = false;
};

// Runs body(begin, end) over [0, count) in small chunks handed out to up to `threads` threads
// (0: hardware concurrency). The first exception thrown by any chunk is rethrown.
void parallel_for(size_t count, const std::function<void(size_t begin, size_t end)>& body,
                  size_t threads = 0);

size_t hardware_threads();

}  // namespace attn
