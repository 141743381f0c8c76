// Plain-text tables for the terminal: columns sized to their contents, numbers right-aligned.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace attn {

class TextTable {
 public:
  enum class Align { left, right };
  void add_column(std::string header, Align align);
  void add_row(std::vector<std::string> cells);
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> aligns_;
  std::vector<std::vector<std::string>> rows_;
};

// printf-style formatting into a std::string.
std::string format(const char* pattern, ...) __attribute__((format(printf, 1, 2)));

}  // namespace attn
