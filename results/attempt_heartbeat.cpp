#include "results/attempt_heartbeat.hpp"

#include <chrono>
#include <memory>

#include "results/store.hpp"

namespace attn {

AttemptHeartbeat::AttemptHeartbeat(const std::string& path, int64_t run_id,
                                   double interval_seconds) {
  if (path == ":memory:") return;
  thread_ = std::thread([this, path, run_id, interval_seconds] {
    beat_until_stopped(path, run_id, interval_seconds);
  });
}

AttemptHeartbeat::~AttemptHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t AttemptHeartbeat::beats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return beats_;
}

void AttemptHeartbeat::beat_until_stopped(const std::string& path, int64_t run_id,
                                          double interval_seconds) {
  const auto interval = std::chrono::duration<double>(interval_seconds);
  std::unique_ptr<Store> store;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, interval, [this] { return stop_; })) {
    lock.unlock();
    bool beaten = false;
    try {
      if (!store) store = std::make_unique<Store>(path);
      store->beat_attempts(run_id);
      beaten = true;
    } catch (const std::exception&) {  // skipped; the next beat tries again
      store.reset();
    }
    lock.lock();
    beats_ += beaten;
  }
}

}  // namespace attn
