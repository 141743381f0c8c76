#include "apps/tune_backend.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/errors.hpp"
#include "measure/device_records.hpp"

namespace attn {

BackendChoice choose_tune_backend(bool cpu, int device) {
  return choose_backend(cpu, device, "tuning the CPU variants");
}

std::unique_ptr<Evaluator> open_tune_evaluator(BackendChoice& backend, const Batch& batch,
                                               size_t threads, SamplingHooks sampling) {
  Evaluator::Options options{confirm_policy(), threads};
  options.sampling = std::move(sampling);
  return open_evaluator(backend, batch, options);
}

std::vector<DeviceRecord> slot_device_records(const BackendChoice& backend,
                                              const std::vector<int>& devices) {
  if (!backend.gpu()) return std::vector<DeviceRecord>(devices.size(), backend.device);
  const DeviceDiscovery discovery = discover_devices();
  std::vector<DeviceRecord> records;
  for (int device : devices) {
    ATTN_ASSERT(device >= 0 && size_t(device) < discovery.devices.size(),
                "--devices was checked against the GPUs present");
    DeviceRecord r = device_record(discovery.devices[size_t(device)], backend.jit->nvrtc_version());
    const DeviceRecord& first = records.empty() ? r : records.front();
    if (r.name != first.name || r.sm_count != first.sm_count ||
        r.memory_bytes != first.memory_bytes) {
      throw UsageError("--devices: GPU " + std::to_string(device) + " (" + r.name +
                       ") is not the same model as GPU " + std::to_string(devices.front()) + " (" +
                       first.name + "); tune each model separately");
    }
    records.push_back(std::move(r));
  }
  return records;
}

std::string own_executable() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) {
    throw EnvironmentError(std::string("cannot find this program (/proc/self/exe): ") +
                           std::strerror(errno));
  }
  return std::string(path, size_t(n));
}

}  // namespace attn
