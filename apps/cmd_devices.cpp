// attn-bench devices: the GPUs the driver reports, or plainly that there are none.
#include <iostream>

#include "apps/commands.hpp"
#include "kernels/device/cuda_context.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "results/table.hpp"

namespace attn {

namespace {
void devices() {
  const DeviceDiscovery found = discover_devices();
  if (found.devices.empty()) {
    std::cout << "no GPU: " << found.why_none << "\n";
  } else {
    std::cout << "driver supports CUDA " << format_cuda_version(found.devices[0].driver_version)
              << "; built with CUDA " << format_cuda_version(CUDA_VERSION) << "\n";
    for (const DeviceInfo& d : found.devices) {
      std::cout << format("\n[%d] %s\n", d.ordinal, d.name.c_str());
      std::cout << format("    uuid                 %s\n", d.uuid.c_str());
      std::cout << format("    compute capability   %d.%d (JIT target %s)\n", d.cc_major,
                          d.cc_minor, d.arch().c_str());
      std::cout << format("    multiprocessors      %d\n", d.sm_count);
      std::cout << format(
          "    memory               %.1f GiB, %d-bit bus, %.0f MHz (%.0f GB/s theoretical)\n",
          double(d.total_memory) / (1 << 30), d.memory_bus_bits, d.memory_clock_khz / 1e3,
          d.theoretical_bandwidth_gbps());
      std::cout << format("    L2 cache             %.1f MiB\n", double(d.l2_bytes) / (1 << 20));
      std::cout << format("    SM clock             %.0f MHz\n", d.sm_clock_khz / 1e3);
      std::cout << format("    shared memory/block  %d KiB (opt-in)\n",
                          d.max_shared_per_block_optin / 1024);
    }
  }
  try {
    JitCompiler jit;
    std::cout << "\nNVRTC " << jit.nvrtc_version() << " (" << jit.nvrtc_library() << "), JIT cache "
              << jit.cache_dir() << "\n";
  } catch (const EnvironmentError& e) {
    std::cout << "\nNVRTC unavailable: " << e.what() << "\n";
  }
}
}  // namespace

void add_devices_command(CLI::App& app, Invocation& invocation) {
  CLI::App* cmd = app.add_subcommand("devices", "List the GPUs (or say that there are none)");
  cmd->callback([&invocation] {
    devices();
    invocation.exit_code = 0;
  });
}

}  // namespace attn
