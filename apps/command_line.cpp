#include "apps/commands.hpp"

#include "base/build_info.hpp"
#include "measure/device_records.hpp"

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

RunRecord run_record(const std::string& tool, const Invocation& invocation) {
  return {tool,
          tool_version(),
          git_commit(),
          build_type(),
          quote_command_line(invocation.argv),
          host_name(),
          utc_timestamp_now()};
}

}  // namespace attn
