#include "measure/nvml_monitor.hpp"

#include <dlfcn.h>

#include <cstring>

namespace attn {

namespace {
// The few NVML declarations we use (nvml.h is not part of every toolkit install). Values from
// nvml.h: NVML_SUCCESS 0, NVML_TEMPERATURE_GPU 0, NVML_CLOCK_SM 1,
// NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80.
using NvmlReturn = int;
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlTemperatureGpu = 0;
constexpr int kNvmlClockSm = 1;
constexpr unsigned kNvmlSystemDriverVersionBufferSize =
    80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

constexpr struct {
  uint64_t bit;
  const char* name;
} kReasonNames[] = {
    {0x1, "gpu_idle"},    {0x2, "app_clocks"},      {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"}, {0x10, "sync_boost"},     {0x20, "sw_thermal"},
    {0x40, "hw_thermal"}, {0x80, "hw_power_brake"}, {0x100, "display_clocks"},
};
}  // namespace

std::string describe_clock_event_reasons(uint64_t reasons) {
  std::string text;
  for (const auto& r : kReasonNames) {
    if (reasons & r.bit) text += (text.empty() ? "" : ",") + std::string(r.name);
  }
  return text.empty() ? "none" : text;
}

std::string nvml_driver_version(std::string* why_not) {
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    *why_not = "NVML (libnvidia-ml.so.1) is not installed";
    return "";
  }
  // libnvidia-ml stays loaded, like libcuda (NvmlMonitor::Api).
  using Init = NvmlReturn (*)();
  using Version = NvmlReturn (*)(char*, unsigned);
  const auto init = reinterpret_cast<Init>(dlsym(library, "nvmlInit_v2"));
  const auto shutdown = reinterpret_cast<Init>(dlsym(library, "nvmlShutdown"));
  const auto version = reinterpret_cast<Version>(dlsym(library, "nvmlSystemGetDriverVersion"));
  if (!init || !shutdown || !version) {
    *why_not = "NVML lacks nvmlSystemGetDriverVersion";
    return "";
  }
  if (init() != kNvmlSuccess) {
    *why_not = "nvmlInit failed";
    return "";
  }
  char text[kNvmlSystemDriverVersionBufferSize] = {};
  const NvmlReturn rc = version(text, sizeof text);
  shutdown();
  if (rc != kNvmlSuccess || text[0] == '\0') {
    *why_not = "nvmlSystemGetDriverVersion failed (" + std::to_string(rc) + ")";
    return "";
  }
  return std::string(text, strnlen(text, sizeof text));
}

struct NvmlMonitor::Api {
  void* library = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*by_uuid)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*reasons)(NvmlDevice, unsigned long long*) = nullptr;
  ~Api() {
    if (shutdown) shutdown();
    // libnvidia-ml stays loaded, like libcuda.
  }
};

std::unique_ptr<NvmlMonitor> NvmlMonitor::open(const std::string& gpu_uuid, std::string* why_not) {
  auto api = std::make_unique<Api>();
  api->library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!api->library) {
    *why_not = "NVML (libnvidia-ml.so.1) is not installed";
    return nullptr;
  }
  auto symbol = [&](const char* name) { return dlsym(api->library, name); };
  api->init = reinterpret_cast<decltype(api->init)>(symbol("nvmlInit_v2"));
  api->by_uuid = reinterpret_cast<decltype(api->by_uuid)>(symbol("nvmlDeviceGetHandleByUUID"));
  api->temperature =
      reinterpret_cast<decltype(api->temperature)>(symbol("nvmlDeviceGetTemperature"));
  api->clock = reinterpret_cast<decltype(api->clock)>(symbol("nvmlDeviceGetClockInfo"));
  // Renamed in NVML 12.x; the old name remains as an alias in older drivers.
  api->reasons =
      reinterpret_cast<decltype(api->reasons)>(symbol("nvmlDeviceGetCurrentClocksEventReasons"));
  if (!api->reasons) {
    api->reasons = reinterpret_cast<decltype(api->reasons)>(
        symbol("nvmlDeviceGetCurrentClocksThrottleReasons"));
  }
  if (!api->init || !api->by_uuid || !api->temperature || !api->clock) {
    *why_not = "NVML lacks an entry point we use";
    return nullptr;
  }
  if (api->init() != kNvmlSuccess) {
    *why_not = "nvmlInit failed";
    return nullptr;
  }
  api->shutdown = reinterpret_cast<decltype(api->shutdown)>(symbol("nvmlShutdown"));
  std::unique_ptr<NvmlMonitor> monitor(new NvmlMonitor());
  NvmlDevice device = nullptr;
  if (api->by_uuid(gpu_uuid.c_str(), &device) != kNvmlSuccess) {
    *why_not = "NVML does not know GPU " + gpu_uuid;
    return nullptr;
  }
  monitor->device_ = device;
  monitor->api_ = std::move(api);
  return monitor;
}

NvmlMonitor::~NvmlMonitor() = default;

NvmlReading NvmlMonitor::read() const {
  NvmlReading reading;
  unsigned value = 0;
  if (api_->temperature(device_, kNvmlTemperatureGpu, &value) == kNvmlSuccess) {
    reading.temperature_c = double(value);
  }
  if (api_->clock(device_, kNvmlClockSm, &value) == kNvmlSuccess) {
    reading.sm_clock_mhz = double(value);
  }
  unsigned long long reasons = 0;
  if (api_->reasons && api_->reasons(device_, &reasons) == kNvmlSuccess) {
    reading.clock_event_reasons = reasons;
  }
  return reading;
}

}  // namespace attn
