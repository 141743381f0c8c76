// Evaluations in worker processes (tuner/worker_evaluator.hpp) with the real `attn-tune worker`
// and test-only faults ($ATTN_TUNE_WORKER_FAULTS): a config that hangs is killed at its deadline
// and recorded timed_out, one that aborts is recorded crashed, the rest is measured, no worker is
// left behind, and a resumed sweep evaluates nothing again.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "base/exit_codes.hpp"
#include "kernels/device/cuda_context.hpp"
#include "kernels/registry.hpp"
#include "measure/device_records.hpp"
#include "measure/timing_policy.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"
#include "tests/apps/cli_runner.hpp"
#include "tuner/tune_sweep.hpp"
#include "tuner/worker_evaluator.hpp"
#include "workloads/batch.hpp"
#include "workloads/workload_spec.hpp"

extern char** environ;

namespace attn {
namespace {

using testing::CliResult;
using testing::eventually;

// A small prefill: prefix_prefill.cpu_reference and flash_fwd.cpu_reference both take it, and
// halving measures each one config under screen, then confirm.
constexpr const char* kTuneWorkerPrefill = R"({
  "schema_version": 1,
  "name": "tune-worker-small",
  "model": {"num_q_heads": 4, "num_kv_heads": 2, "head_dim": 64, "dtype": "bf16"},
  "kv_cache": {"page_size": 16, "layout": "NHD", "allocation": "shuffled"},
  "sequences": [{"context_len": 40, "query_len": 8, "count": 2}],
  "seed": 7
})";
constexpr const char* kFaults =
    "hang:prefix_prefill.cpu_reference screen;abort:flash_fwd.cpu_reference confirm";

bool gone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

class TuneWorkers : public testing::Cli {
 protected:
  TuneWorkers() { binary_ = ATTN_TUNE_BINARY; }
  // A halving sweep of the CPU reference variants on kTuneWorkerPrefill into `db`, with CPU workers
  // under `deadlines` and the injected `faults`; returns the measurements by "variant policy".
  std::map<std::string, Measurement> sweep_with_workers(const std::string& db,
                                                        PhaseDeadlines deadlines,
                                                        const std::string& faults,
                                                        WorkerEvaluator** seen = nullptr) {
    const std::string workload = write("prefill.json", kTuneWorkerPrefill).string();
    const Batch batch = generate_batch(load_workload_file(workload));
    const Registry registry = make_registry();
    Store store((dir_ / db).string());
    TuneOptions options;
    options.variant_filter = "*.cpu_reference";
    options.strategy = "halving";
    WorkerOptions worker;
    worker.argv = {ATTN_TUNE_BINARY, "worker", workload, "--cpu", "--threads", "1"};
    worker.deadlines = deadlines;
    ::setenv("ATTN_TUNE_WORKER_FAULTS", faults.c_str(), 1);
    evaluator_ = std::make_unique<WorkerEvaluator>(worker);
    if (seen) *seen = evaluator_.get();
    std::ostringstream progress;
    TuneSweep sweep(store, batch, registry, host_cpu_record(), Target::cpu(), *evaluator_, options,
                    progress);
    report_ = sweep.run({"test", "0", "x", "Release", "test", "host", ""});
    std::map<std::string, Measurement> by_case;
    for (const StoredMeasurement& row : store.find_measurements({})) {
      by_case[row.measurement.variant + " " + row.measurement.policy] = row.measurement;
    }
    failures_ = store.attempt_failures(1, 1, "prefix_prefill.cpu_reference").size();
    return by_case;
  }
  std::unique_ptr<WorkerEvaluator> evaluator_;
  TuneReport report_;
  size_t failures_ = 0;
  void TearDown() override {
    ::unsetenv("ATTN_TUNE_WORKER_FAULTS");
    testing::Cli::TearDown();
  }
};

TEST_F(TuneWorkers, HangAndCrashAreRecordedTheRestMeasuredNoWorkerLeftResumeEvaluatesNothing) {
  const std::string workload = write("prefill.json", kTuneWorkerPrefill).string();
  const Batch batch = generate_batch(load_workload_file(workload));
  const Registry registry = make_registry();
  Store store((dir_ / "t.db").string());
  TuneOptions options;
  options.variant_filter = "*.cpu_reference";
  options.strategy = "halving";
  options.quarantine_after = 1;
  WorkerOptions worker;
  worker.argv = {ATTN_TUNE_BINARY, "worker", workload, "--cpu", "--threads", "1"};
  worker.deadlines = PhaseDeadlines::all(2.5);  // a passing screen takes well under 1 s
  RunRecord run{"test", "0", "x", "Release", "test", "host", ""};

  ::setenv("ATTN_TUNE_WORKER_FAULTS", kFaults, 1);
  std::vector<pid_t> pids;
  {
    WorkerEvaluator evaluator(worker);
    std::ostringstream progress;
    TuneSweep sweep(store, batch, registry, host_cpu_record(), Target::cpu(), evaluator, options,
                    progress);
    const auto start = std::chrono::steady_clock::now();
    const TuneReport report = sweep.run(run);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 30) << "the hang must cost about one deadline";
    std::map<std::string, VariantSummary> by_name;
    for (const VariantSummary& s : report.variants) by_name[s.variant] = s;
    EXPECT_EQ(by_name["prefix_prefill.cpu_reference"].evaluated, 1u);  // screen: timed out
    EXPECT_EQ(by_name["prefix_prefill.cpu_reference"].failed, 1u);
    EXPECT_EQ(by_name["flash_fwd.cpu_reference"].evaluated, 2u);  // screen passed, confirm crashed
    EXPECT_EQ(by_name["flash_fwd.cpu_reference"].failed, 1u);
    pids = evaluator.spawned();
    // First worker hangs and is killed; the second measures, then aborts; the third would serve the
    // next case (started lazily, so it may not exist).
    EXPECT_GE(pids.size(), 2u);
    EXPECT_TRUE(gone(pids[0])) << "the hung worker was killed and reaped";
  }
  for (pid_t pid : pids) EXPECT_TRUE(gone(pid)) << "worker " << pid << " left behind";
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1) << "a child is still there";

  std::map<std::string, std::string> disposition;  // "variant policy" -> disposition
  for (const StoredMeasurement& row : store.find_measurements({})) {
    disposition[row.measurement.variant + " " + row.measurement.policy] =
        to_string(row.measurement.disposition);
  }
  EXPECT_EQ(disposition["prefix_prefill.cpu_reference screen"], "timed_out");
  EXPECT_EQ(disposition["flash_fwd.cpu_reference screen"], "passed");
  EXPECT_EQ(disposition["flash_fwd.cpu_reference confirm"], "crashed");
  EXPECT_EQ(disposition.size(), 3u);
  for (const StoredMeasurement& row : store.find_measurements({})) {
    if (row.measurement.disposition == Disposition::timed_out) {
      EXPECT_NE(row.measurement.reason.find("phase passed its 2.5 s deadline"), std::string::npos)
          << row.measurement.reason;
    }
    if (row.measurement.disposition == Disposition::crashed) {
      EXPECT_NE(row.measurement.reason.find("signal 6"), std::string::npos)
          << row.measurement.reason;
    }
  }

  // Resume without the faults: what is recorded is not evaluated again, and the two configs that
  // hung or crashed once are quarantined (quarantine_after 1).
  ::unsetenv("ATTN_TUNE_WORKER_FAULTS");
  WorkerEvaluator evaluator(worker);
  std::ostringstream progress;
  TuneSweep sweep(store, batch, registry, host_cpu_record(), Target::cpu(), evaluator, options,
                  progress);
  const TuneReport report = sweep.run(run);
  for (const VariantSummary& s : report.variants) {
    EXPECT_EQ(s.evaluated, 0u) << s.variant;
    // The two that take the workload have one quarantined case each; the others have no configs.
    EXPECT_EQ(s.quarantined, s.shard_configs) << s.variant;
  }
  EXPECT_TRUE(evaluator.spawned().empty()) << "nothing to evaluate, no worker started";
  EXPECT_EQ(store.find_measurements({}).size(), 3u);
}

TEST_F(TuneWorkers, CliIsolatesWithWorkersAndChecksItsFlags) {
  const std::string workload = write("prefill.json", kTuneWorkerPrefill).string();
  ::setenv("ATTN_TUNE_WORKER_FAULTS", "segv:flash_fwd.cpu_reference", 1);
  CliResult r =
      run({"tune", workload, "--variant", "*.cpu_reference", "--strategy", "exhaustive", "--db",
           "w.db", "--cpu", "--threads", "1", "--isolate", "workers", "--deadline-seconds", "20"});
  EXPECT_EQ(r.exit_code, int(ExitCode::failed_cases)) << r.out << r.err;
  EXPECT_NE(r.out.find("isolate   workers (deadlines: compile 20s, verify 20s, measure 20s)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("prefix_prefill.cpu_reference: 1 configs (1 in shard 0/1): 1 measured, 0 "
                       "from the database, 0 failed"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("flash_fwd.cpu_reference: 1 configs (1 in shard 0/1): 1 measured, 0 from "
                       "the database, 1 failed"),
            std::string::npos)
      << r.out;
  // The workers report the phases: the summary breaks the evaluation time down, per variant and
  // over all of them.
  EXPECT_NE(r.out.find("s evaluating (compile "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nphases    compile "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" over all variants ("), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("measuring"), std::string::npos) << r.out;
  ::unsetenv("ATTN_TUNE_WORKER_FAULTS");

  // In process (the CPU default) the same database resumes: the crashed config is tried again
  // (quarantine after 2) and now passes; the measured one is not.
  r = run({"tune", workload, "--variant", "*.cpu_reference", "--strategy", "exhaustive", "--db",
           "w.db", "--cpu", "--threads", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("isolate   none (in process)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("prefix_prefill.cpu_reference: 1 configs (1 in shard 0/1): 0 measured, 1 "
                       "from the database"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("flash_fwd.cpu_reference: 1 configs (1 in shard 0/1): 1 measured, 0 from"),
            std::string::npos)
      << r.out;
  // In process the phases are timed too; a variant answered from the database has none to show.
  const size_t flash = r.out.find("flash_fwd.cpu_reference: ");
  ASSERT_NE(flash, std::string::npos) << r.out;
  const std::string flash_line = r.out.substr(flash, r.out.find('\n', flash) - flash);
  EXPECT_NE(flash_line.find("s evaluating (compile "), std::string::npos) << flash_line;
  EXPECT_NE(flash_line.find(", verify "), std::string::npos) << flash_line;
  EXPECT_NE(flash_line.find(", measure "), std::string::npos) << flash_line;
  EXPECT_NE(r.out.find("0 quarantined, 0.0s evaluating\n"), std::string::npos)
      << "prefix_prefill, all from the database: no breakdown\n"
      << r.out;
  EXPECT_NE(r.out.find("\nphases    compile "), std::string::npos) << r.out;

  const int usage = int(ExitCode::usage);
  EXPECT_EQ(run({"tune", workload, "--cpu", "--isolate", "threads"}).exit_code, usage);
  EXPECT_EQ(run({"tune", workload, "--cpu", "--deadline-seconds", "0"}).exit_code, usage);
  EXPECT_EQ(run({"tune", workload, "--cpu", "--deadline", "link=3"}).exit_code, usage);
  EXPECT_EQ(run({"tune", workload, "--cpu", "--deadline", "verify=0"}).exit_code, usage);
  // A worker that cannot set up stops the sweep once, before any attempt, with one message.
  ::setenv("ATTN_TUNE_WORKER_FAULTS", "explode:x", 1);
  r = run({"tune", workload, "--cpu", "--isolate", "workers", "--db", "e.db"});
  EXPECT_EQ(r.exit_code, int(ExitCode::environment)) << r.out << r.err;
  EXPECT_NE(r.err.find("evaluation worker could not start"), std::string::npos) << r.err;
}

// Each phase has its own deadline, counted from the phase's start: a case whose compile and verify
// each take 1.2 s passes under 2 s per phase although it takes longer than 2 s in all, and one that
// hangs in verification is killed at the verify deadline with the phase named.
TEST_F(TuneWorkers, EachPhaseHasItsOwnDeadlineAndATimeoutNamesThePhase) {
  std::map<std::string, Measurement> by_case =
      sweep_with_workers("p.db", {2, 2, 30},
                         "sleep@compile:prefix_prefill;sleep@verify:prefix_prefill;"
                         "hang@verify:flash_fwd.cpu_reference confirm");
  ASSERT_EQ(by_case.size(), 4u);
  EXPECT_EQ(by_case["prefix_prefill.cpu_reference screen"].disposition, Disposition::passed)
      << by_case["prefix_prefill.cpu_reference screen"].reason;
  EXPECT_EQ(by_case["prefix_prefill.cpu_reference confirm"].disposition, Disposition::passed)
      << by_case["prefix_prefill.cpu_reference confirm"].reason;
  EXPECT_EQ(by_case["flash_fwd.cpu_reference screen"].disposition, Disposition::passed);
  const Measurement& hung = by_case["flash_fwd.cpu_reference confirm"];
  EXPECT_EQ(hung.disposition, Disposition::timed_out);
  EXPECT_NE(hung.reason.find("the verify phase passed its 2 s deadline (after compile"),
            std::string::npos)
      << hung.reason;
  EXPECT_NE(hung.reason.find("killed by signal 9"), std::string::npos) << hung.reason;
  // Each finished phase is named once (the worker's first report repeats the assumed compile).
  EXPECT_EQ(hung.reason.find("compile", hung.reason.find("compile") + 1), std::string::npos)
      << hung.reason;
}

// Each case's result carries the seconds it spent in each phase, as the worker reported them:
// 1.2 s slept at the start of compile and of verify land in those phases, not in measure; a case
// that crashes in measure, and one killed at its verify deadline, keep the time of the phases they
// passed through, and the killed one none in the measure it never reached.
TEST_F(TuneWorkers, EachCaseReportsTheSecondsOfThePhasesItPassedThrough) {
  const std::string workload = write("prefill.json", kTuneWorkerPrefill).string();
  const Batch batch = generate_batch(load_workload_file(workload));
  const Registry registry = make_registry();
  WorkerOptions worker;
  worker.argv = {ATTN_TUNE_BINARY, "worker", workload, "--cpu", "--threads", "1"};
  worker.deadlines = {30, 2, 30};
  ::setenv("ATTN_TUNE_WORKER_FAULTS",
           "sleep@compile:prefix_prefill;sleep@verify:prefix_prefill;"
           "abort@measure:prefix_prefill.cpu_reference confirm;hang@verify:flash_fwd",
           1);
  WorkerEvaluator evaluator(worker);
  evaluator.start();
  double wall = 0;
  auto evaluate = [&](const char* name, const MeasurePolicy& policy) {
    const Variant* variant = registry.find(name);
    EXPECT_NE(variant, nullptr) << name;
    const auto start = std::chrono::steady_clock::now();
    evaluator.begin(0, {7, variant, variant->default_config(batch, Target::cpu()), policy});
    CaseResult result = evaluator.wait();
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  };

  const CaseResult slow = evaluate("prefix_prefill.cpu_reference", screen_policy());
  EXPECT_EQ(slow.tag, 7u);
  ASSERT_EQ(slow.measurement.disposition, Disposition::passed) << slow.measurement.reason;
  // Each fault sleeps 1.2 s in the worker; the orchestrator times a phase from reading one report
  // to reading the next, and on a busy machine (CI beside other builds) either read can come a
  // tenth of a second late.
  constexpr double kSleep = 1.0;
  EXPECT_GE(slow.phase_seconds.compile, kSleep);
  EXPECT_GE(slow.phase_seconds.verify, kSleep);
  EXPECT_GT(slow.phase_seconds.measure, 0);
  EXPECT_LT(slow.phase_seconds.measure, 1.0) << "a sleep was counted as measurement";
  EXPECT_LE(slow.phase_seconds.total(), wall);
  EXPECT_GT(slow.phase_seconds.total(), 0.9 * wall);

  const CaseResult crashed = evaluate("prefix_prefill.cpu_reference", confirm_policy());
  EXPECT_EQ(crashed.measurement.disposition, Disposition::crashed) << crashed.measurement.reason;
  EXPECT_NE(crashed.measurement.reason.find("during measure"), std::string::npos)
      << crashed.measurement.reason;
  EXPECT_GE(crashed.phase_seconds.compile, kSleep);
  EXPECT_GE(crashed.phase_seconds.verify, kSleep);

  const CaseResult hung = evaluate("flash_fwd.cpu_reference", screen_policy());
  EXPECT_EQ(hung.measurement.disposition, Disposition::timed_out) << hung.measurement.reason;
  EXPECT_GT(hung.phase_seconds.compile, 0);
  EXPECT_LT(hung.phase_seconds.compile, 1.0);
  EXPECT_GE(hung.phase_seconds.verify, 2.0) << "killed at its 2 s verify deadline";
  EXPECT_LT(hung.phase_seconds.verify, 10.0);
  EXPECT_EQ(hung.phase_seconds.measure, 0);
  EXPECT_LE(hung.phase_seconds.total(), wall);
}

// A worker that reports a sticky CUDA error (injected: the CPU has none) gets its case recorded
// crashed and is replaced: the injected worker refuses every later request with an error, which
// would stop the sweep, so the sweep finishing proves it was not reused.
TEST_F(TuneWorkers, AWorkerThatReportsAStickyErrorIsReplacedNotReused) {
  WorkerEvaluator* evaluator = nullptr;
  std::map<std::string, Measurement> by_case = sweep_with_workers(
      "s.db", PhaseDeadlines::all(20), "sticky:prefix_prefill.cpu_reference screen", &evaluator);
  EXPECT_EQ(report_.failures(), 1u);
  EXPECT_EQ(evaluator->sticky_replacements(), 1u);
  ASSERT_GE(evaluator->spawned().size(), 2u);
  EXPECT_TRUE(gone(evaluator->spawned()[0])) << "the worker that lost its context was stopped";
  const Measurement& sticky = by_case["prefix_prefill.cpu_reference screen"];
  EXPECT_EQ(sticky.disposition, Disposition::crashed);
  EXPECT_NE(sticky.reason.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << sticky.reason;
  EXPECT_NE(sticky.reason.find("replaced"), std::string::npos) << sticky.reason;
  EXPECT_EQ(by_case["flash_fwd.cpu_reference screen"].disposition, Disposition::passed);
  EXPECT_EQ(by_case["flash_fwd.cpu_reference confirm"].disposition, Disposition::passed);
  EXPECT_EQ(failures_, 1u) << "the crash counts towards the quarantine like any other";
}

// --devices 0,1 on the CPU: two worker processes (the CPU backend ignores the device number, which
// is the test hook for a machine without GPUs); both evaluate, every case is recorded once by the
// orchestrator, and the list is checked.
TEST_F(TuneWorkers, DevicesRunOneWorkerEachAndEveryCaseIsRecordedOnce) {
  const std::string workload = write("prefill.json", kTuneWorkerPrefill).string();
  CliResult r = run({"tune", workload, "--variant", "*.cpu_reference", "--strategy", "halving",
                     "--db", "d.db", "--cpu", "--threads", "1", "--devices", "0,1"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("isolate   workers on devices 0,1 (deadlines"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("workers   device 0: 2 cases, device 1: 2 cases"), std::string::npos)
      << r.out;
  Database db((dir_ / "d.db").string(), SQLITE_OPEN_READONLY);
  auto scalar = [&](const char* sql) {
    Statement s(db, sql);
    EXPECT_TRUE(s.step());
    return s.column_int64(0);
  };
  EXPECT_EQ(scalar("SELECT count(*) FROM measurements"), 4);
  EXPECT_EQ(scalar("SELECT count(*) FROM (SELECT variant, config_key, policy FROM measurements "
                   "GROUP BY 1, 2, 3 HAVING count(*) > 1)"),
            0);
  EXPECT_EQ(scalar("SELECT count(DISTINCT worker_pid) FROM attempts"), 2);
  EXPECT_EQ(scalar("SELECT count(*) FROM attempts WHERE status != 'finished'"), 0);

  const int usage = int(ExitCode::usage);
  for (const char* bad : {"0,0", "-1", "0,x", ""}) {
    r = run({"tune", workload, "--cpu", "--db", "u.db", "--devices", bad});
    EXPECT_EQ(r.exit_code, usage) << bad << r.err;
  }
  EXPECT_NE(run({"tune", workload, "--cpu", "--devices", "0,0"}).err.find("listed twice"),
            std::string::npos);
  EXPECT_EQ(run({"tune", workload, "--cpu", "--devices", "0,1", "--isolate", "none"}).exit_code,
            usage);
  EXPECT_EQ(run({"tune", workload, "--cpu", "--devices", "0", "--device", "1"}).exit_code, usage);
}

// Infrastructure failures stop `tune` once with one message and exit 4: CUDA variants asked for
// on a machine without a GPU, --devices there without --cpu, a database that cannot be opened.
TEST_F(TuneWorkers, InfrastructureFailuresStopOnceWithTheEnvironmentExitCode) {
  if (!discover_devices().devices.empty()) GTEST_SKIP() << "needs a machine without a GPU";
  const std::string workload = write("prefill.json", kTuneWorkerPrefill).string();
  const int environment = int(ExitCode::environment);
  CliResult r = run({"tune", "default", "--variant", "paged_decode.sm80_simt", "--db", "g.db"});
  EXPECT_EQ(r.exit_code, environment) << r.out << r.err;
  EXPECT_NE(r.err.find("attn-tune: environment: no GPU found"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(paged_decode.sm80_simt) need one"), std::string::npos) << r.err;
  // A glob that matches CUDA variants and a CPU one: not a sweep of the CPU one alone that exits 0
  // as if the others had been tuned, but the same stop, naming both and the way out (--cpu).
  r = run({"tune", "default", "--variant", "paged_decode.*", "--db", "g.db"});
  EXPECT_EQ(r.exit_code, environment) << r.out << r.err;
  EXPECT_NE(r.err.find("attn-tune: environment: no GPU found"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("paged_decode.sm80_simt"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("need one; pass --cpu to tune only the CPU variants "
                       "(paged_decode.cpu_reference)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("winner"), std::string::npos) << r.out;
  {
    Store store((dir_ / "g.db").string());
    EXPECT_EQ(store.counts().runs, 0);  // nothing ran
  }
  r = run({"tune", workload, "--variant", "*.cpu_reference", "--devices", "0,1", "--db", "g.db"});
  EXPECT_EQ(r.exit_code, environment) << r.out << r.err;
  EXPECT_NE(r.err.find("--devices 0,1: no GPU found"), std::string::npos) << r.err;
  std::filesystem::create_directories(dir_ / "folder.db");
  r = run({"tune", workload, "--variant", "*.cpu_reference", "--cpu", "--db", "folder.db"});
  EXPECT_EQ(r.exit_code, environment) << r.out << r.err;
  EXPECT_NE(r.err.find("cannot open the results database"), std::string::npos) << r.err;
}

// Ctrl-C and kill -9 of the orchestrator while a worker hangs: neither leaves a worker behind.
TEST_F(TuneWorkers, NoWorkerOutlivesCtrlCOrKill9OfTheOrchestrator) {
  const std::string workload = write("prefill.json", kTuneWorkerPrefill).string();
  for (int sig : {SIGINT, SIGKILL}) {
    const std::string marker = "marker-" + std::to_string(::getpid()) + "-" + std::to_string(sig);
    ::setenv("ATTN_TUNE_WORKER_FAULTS", ("hang:prefix_prefill;exit:" + marker).c_str(), 1);
    std::vector<std::string> args = {
        ATTN_TUNE_BINARY,         "tune",  workload,    "--variant", "*.cpu_reference", "--db",
        (dir_ / "k.db").string(), "--cpu", "--threads", "1",         "--isolate",       "workers",
        "--deadline-seconds",     "2"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    pid_t orchestrator = -1;
    ASSERT_EQ(::posix_spawn(&orchestrator, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    // The orchestrator and its (hanging) worker.
    EXPECT_TRUE(eventually([&] { return testing::processes_with(marker) == 2; }, 10)) << sig;
    ::usleep(200000);  // let the worker take the request that hangs
    ::kill(orchestrator, sig);
    int status = 0;
    ASSERT_EQ(::waitpid(orchestrator, &status, 0), orchestrator);
    if (sig == SIGINT) {
      ASSERT_TRUE(WIFEXITED(status)) << status;
      EXPECT_EQ(WEXITSTATUS(status), int(ExitCode::interrupted));
    }
    EXPECT_TRUE(eventually([&] { return testing::processes_with(marker) == 0; }, 5))
        << "a worker outlived the orchestrator after signal " << sig;
  }
}

}  // namespace
}  // namespace attn
