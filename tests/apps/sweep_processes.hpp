// What the tests that signal, kill and race `attn-tune tune` processes over one results database
// share: a workload whose CPU sweep evaluates each config in tens of milliseconds, the arguments
// of such a sweep, and reads of the database while another process writes it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "results/sqlite.hpp"

namespace attn::testing {

// Configs of the sweep `sweep_args` runs: test.cpu_reference_copies (24) and the CPU references
// of prefix_prefill and flash_fwd (one each); the other CPU references decline a prefill.
inline constexpr int kSweepConfigs = 26;

// Two query tokens over eight keys, one head: about 15 us per CPU reference launch, so an
// evaluation under the confirm policy takes some 5 to 20 ms and a sweep of the 26 configs 0.1 to
// 0.5 s (measured on the 2-core CPU machine, idle and busy).
inline std::string tiny_prefill_json(const std::string& name, int seed = 7) {
  return R"({
  "schema_version": 1,
  "name": ")" +
         name + R"(",
  "model": {"num_q_heads": 1, "num_kv_heads": 1, "head_dim": 64, "dtype": "bf16"},
  "kv_cache": {"page_size": 16},
  "sequences": [{"context_len": 8, "query_len": 2}],
  "seed": )" +
         std::to_string(seed) + "\n}\n";
}

// `attn-tune tune` over every config of the sweep (exhaustive: each config once under confirm) on
// the CPU, one thread, in process or with a worker process.
inline std::vector<std::string> sweep_args(const std::filesystem::path& workload,
                                           const std::filesystem::path& db, bool workers) {
  std::vector<std::string> args = {ATTN_TUNE_BINARY,  "tune",       workload.string(), "--variant",
                                   "*cpu_reference*", "--strategy", "exhaustive",      "--db",
                                   db.string(),       "--cpu",      "--threads",       "1"};
  if (workers) args.insert(args.end(), {"--isolate", "workers", "--deadline-seconds", "60"});
  return args;
}

// The environment of those sweeps: the test variants on, no $ATTN_DB, and `marker` in every
// process's environment so that a test can find the orchestrator and its workers
// (processes_with).
inline std::vector<std::string> sweep_env(const std::string& marker) {
  return {"ATTN_BENCH_TEST_VARIANTS=1", "ATTN_DB=", "ATTN_SWEEP_MARKER=" + marker};
}

// The first column of the first row of `sql` as a number, or -1 while the database cannot be read
// yet (not created, or its schema not made).
inline int64_t db_number(const std::filesystem::path& path, const std::string& sql) {
  if (!std::filesystem::exists(path)) return -1;
  try {
    Database db(path.string(), SQLITE_OPEN_READONLY);
    db.busy_timeout(5000);
    Statement s(db, sql);
    return s.step() ? s.column_int64(0) : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

// The same as text: "NULL" for a NULL, "" when there is no row or nothing can be read.
inline std::string db_text(const std::filesystem::path& path, const std::string& sql) {
  try {
    Database db(path.string(), SQLITE_OPEN_READONLY);
    db.busy_timeout(5000);
    Statement s(db, sql);
    if (!s.step()) return "";
    return s.column_optional_text(0).value_or("NULL");
  } catch (const std::exception& e) {
    ADD_FAILURE() << path << ": " << sql << ": " << e.what();
    return "";
  }
}

}  // namespace attn::testing
