#include "base/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
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
    : out_(out), total_(total), terminal_(terminal), start_(std::chrono::steady_clock::now()) {
  // A line longer than the terminal wraps, and "\r" would then redraw only its last part.
  winsize size{};
  if (terminal_ && ::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 20) {
    columns_ = size.ws_col;
  }
}

Progress::~Progress() {
  clear();
}

void Progress::clear() {
  if (terminal_ && drawn_) out_ << "\r\033[K" << std::flush;
  drawn_ = false;
}

std::string Progress::eta() const {
  const double progressed = double(done_) + fraction_;
  if (progressed <= 0.02 || double(total_) <= progressed) return "-";
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return format_duration(elapsed / progressed * (double(total_) - progressed));
}

void Progress::within_step(const std::string& detail, double fraction) {
  if (!terminal_) return;
  const auto now = std::chrono::steady_clock::now();
  fraction_ = std::min(std::max(fraction, 0.0), 1.0);
  detail_ = detail;
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  draw(current_);
}

void Progress::begin(const std::string& what) {
  current_ = what;
  detail_.clear();
  fraction_ = 0;
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
  fraction_ = 0;
  detail_.clear();
  if (terminal_) draw(done_ < total_ ? current_ : "done");
}

void Progress::draw(const std::string& what) {
  constexpr size_t kWidth = 24;
  const size_t filled = total_ > 0 ? std::min(kWidth, done_ * kWidth / total_) : kWidth;
  std::string bar(filled, '#');
  bar += std::string(kWidth - filled, '.');
  std::string label = what.size() > 60 ? what.substr(0, 57) + "..." : what;
  if (!detail_.empty()) label += "  " + detail_;
  std::string line = "[" + bar + "] " + std::to_string(done_) + "/" + std::to_string(total_) +
                     " ETA " + eta() + "  " + label;
  if (line.size() >= columns_) line = line.substr(0, columns_ - 1);
  out_ << "\r\033[K" << line << std::flush;
  drawn_ = true;
  last_draw_ = std::chrono::steady_clock::now();
}

}  // namespace attn
