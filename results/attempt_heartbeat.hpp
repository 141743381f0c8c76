// AttemptHeartbeat: renews the heartbeat of a run's open attempts (Store::beat_attempts) every
// `interval_seconds`, from a thread and a database connection of its own, while the thread that
// owns the run is busy evaluating. Another tuner on the same sweep takes over a claim whose
// heartbeat is older than its stale limit (Store::claim_attempt), so the interval must be well
// under that limit. Does nothing for ":memory:" (no other process can see such a database). A beat
// that fails (the database busy past the timeout, a full disk) is skipped; the next one tries
// again. The destructor stops the thread promptly.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace attn {

class AttemptHeartbeat {
 public:
  AttemptHeartbeat(const std::string& path, int64_t run_id, double interval_seconds);
  ~AttemptHeartbeat();
  AttemptHeartbeat(const AttemptHeartbeat&) = delete;
  AttemptHeartbeat& operator=(const AttemptHeartbeat&) = delete;

  // Beats written so far.
  int64_t beats() const;

 private:
  void beat_until_stopped(const std::string& path, int64_t run_id, double interval_seconds);

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  int64_t beats_ = 0;
  std::thread thread_;
};

}  // namespace attn
