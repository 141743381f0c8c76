// Progress of a long run on stderr: on a terminal one line redrawn in place, a bar with the count
// and the ETA (from the mean time of the steps done); elsewhere (a log file, CI) one plain line per
// step, so logs stay readable.
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

namespace attn {

class Progress {
 public:
  // `terminal`: draw the bar (pass is_terminal(stderr)); otherwise print plain lines.
  Progress(std::ostream& out, size_t total, bool terminal);
  ~Progress();  // ends a drawn bar with a newline
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Step `done + 1` of `total` begins: `what` names it (printed before the work, so a hang can be
  // attributed).
  void begin(const std::string& what);
  // A message that must not be overdrawn by the bar (a warning, a result line).
  void note(const std::string& line);
  void finish_step();
  size_t done() const { return done_; }
  // "1m05s"; "-" when nothing is done yet.
  std::string eta() const;

 private:
  void draw(const std::string& what);
  std::ostream& out_;
  size_t total_, done_ = 0;
  bool terminal_, drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::string current_;
};

bool stderr_is_terminal();
std::string format_duration(double seconds);  // "42s", "3m05s", "1h02m"

}  // namespace attn
