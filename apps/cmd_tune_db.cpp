// attn-tune db info [--db PATH] [--json] [--limit N]: what a results database holds, without
// changing it. The file is opened read-only; one at an older schema is migrated in memory only.
// attn-tune db check [--db PATH]: SQLite's integrity check of the file, read-only.
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/database_path.hpp"
#include "apps/tune_commands.hpp"
#include "base/errors.hpp"
#include "base/process_identity.hpp"
#include "results/device_json.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"
#include "results/table.hpp"

namespace attn {

namespace {

using json = nlohmann::ordered_json;  // keys in the order written

struct DbInfoArgs {
  std::string db;
  bool json = false;
  int limit = 20;
};

constexpr int64_t kAttnApplicationId = 0x6174746e;

std::string or_dash(const std::string& text) {
  return text.empty() ? "-" : text;
}

std::string abbreviated(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  return text.substr(0, limit - 3) + "...";
}

std::string bytes_text(int64_t bytes) {
  if (bytes >= (int64_t(1) << 30)) return format("%.1f GiB", double(bytes) / double(1 << 30));
  if (bytes >= (int64_t(1) << 20)) return format("%.1f MiB", double(bytes) / double(1 << 20));
  return std::to_string(bytes) + " B";
}

// What the schema line says about the file's version.
std::string schema_status(const StoreOpening& o) {
  if (o.file_schema_version == 0) {
    return "empty: no attn-bench schema yet (the first command that writes to it creates version " +
           std::to_string(Store::kSchemaVersion) + ")";
  }
  if (o.file_schema_version == Store::kSchemaVersion) return "current";
  return "older than this attn-tune's " + std::to_string(Store::kSchemaVersion) +
         ": shown as migrated in memory, the file was not changed; the next command that writes "
         "to it (attn-bench run or calibrate, attn-tune tune, merge --into) migrates it to "
         "version " +
         std::to_string(Store::kSchemaVersion) + ", and older builds then refuse it";
}

// A run's status, and for one still 'running' whether its process is: a run whose process is
// gone is closed as 'interrupted' by the next command that writes to the database.
std::string status_text(const StoredRun& r) {
  if (r.status != "running" || !r.owner) return r.status;
  const std::string pid = std::to_string(r.owner->pid);
  switch (owner_state(*r.owner)) {
    case OwnerState::alive:
      return "running (process " + pid + ")";
    case OwnerState::gone:
      return "running, but its process " + pid +
             " is gone (the next command that writes to this database marks it interrupted)";
    case OwnerState::elsewhere:
      return "running (process " + pid + " on " + r.owner->host + ")";
  }
  return r.status;
}

// A commit as `git log --oneline` shows it: 12 hex digits, "+dirty" kept.
std::string short_commit(const std::string& commit) {
  const size_t hex = commit.find_first_not_of("0123456789abcdef");
  const size_t digits = hex == std::string::npos ? commit.size() : hex;
  if (digits <= 12) return commit;
  return commit.substr(0, 12) + commit.substr(digits);
}

std::string application_id_text(int64_t id) {
  if (id == kAttnApplicationId) return format("0x%08llx (attn-bench)", (long long)id);
  if (id == 0) return "0 (not set: an empty file)";
  return format("0x%08llx", (long long)id);
}

json counted_json(const std::vector<std::pair<std::string, int64_t>>& counts) {
  json out = json::object();
  for (const auto& [name, n] : counts) out[name] = n;
  return out;
}

json summary_json(const Store& store, const StoreSummary& s) {
  const StoreOpening& o = store.opening();
  json migrations = json::array();
  for (const MigrationRecord& m : s.migrations) {
    // A step applied to the in-memory copy only (an older file) was never applied to the file:
    // no time, as the text says "(in memory only)".
    const bool in_memory = m.version > o.file_schema_version;
    migrations.push_back({{"version", m.version},
                          {"description", m.description},
                          {"tool_version", m.tool_version},
                          {"applied_at", in_memory ? json(nullptr) : json(m.applied_at)},
                          {"in_memory", in_memory}});
  }
  json devices = json::array();
  for (const StoredDevice& d : s.devices) {
    json device = device_json(d);
    device["measurements"] = d.measurements;
    device["passed"] = d.passed;
    devices.push_back(std::move(device));
  }
  json runs = json::array();
  for (const auto& [r, measurements] : s.runs) {
    json run = run_json(r);
    run["measurements"] = measurements;
    if (r.owner) {
      run["owner"] = {{"host", r.owner->host},
                      {"pid", r.owner->pid},
                      {"process", to_string(owner_state(*r.owner))}};
    } else {
      run["owner"] = nullptr;
    }
    runs.push_back(std::move(run));
  }
  json workloads = json::array();
  for (const StoredWorkload& w : s.workloads) {
    workloads.push_back({{"id", w.id},
                         {"name", w.record.name},
                         {"hash", w.record.hash},
                         {"created_at", w.created_at},
                         {"measurements", w.measurements},
                         {"families", w.families}});
  }
  json families = json::array();
  for (const FamilyCounts& f : s.families) {
    families.push_back({{"family", f.family},
                        {"variants", f.variants},
                        {"configs", f.configs},
                        {"workloads", f.workloads},
                        {"devices", f.devices},
                        {"measurements", f.measurements},
                        {"passed", f.passed}});
  }
  return {{"path", o.path},
          {"schema_version", o.file_schema_version},
          {"current_schema_version", Store::kSchemaVersion},
          {"migrated_in_memory", o.migrated},
          {"application_id", o.application_id},
          {"attn_bench_database", o.application_id == kAttnApplicationId},
          {"journal_mode", o.journal_mode},
          {"read_as_immutable", o.immutable},
          {"unread_wal_bytes", o.unread_wal_bytes},
          {"migrations", migrations},
          {"counts",
           {{"runs", s.counts.runs},
            {"devices", s.counts.devices},
            {"workloads", s.counts.workloads},
            {"measurements", s.counts.measurements},
            {"measurements_by_disposition", counted_json(s.measurements_by_disposition)},
            {"measurements_by_policy", counted_json(s.measurements_by_policy)},
            {"unstable", s.unstable},
            {"samples", s.samples},
            {"attempts", s.attempts},
            {"attempts_started", s.attempts_started},
            {"winners", s.winners},
            {"ceilings", s.ceilings},
            {"repeat_checks", s.repeat_checks}}},
          {"devices", devices},
          {"runs", runs},
          {"workloads", workloads},
          {"families", families}};
}

void print_summary(const Store& store, const StoreSummary& s, int limit, std::ostream& out) {
  const StoreOpening& o = store.opening();
  out << "database    " << o.path << "\n";
  out << "schema      version " << o.file_schema_version << ", " << schema_status(o) << "\n";
  out << "app id      " << application_id_text(o.application_id) << "\n";
  out << "journal     " << or_dash(o.journal_mode) << "\n";
  if (o.immutable) out << "access      " << read_only_note(o) << "\n";
  for (size_t i = 0; i < s.migrations.size(); ++i) {
    const MigrationRecord& m = s.migrations[i];
    // Steps applied to the in-memory copy are not in the file: say so.
    const bool in_memory = m.version > o.file_schema_version;
    out << (i == 0 ? "migrations  " : "            ") << m.version << "  "
        << (in_memory ? "(in memory only)" : m.applied_at + " by " + m.tool_version) << ": "
        << m.description << "\n";
  }
  out << format(
      "rows        %lld runs, %lld devices, %lld workloads, %lld measurements (%lld samples), "
      "%lld attempts (%lld never finished), %lld winners, %lld ceilings, %lld repeat checks\n",
      (long long)s.counts.runs, (long long)s.counts.devices, (long long)s.counts.workloads,
      (long long)s.counts.measurements, (long long)s.samples, (long long)s.attempts,
      (long long)s.attempts_started, (long long)s.winners, (long long)s.ceilings,
      (long long)s.repeat_checks);
  if (!s.measurements_by_disposition.empty()) {
    std::string line;
    for (const auto& [d, n] : s.measurements_by_disposition) {
      line += (line.empty() ? "" : ", ") + std::to_string(n) + " " + d;
      if (d == "passed" && s.unstable > 0) line += " (" + std::to_string(s.unstable) + " unstable)";
    }
    std::string policies;
    for (const auto& [p, n] : s.measurements_by_policy) {
      policies += (policies.empty() ? "" : ", ") + p + " " + std::to_string(n);
    }
    out << "outcomes    " << line << "; policies: " << policies << "\n";
  }

  out << "\ndevices (" << s.devices.size() << ")\n";
  for (const StoredDevice& d : s.devices) {
    const DeviceRecord& r = d.record;
    const bool gpu = r.kind == "gpu";
    out << "  [" << d.id << "] " << r.name << " (" << r.kind;
    if (gpu) out << ", compute " << r.cc_major << "." << r.cc_minor;
    out << ")\n";
    out << "      uuid          " << r.uuid << (gpu ? "" : " (the host name)") << "\n";
    out << "      fingerprint   " << d.fingerprint << "\n";
    if (gpu) {
      out << "      hardware      " << r.sm_count << " SMs, " << bytes_text(r.memory_bytes)
          << " memory, " << bytes_text(r.l2_bytes) << " L2, SM clock " << r.sm_clock_khz / 1000
          << " MHz, memory clock " << r.memory_clock_khz / 1000 << " MHz, " << r.memory_bus_bits
          << "-bit bus\n";
    } else {
      out << "      hardware      " << r.sm_count << " hardware threads, "
          << bytes_text(r.memory_bytes) << " memory\n";
    }
    out << "      software      driver " << r.driver_text() << ", CUDA " << or_dash(r.cuda_version)
        << ", NVRTC " << or_dash(r.nvrtc_version) << "\n";
    out << "      seen          " << d.first_seen_at << " .. " << d.last_seen_at << "\n";
    if (d.ceilings.empty()) {
      out << "      ceilings      none measured (attn-bench calibrate on that device)\n";
    } else {
      bool first = true;
      for (const auto& [metric, c] : d.ceilings.by_metric) {
        out << (first ? "      ceilings      " : "                    ")
            << format("%s %.1f%s, %s, %s, %s", metric.c_str(), c.value,
                      c.unstable ? " (unstable)" : "", describe_clock(c).c_str(),
                      c.measured_at.c_str(), c.method.c_str())
            << "\n";
        first = false;
      }
    }
    out << "      measurements  " << d.measurements << " (" << d.passed << " passed)\n";
  }

  const size_t shown_runs = limit <= 0 ? s.runs.size() : std::min(s.runs.size(), size_t(limit));
  out << "\nruns (" << s.runs.size();
  if (shown_runs < s.runs.size()) out << ", the latest " << shown_runs << "; --limit 0 for all";
  out << ")\n";
  for (size_t i = s.runs.size() - shown_runs; i < s.runs.size(); ++i) {
    const auto& [r, measurements] = s.runs[i];
    out << "  [" << r.id << "] " << r.record.tool << " " << r.record.tool_version << " ("
        << short_commit(r.record.git_commit) << ", " << r.record.build_type << ") "
        << r.record.started_at << " .. " << r.finished_at.value_or("(not finished)") << "  "
        << status_text(r) << ", " << measurements << " measurements, host " << r.record.host
        << "\n";
    out << "      " << abbreviated(r.record.command_line, 160) << "\n";
  }

  const size_t shown_workloads =
      limit <= 0 ? s.workloads.size() : std::min(s.workloads.size(), size_t(limit));
  out << "\nworkloads (" << s.workloads.size();
  if (shown_workloads < s.workloads.size()) {
    out << ", the latest " << shown_workloads << "; --limit 0 for all";
  }
  out << ")\n";
  for (size_t i = s.workloads.size() - shown_workloads; i < s.workloads.size(); ++i) {
    const StoredWorkload& w = s.workloads[i];
    std::string families;
    for (const std::string& f : w.families) families += (families.empty() ? "" : ", ") + f;
    out << "  [" << w.id << "] " << w.record.name << "  " << w.record.hash.substr(0, 12) << "  "
        << w.measurements << " measurements" << (families.empty() ? "" : ": " + families) << "\n";
  }

  out << "\nfamilies (" << s.families.size() << ")\n";
  for (const FamilyCounts& f : s.families) {
    out << format(
        "  %s: %lld variants, %lld configs, %lld workloads, %lld devices, %lld "
        "measurements (%lld passed)\n",
        f.family.c_str(), (long long)f.variants, (long long)f.configs, (long long)f.workloads,
        (long long)f.devices, (long long)f.measurements, (long long)f.passed);
  }
}

int db_info(const DbInfoArgs& args) {
  const std::string path = results_database_path(args.db);
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw UsageError("'" + path + "': no such database (--db, $ATTN_DB, else ./attn-bench.db)");
  }
  const Store store(path, StoreAccess::read_only);
  const StoreSummary summary = store.summary();
  if (args.json) {
    std::cout << summary_json(store, summary).dump(2) << "\n";
  } else {
    print_summary(store, summary, args.limit, std::cout);
  }
  return 0;
}

// attn-tune db check: SQLite's full integrity check of any file, read-only. 0 when sound, 4
// (environment) when damaged or not an SQLite file.
int db_check(const std::string& db) {
  const std::string path = results_database_path(db);
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw UsageError("'" + path + "': no such database (--db, $ATTN_DB, else ./attn-bench.db)");
  }
  constexpr size_t kLimit = 50;
  std::vector<std::string> problems;
  int64_t pages = 0;
  try {
    Database database(path, SQLITE_OPEN_READONLY);
    problems = integrity_problems(database, /*quick=*/false, kLimit);
    if (problems.empty()) {
      Statement count(database, "PRAGMA page_count");
      if (count.step()) pages = count.column_int64(0);
    }
  } catch (const CallError& e) {
    problems.push_back(e.what());
  }
  if (problems.empty()) {
    std::cout << "ok: " << path << " passes SQLite's integrity check (" << pages << " pages)\n";
    return 0;
  }
  std::cout << "damaged: " << path << " fails SQLite's integrity check"
            << (problems.size() >= kLimit ? " (the first " + std::to_string(kLimit) + " problems)"
                                          : "")
            << ":\n";
  size_t shown = 0;
  for (const std::string& problem : problems) {
    std::istringstream lines(problem);  // SQLite's rows hold several lines
    for (std::string line; std::getline(lines, line) && shown < kLimit; ++shown) {
      std::cout << "  " << line << "\n";
    }
  }
  std::cout << "Writing commands refuse it. Restore it from a copy, or recover what is readable "
               "into a new file (`sqlite3 "
            << path
            << " .recover | sqlite3 recovered.db`) and "
               "check that.\n";
  return to_int(ExitCode::environment);
}

}  // namespace

void add_tune_db_command(CLI::App& app, Invocation& invocation) {
  CLI::App* db = app.add_subcommand("db", "Inspect a results database");
  db->require_subcommand(1);
  auto args = std::make_shared<DbInfoArgs>();
  CLI::App* info = db->add_subcommand(
      "info",
      "Summarise a results database (schema, counts, devices, runs, workloads) without changing "
      "it");
  info->add_option("--db", args->db, "SQLite database (default: $ATTN_DB or ./attn-bench.db)");
  info->add_flag("--json", args->json, "print JSON instead of text");
  info->add_option("--limit", args->limit,
                   "how many of the latest runs and workloads to list (default 20; 0: all)");
  info->callback([args, &invocation] { invocation.exit_code = db_info(*args); });
  auto check_db = std::make_shared<std::string>();
  CLI::App* check = db->add_subcommand(
      "check",
      "Run SQLite's integrity check over a database file, read-only: exit 0 when sound, 4 when "
      "damaged");
  check->add_option("--db", *check_db, "SQLite database (default: $ATTN_DB or ./attn-bench.db)");
  check->callback([check_db, &invocation] { invocation.exit_code = db_check(*check_db); });
}

}  // namespace attn
