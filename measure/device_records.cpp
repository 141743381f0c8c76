#include "measure/device_records.hpp"

#include <unistd.h>

#include <cuda.h>

#include <fstream>

#include "base/thread_pool.hpp"
#include "measure/nvml_monitor.hpp"

namespace attn {

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

DeviceRecord device_record(const DeviceInfo& device, const std::string& nvrtc_version) {
  DeviceRecord r;
  r.kind = "gpu";
  r.name = device.name;
  r.uuid = device.uuid;
  r.cc_major = device.cc_major;
  r.cc_minor = device.cc_minor;
  r.sm_count = device.sm_count;
  r.memory_bytes = device.total_memory;
  r.l2_bytes = device.l2_bytes;
  r.sm_clock_khz = device.sm_clock_khz;
  r.memory_clock_khz = device.memory_clock_khz;
  r.memory_bus_bits = device.memory_bus_bits;
  std::string why_not;  // no NVML: the driver stays unknown, as in databases before schema v4
  r.driver_version = nvml_driver_version(&why_not);
  r.cuda_driver_version = format_cuda_version(device.driver_version);
  r.cuda_version = format_cuda_version(CUDA_VERSION);
  r.nvrtc_version = nvrtc_version;
  return r;
}

DeviceRecord host_cpu_record() {
  DeviceRecord r;
  r.kind = "cpu";
  r.name = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        r.name = line.substr(line.find_first_not_of(" \t", colon + 1));
      break;
    }
  }
  r.uuid = host_name();
  r.sm_count = int(hardware_threads());
  long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) r.memory_bytes = int64_t(pages) * page_size;
  return r;
}

}  // namespace attn
