#include "measure/device_list.hpp"

#include <algorithm>
#include <cctype>

#include "base/errors.hpp"

namespace attn {

std::vector<int> parse_device_list(const std::string& text, std::optional<size_t> present) {
  std::vector<int> devices;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string entry = text.substr(start, end - start);
    start = end + 1;
    if (entry.empty()) throw UsageError("--devices '" + text + "': an empty entry");
    if (entry[0] == '-') {
      throw UsageError("--devices '" + text + "': " + entry +
                       " is negative (GPU ordinals are 0, 1, ...)");
    }
    if (entry.size() > 6 ||
        !std::all_of(entry.begin(), entry.end(), [](unsigned char c) { return std::isdigit(c); })) {
      throw UsageError("--devices '" + text + "': '" + entry + "' is not a GPU ordinal");
    }
    const int device = std::stoi(entry);
    if (std::find(devices.begin(), devices.end(), device) != devices.end()) {
      throw UsageError("--devices '" + text + "': GPU " + entry + " is listed twice");
    }
    if (present && size_t(device) >= *present) {
      throw UsageError("--devices '" + text + "': GPU " + entry +
                       " does not exist (this machine has " + std::to_string(*present) +
                       " GPU(s))");
    }
    devices.push_back(device);
  }
  return devices;
}

}  // namespace attn
