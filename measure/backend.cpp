#include "measure/backend.hpp"

#include "base/errors.hpp"
#include "measure/device_records.hpp"

namespace attn {

BackendChoice choose_backend(bool force_cpu, int device, const std::string& cpu_purpose,
                             const std::string& jit_cache_dir) {
  BackendChoice backend;
  DeviceDiscovery discovery;
  if (!force_cpu) discovery = discover_devices();
  if (!force_cpu && !discovery.devices.empty()) {
    if (device < 0 || device >= int(discovery.devices.size())) {
      throw UsageError("--device " + std::to_string(device) + ": this machine has " +
                       std::to_string(discovery.devices.size()) + " GPU(s)");
    }
    backend.info = discovery.devices[size_t(device)];
    backend.gpus_present = discovery.devices.size();
    backend.api = discovery.api;
    backend.jit = std::make_unique<JitCompiler>(JitOptions{jit_cache_dir});
    backend.device = device_record(*backend.info, backend.jit->nvrtc_version());
    backend.target = Target::cuda(*backend.info);
  } else {
    backend.note = force_cpu ? "CPU backend requested (--cpu)"
                             : "no GPU found (" + discovery.why_none + "): " + cpu_purpose;
    backend.device = host_cpu_record();
    backend.target = Target::cpu();
  }
  return backend;
}

std::unique_ptr<Evaluator> open_evaluator(BackendChoice& backend, const Batch& batch,
                                          const Evaluator::Options& options) {
  if (backend.gpu()) {
    return Evaluator::on_cuda(batch, backend.api, *backend.info, *backend.jit, options);
  }
  return Evaluator::on_cpu(batch, options);
}

}  // namespace attn
