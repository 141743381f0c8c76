#include "base/byte_size.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace attn {

std::optional<int64_t> parse_byte_size(std::string_view text) {
  size_t i = 0;
  double value = 0;
  bool digits = false;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    value = value * 10 + (text[i] - '0');
    digits = true;
  }
  if (i < text.size() && text[i] == '.') {
    double scale = 0.1;
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      value += (text[i] - '0') * scale;
      scale /= 10;
      digits = true;
    }
  }
  if (!digits) return std::nullopt;
  while (i < text.size() && text[i] == ' ') ++i;
  std::string unit;
  for (; i < text.size(); ++i) unit += char(std::toupper(static_cast<unsigned char>(text[i])));
  int power = 0;
  if (unit.empty() || unit == "B") {
    power = 0;
  } else {
    const std::string prefixes = "KMGT";
    const size_t at = prefixes.find(unit[0]);
    const std::string rest = unit.substr(1);
    if (at == std::string::npos || !(rest.empty() || rest == "B" || rest == "IB")) {
      return std::nullopt;
    }
    power = int(at) + 1;
  }
  const double bytes = std::ldexp(value, 10 * power);
  if (!(bytes <= std::ldexp(1.0, 62))) return std::nullopt;
  return int64_t(std::llround(bytes));
}

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = double(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace attn
