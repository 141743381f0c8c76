#include "results/records.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "base/sha256.hpp"

namespace attn {

std::string DeviceRecord::fingerprint() const {
  // Identity, not state: clocks, L2 size and bus width are left out so that a device whose
  // application clocks were changed keeps its row. The version tag changes only if the fields do,
  // and changing them splits every device into a new row, so keep it stable.
  //
  // The field after the memory size held the CUDA version the driver supports ("13.0") before
  // the driver's own version was recorded; it still does. The driver's version follows the
  // others only when known, so that a record without it (a CPU, no NVML, a row of an older
  // database) keeps the fingerprint it always had, and one with it differs from every other
  // driver version.
  Sha256 hash;
  hash.update_field("attn-bench device fingerprint v1");
  hash.update_field(kind);
  hash.update_field(name);
  hash.update_field(uuid);
  hash.update_field(std::to_string(cc_major));
  hash.update_field(std::to_string(cc_minor));
  hash.update_field(std::to_string(sm_count));
  hash.update_field(std::to_string(memory_bytes));
  hash.update_field(cuda_driver_version);
  hash.update_field(cuda_version);
  hash.update_field(nvrtc_version);
  if (!driver_version.empty()) {
    hash.update_field("driver");
    hash.update_field(driver_version);
  }
  return hash.hex_digest();
}

std::string DeviceRecord::driver_text() const {
  if (driver_version.empty() && cuda_driver_version.empty()) return "-";
  std::string text = driver_version.empty() ? "unknown" : driver_version;
  if (!cuda_driver_version.empty()) text += " (supports CUDA " + cuda_driver_version + ")";
  return text;
}

std::string utc_timestamp_now() {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto since_epoch = now.time_since_epoch();
  auto seconds_part = duration_cast<seconds>(since_epoch);
  auto millis = duration_cast<milliseconds>(since_epoch - seconds_part).count();
  std::time_t t = seconds_part.count();
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[80];  // room for any int the format could print
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, int(millis));
  return text;
}

bool is_utc_timestamp(const std::string& text) {
  // YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z
  const char* pattern = "dddd-dd-ddTdd:dd:dd";
  size_t i = 0;
  for (; pattern[i] != '\0'; ++i) {
    if (i >= text.size()) return false;
    char c = text[i];
    if (pattern[i] == 'd' ? !(c >= '0' && c <= '9') : c != pattern[i]) return false;
  }
  if (i < text.size() && text[i] == '.') {
    size_t digits = 0;
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) ++digits;
    if (digits == 0 || digits > 9) return false;
  }
  return i + 1 == text.size() && text[i] == 'Z';
}

}  // namespace attn
