// attn-tune compile WORKLOAD --variant GLOB [-a axis=v1,v2 ...] [--shard i/n [--shard-map FILE]]
// [--jobs N] [--arch sm_90a ...] [--kernel SPEC ...]: compiles the JIT programs of every config
// that survives pruning into the on-disk cache (kernels/jit), in parallel, and exits. Needs NVRTC
// but no GPU, so a sweep's compiles can be done ahead of time on a machine without one (a login
// node, a CPU build box) for the GPU that will run the sweep: `attn-tune tune` with the same
// cache folder ($ATTN_JIT_CACHE_DIR) then finds a cubin for each config instead of compiling it.
// A program NVRTC rejects is counted and named; the config is still tried (and recorded
// compile_failed) by the sweep.
#include <algorithm>
#include <chrono>
#include <future>
#include <iostream>
#include <memory>
#include <regex>
#include <set>

#include <unistd.h>

#include "apps/memory_budget.hpp"
#include "apps/tune_commands.hpp"
#include "apps/user_kernels.hpp"
#include "base/errors.hpp"
#include "kernels/jit/jit_compiler.hpp"
#include "kernels/registry.hpp"
#include "results/table.hpp"
#include "tuner/search_space.hpp"
#include "tuner/shard.hpp"
#include "workloads/batch.hpp"
#include "workloads/mask_checks.hpp"

namespace attn {

namespace {

struct CompileArgs {
  std::string workload;
  std::string variant;
  std::vector<std::string> axes;
  std::string shard = "0/1";
  std::string shard_map;
  size_t jobs = 0;
  bool resources = false;            // ptxas -v: registers and spills per program
  std::vector<std::string> kernels;  // --kernel: user kernel specs
  TargetArgs target;
};

// "128 registers, 0 bytes spilled" from ptxas -v's report (the largest figures of any kernel of
// the program), or the report's absence.
std::string ptxas_summary(const std::string& log) {
  static const std::regex registers("Used ([0-9]+) registers");
  static const std::regex spills("([0-9]+) bytes spill (stores|loads)");
  int most_registers = -1, most_spilled = 0;
  for (std::sregex_iterator i(log.begin(), log.end(), registers), end; i != end; ++i) {
    most_registers = std::max(most_registers, std::stoi((*i)[1]));
  }
  for (std::sregex_iterator i(log.begin(), log.end(), spills), end; i != end; ++i) {
    most_spilled = std::max(most_spilled, std::stoi((*i)[1]));
  }
  if (most_registers < 0) return "no ptxas report";
  return format("%d registers, %d bytes spilled", most_registers, most_spilled);
}

int compile(const CompileArgs& args) {
  const WorkloadSpec spec = load_workload_argument(args.workload);
  std::vector<AxisOverride> overrides;
  for (const std::string& text : args.axes) overrides.push_back(parse_axis_override(text));
  Shard shard = parse_shard(args.shard);
  if (!args.shard_map.empty()) use_shard_map(shard, args.shard_map);
  const Registry registry = make_registry_with_user_kernels(args.kernels);
  std::vector<const Variant*> variants;
  for (const Variant* v : registry.matching(args.variant)) {
    if (v->backend() == Backend::cuda) variants.push_back(v);
  }
  if (variants.empty()) {
    throw UsageError("--variant '" + args.variant +
                     "' matches no CUDA variant (see `attn-bench list`): only CUDA variants "
                     "have programs to compile");
  }
  check_mask_limits(spec);
  check_host_memory(spec, args.workload, MemoryUse::batch, "");
  const Batch batch = generate_batch(spec);
  require_known_axes(variants, batch, overrides);
  const TargetChoice target = choose_cuda_target(args.target);
  JitOptions jit_options;
  jit_options.threads = args.jobs;
  JitCompiler jit(jit_options);  // throws EnvironmentError without NVRTC or a usable cache

  std::ostream& out = std::cout;
  out << "workload  " << spec.name << " (" << batch.spec_hash.substr(0, 12) << ")\n";
  out << "target    " << describe(target.cuda) << " [" << target.from << "]\n";
  out << "cache     " << jit.cache_dir() << " (NVRTC " << jit.nvrtc_version() << ")\n";

  // Every program once (configs of different variants or axes may share one).
  std::set<std::string> keys;
  std::vector<std::future<CompiledProgram>> pending;
  std::vector<std::string> names;
  for (const Variant* v : variants) {
    const SearchSpace s = build_space(*v, batch, target.cuda, overrides);
    size_t configs = 0, programs = 0;
    for (const KernelConfig& config : s.configs) {
      if (!shard.owns(batch.spec_hash, v->name(), config.key())) continue;
      ++configs;
      for (JitProgram& program : v->programs(batch, config, target.cuda)) {
        if (args.resources) program.options.push_back("--ptxas-options=-v");
        if (!keys.insert(jit.cache_key(program)).second) continue;
        ++programs;
        names.push_back(program.name);
        pending.push_back(jit.compile_async(std::move(program)));
      }
    }
    out << format("%s: %zu configs in shard %s, %zu programs\n", v->name().c_str(), configs,
                  shard.label().c_str(), programs);
  }

  const auto start = std::chrono::steady_clock::now();
  const bool live = isatty(STDERR_FILENO);  // a progress line on a terminal only
  size_t compiled = 0, cached = 0, rejected = 0;
  double compile_seconds = 0;
  for (size_t i = 0; i < pending.size(); ++i) {
    try {
      const CompiledProgram p = pending[i].get();
      if (p.cache_hit) {
        ++cached;
      } else {
        ++compiled;
        compile_seconds += p.compile_seconds;
      }
      if (args.resources) {
        if (live) std::cerr << "\r";
        out << names[i] << ": " << (p.cache_hit ? "cached (no ptxas report)" : ptxas_summary(p.log))
            << "\n";
      }
    } catch (const CompileError& e) {
      ++rejected;
      std::cerr << "attn-tune: NVRTC rejected " << names[i] << " (log: " << e.log_path()
                << "); a sweep records its config compile_failed\n";
    }
    if (live)
      std::cerr << format("\rcompile   %zu/%zu programs", i + 1, pending.size()) << std::flush;
  }
  if (live && !pending.empty()) std::cerr << "\n";
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out << format(
      "compiled  %zu programs (%.1f s of NVRTC time in %.1f s), %zu already cached, %zu "
      "rejected\n",
      compiled, compile_seconds, wall, cached, rejected);
  return rejected > 0 ? to_int(ExitCode::failed_cases) : to_int(ExitCode::ok);
}

}  // namespace

void add_tune_compile_command(CLI::App& app, Invocation& invocation) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compile",
      "Compile every config's JIT programs into the cache ahead of a sweep (no GPU needed)");
  add_space_selection(*cmd, args->workload, args->variant, args->axes);
  add_kernel_spec_flag(cmd, args->kernels);
  cmd->add_option("--shard", args->shard, "compile shard i of n of every space (default 0/1)");
  cmd->add_option("--shard-map", args->shard_map,
                  "with --shard i/n: the configs this map (written by attn-tune plan) gives "
                  "shard i; configs it does not list go by the hash rule");
  cmd->add_option("-j,--jobs", args->jobs, "compile threads (default: one per hardware thread)");
  cmd->add_flag("--resources", args->resources,
                "ask ptxas for its report (-v) and print each program's registers and spilled "
                "bytes (the most of any of its kernels)");
  args->target.add_to(*cmd);
  cmd->callback([args, &invocation] { invocation.exit_code = compile(*args); });
}

}  // namespace attn
