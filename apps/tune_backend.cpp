#include "apps/tune_backend.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/errors.hpp"
#include "tuner/device_records.hpp"

namespace attn {

TuneBackend choose_tune_backend(bool cpu, int device) {
  TuneBackend backend;
  DeviceDiscovery discovery;
  if (!cpu) discovery = discover_devices();
  if (!cpu && !discovery.devices.empty()) {
    if (device < 0 || device >= int(discovery.devices.size())) {
      throw UsageError("--device " + std::to_string(device) + ": this machine has " +
                       std::to_string(discovery.devices.size()) + " GPU(s)");
    }
    backend.info = discovery.devices[size_t(device)];
    backend.gpus_present = discovery.devices.size();
    backend.api = discovery.api;
    backend.jit = std::make_unique<JitCompiler>(JitOptions{});
    backend.device = device_record(*backend.info, backend.jit->nvrtc_version());
    backend.target = Target::cuda(*backend.info);
  } else {
    backend.note = cpu ? "CPU backend requested (--cpu)"
                       : "no GPU found (" + discovery.why_none + "): tuning the CPU variants";
    backend.device = host_cpu_record();
    backend.target = Target::cpu();
  }
  return backend;
}

std::unique_ptr<Evaluator> open_evaluator(TuneBackend& backend, const Batch& batch,
                                          size_t threads) {
  Evaluator::Options options{confirm_policy(), threads};
  if (backend.gpu()) {
    return Evaluator::on_cuda(batch, backend.api, *backend.info, *backend.jit, options);
  }
  return Evaluator::on_cpu(batch, options);
}

std::vector<DeviceRecord> slot_device_records(const TuneBackend& backend,
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
