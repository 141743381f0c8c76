#include "base/progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace attn {

bool stderr_is_terminal() {
  return isatty(STDERR_FILENO) == 1;
}

std::string format_duration(double seconds) {
  const long s = long(std::lround(std::max(0.0, seconds)));
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof text, "%lds", s);
  } else if (s < 3600) {
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  }
  return text;
}

Progress::Progress(std::ostream& out, size_t total, bool terminal)
    : out_(out), total_(total), terminal_(terminal), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  if (terminal_ && drawn_) out_ << "\n" << std::flush;
}

std::string Progress::eta() const {
  if (done_ == 0 || total_ <= done_) return "-";
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return format_duration(elapsed / double(done_) * double(total_ - done_));
}

void Progress::begin(const std::string& what) {
  current_ = what;
  if (terminal_) {
    draw(what);
  } else {
    out_ << "attn-bench: [" << done_ + 1 << "/" << total_ << "] " << what
         << (done_ > 0 ? " (ETA " + eta() + ")" : "") << "\n"
         << std::flush;
  }
}

void Progress::note(const std::string& line) {
  if (terminal_ && drawn_) out_ << "\r\033[K";
  out_ << line << "\n";
  if (terminal_ && drawn_) draw(current_);
  out_ << std::flush;
}

void Progress::finish_step() {
  ++done_;
  if (terminal_) draw(done_ < total_ ? current_ : "done");
}

void Progress::draw(const std::string& what) {
  constexpr size_t kWidth = 24;
  const size_t filled = total_ > 0 ? std::min(kWidth, done_ * kWidth / total_) : kWidth;
  std::string bar(filled, '#');
  bar += std::string(kWidth - filled, '.');
  std::string label = what.size() > 60 ? what.substr(0, 57) + "..." : what;
  out_ << "\r\033[K[" << bar << "] " << done_ << "/" << total_ << " ETA " << eta() << "  " << label
       << std::flush;
  drawn_ = true;
}

}  // namespace attn
