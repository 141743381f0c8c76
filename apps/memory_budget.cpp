#include "apps/memory_budget.hpp"

#include <algorithm>
#include <limits>

#include "base/byte_size.hpp"
#include "base/errors.hpp"
#include "base/host_memory.hpp"

namespace attn {

namespace {

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t out;
  return __builtin_add_overflow(a, b, &out) ? std::numeric_limits<int64_t>::max() : out;
}

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t out;
  return __builtin_mul_overflow(a, b, &out) ? std::numeric_limits<int64_t>::max() : out;
}

const char* budget_origin(const std::string& flag_text) {
  return flag_text.empty() ? "the default: half of this machine's memory, at most 16 GiB"
                           : "--max-host-memory";
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> host_memory_parts(const BatchMemory& m,
                                                               MemoryUse use) {
  std::vector<std::pair<std::string, int64_t>> parts = {
      {"batch metadata", m.metadata}, {"masks", m.masks}, {"mask files", m.mask_files}};
  // The host problem (Q, its output, the pools), the oracle's fp32 output, the CPU reference
  // variant's fp32 output and a copy of each variant's output for verification.
  const auto add_run = [&](bool gpu_inputs) {
    parts.push_back({"Q and outputs", saturating_mul(3, m.query)});
    parts.push_back({"K and V pools", m.kv_pools});
    parts.push_back({"fp32 outputs", saturating_mul(2, m.reference)});
    if (gpu_inputs) parts.push_back({"padded block table", m.block_table});
  };
  // The dump's tensors: Q, the pools, the padded table (built, then copied into its tensor),
  // copies of the index arrays and masks.
  const auto add_dump = [&] {
    parts.push_back({"dumped Q", m.query});
    parts.push_back({"dumped K and V pools", m.kv_pools});
    parts.push_back({"dumped padded block table", saturating_mul(2, m.block_table)});
    parts.push_back({"dumped index arrays and masks", saturating_add(m.metadata, m.masks)});
  };
  switch (use) {
    case MemoryUse::batch:
      break;
    case MemoryUse::run:
      add_run(true);
      break;
    case MemoryUse::run_cpu:
      add_run(false);
      break;
    case MemoryUse::dump:
      add_dump();
      break;
    case MemoryUse::dump_with_reference:
      add_dump();
      // The reference reads a host problem (Q, output, pools) and writes an fp32 output, copied
      // into the dump.
      parts.push_back({"reference inputs", saturating_add(saturating_mul(2, m.query), m.kv_pools)});
      parts.push_back({"fp32 reference output", saturating_mul(2, m.reference)});
      break;
    case MemoryUse::peers:
      add_run(true);
      add_dump();
      parts.push_back({"fp32 reference output", m.reference});
      break;
  }
  parts.erase(
      std::remove_if(parts.begin(), parts.end(), [](const auto& p) { return p.second == 0; }),
      parts.end());
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return parts;
}

int64_t host_memory_total(const std::vector<std::pair<std::string, int64_t>>& parts) {
  int64_t total = 0;
  for (const auto& part : parts) total = saturating_add(total, part.second);
  return total;
}

void add_max_host_memory_flag(CLI::App* command, std::string& text) {
  command->add_option("--max-host-memory", text,
                      "refuse a workload whose estimated host memory is above SIZE (e.g. 32GiB, "
                      "512MiB; default: half of this machine's memory, at most 16 GiB)");
}

int64_t host_memory_budget(const std::string& flag_text) {
  if (flag_text.empty()) return default_host_memory_budget();
  const std::optional<int64_t> bytes = parse_byte_size(flag_text);
  if (!bytes || *bytes <= 0) {
    throw UsageError("--max-host-memory '" + flag_text +
                     "': expected a size such as 32GiB, 512MiB or a number of bytes");
  }
  return *bytes;
}

int64_t check_host_memory(const WorkloadSpec& spec, const std::string& source, MemoryUse use,
                          const std::string& flag_text, int processes) {
  const int64_t budget = host_memory_budget(flag_text);
  const BatchMemory memory = estimate_batch_memory(spec);
  std::vector<std::pair<std::string, int64_t>> parts = host_memory_parts(memory, use);
  int64_t total = host_memory_total(parts);
  if (processes > 1) {
    total = saturating_add(saturating_mul(processes, total),
                           host_memory_total(host_memory_parts(memory, MemoryUse::batch)));
  }
  if (total <= budget) return total;
  std::string largest;
  for (size_t i = 0; i < parts.size() && i < 4; ++i) {
    largest += (i ? ", " : "") + parts[i].first + " " + format_bytes(parts[i].second);
  }
  throw InputError(
      source, {"(host memory): this command needs about " + format_bytes(total) +
               " of host memory for the workload" +
               (processes > 1 ? " (" + std::to_string(processes) + " evaluating processes)" : "") +
               " (" + largest + "), over the budget of " + format_bytes(budget) + " (" +
               budget_origin(flag_text) + "); --max-host-memory SIZE sets the budget, e.g. " +
               "--max-host-memory " + std::to_string((total >> 30) + 1) + "GiB"});
}

}  // namespace attn
