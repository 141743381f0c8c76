// Progress of a long run on stderr: on a terminal one line redrawn in place, a bar with the count,
// the ETA (from the mean time of the steps done and how far the current one is) and what the
// current step is doing (its samples, elapsed time and noise); elsewhere (a log file, CI) one plain
// line per step, so logs stay readable. The bar is cleared, not left behind, when the run ends, so
// what is printed next starts on a clean line.
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
  ~Progress();  // clears a drawn bar
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Step `done + 1` of `total` begins: `what` names it (printed before the work, so a hang can be
  // attributed).
  void begin(const std::string& what);
  // A message that must not be overdrawn by the bar (a warning, a result line).
  void note(const std::string& line);
  void finish_step();
  // Within the current step: `detail` ("samples 45 (3..100), 2.3s of 5s, noise 0.8%") and how far
  // it is, 0..1 (feeds the ETA). Redrawn at most every 100 ms; nothing elsewhere than a terminal.
  void within_step(const std::string& detail, double fraction);
  // Removes the bar (on a terminal) so that a table starts on a clean line; the next begin()
  // draws it again.
  void clear();
  size_t done() const { return done_; }
  // "1m05s"; "-" when nothing is done yet.
  std::string eta() const;

 private:
  void draw(const std::string& what);
  std::ostream& out_;
  size_t total_, done_ = 0;
  bool terminal_, drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::string current_, detail_;
  double fraction_ = 0;   // of the current step
  size_t columns_ = 200;  // of the terminal: a longer line is cut
};

bool stderr_is_terminal();
std::string format_duration(double seconds);  // "42s", "3m05s", "1h02m"

}  // namespace attn
