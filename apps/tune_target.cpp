#include "apps/tune_commands.hpp"
#include "base/errors.hpp"
#include "kernels/device/cuda_context.hpp"
#include "results/table.hpp"
#include "tuner/search_space.hpp"

namespace attn {

void TargetArgs::add_to(CLI::App& cmd) {
  cmd.add_option("--arch", arch,
                 "describe a GPU instead of using the one present: sm_90a, sm_80, ...");
  cmd.add_option("--sm-count", sm_count, "multiprocessors of the described GPU (default 132)");
  cmd.add_option("--smem", smem,
                 "shared memory per block of the described GPU, bytes (default 232448)");
  cmd.add_option("--device", device, "GPU ordinal whose target to use (default 0)");
}

TargetChoice choose_cuda_target(const TargetArgs& args) {
  TargetDescription d;
  if (args.arch || args.sm_count || args.smem) {
    if (args.arch) d.arch = *args.arch;
    if (args.sm_count) d.sm_count = *args.sm_count;
    if (args.smem) d.max_shared_per_block = *args.smem;
    return {described_cuda_target(d), "flags"};
  }
  const DeviceDiscovery found = discover_devices();
  if (!found.devices.empty()) {
    if (args.device < 0 || args.device >= int(found.devices.size())) {
      throw UsageError("--device " + std::to_string(args.device) + ": this machine has " +
                       std::to_string(found.devices.size()) + " GPU(s)");
    }
    return {Target::cuda(found.devices[size_t(args.device)]),
            "device " + std::to_string(args.device)};
  }
  d.name = "H100-like (default)";
  return {described_cuda_target(d), "default, no GPU here (" + found.why_none + ")"};
}

std::string describe(const Target& t) {
  if (t.backend == Backend::cpu)
    return format("cpu: %s (%d threads)", t.device_name.c_str(), t.sm_count);
  return format("cuda: %s, %s (compute %d.%d), %d SMs, %d B shared memory per block",
                t.device_name.c_str(), t.arch.c_str(), t.cc_major, t.cc_minor, t.sm_count,
                t.max_shared_per_block);
}

CLI::Option* add_space_selection(CLI::App& cmd, std::string& workload, std::string& variant,
                                 std::vector<std::string>& axes) {
  CLI::Option* option =
      cmd.add_option("workload", workload, "workload.json, a preset name or SUITE#WORKLOAD")
          ->required();
  cmd.add_option("--variant", variant, "variants whose name matches this glob (default all)");
  cmd.add_option("-a,--axis", axes,
                 "try these values of an axis instead of the variant's own: -a tile_tokens=32,64 "
                 "(repeatable)");
  return option;
}

}  // namespace attn
