#include "results/table.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "base/errors.hpp"

namespace attn {

void TextTable::add_column(std::string header, Align align) {
  headers_.push_back(std::move(header));
  aligns_.push_back(align);
}

void TextTable::add_row(std::vector<std::string> cells) {
  ATTN_ASSERT(cells.size() == headers_.size(), "table row has the wrong number of cells");
  rows_.push_back(std::move(cells));
}

void TextTable::print(std::ostream& out) const {
  std::vector<size_t> widths;
  for (const auto& h : headers_) widths.push_back(h.size());
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  auto print_row = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < cells.size(); ++c) {
      const size_t pad = widths[c] - cells[c].size();
      if (c > 0) out << "  ";
      if (aligns_[c] == Align::right)
        out << std::string(pad, ' ') << cells[c];
      else
        out << cells[c] << (c + 1 < cells.size() ? std::string(pad, ' ') : "");
    }
    out << "\n";
  };
  print_row(headers_);
  std::vector<std::string> rule;
  for (size_t w : widths) rule.push_back(std::string(w, '-'));
  print_row(rule);
  for (const auto& row : rows_) print_row(row);
}

std::string format(const char* pattern, ...) {
  va_list args;
  va_start(args, pattern);
  va_list copy;
  va_copy(copy, args);
  int size = std::vsnprintf(nullptr, 0, pattern, copy);
  va_end(copy);
  std::string out(size_t(std::max(size, 0)), '\0');
  std::vsnprintf(out.data(), out.size() + 1, pattern, args);
  va_end(args);
  return out;
}

}  // namespace attn
