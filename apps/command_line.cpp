#include "apps/commands.hpp"

namespace attn {

std::string quote_command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !arg.empty();
    for (char c : arg) {
      plain &= (std::isalnum(static_cast<unsigned char>(c)) ||
                std::string("_./=:,+-").find(c) != std::string::npos);
    }
    if (plain) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace attn
