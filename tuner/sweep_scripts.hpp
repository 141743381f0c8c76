// The files `attn-tune plan` writes for a sweep split over the tasks of a Slurm job array, as text
// (tuner/sweep_plan.hpp makes the shard map they read):
//   sweep.sbatch   the array: task i runs `attn-tune tune ... --shard i/n --shard-map ...` into its
//                  own database, shards/shard-i.db. Requeued (`--requeue` is set), it runs the same
//                  command, which resumes where the shard stopped. Slurm's SIGTERM (scancel, a
//                  requeue, a preemption, the time limit) reaches attn-tune, which finishes the
//                  config in flight and stops; `--signal=B:USR1@S` warns the script S seconds
//                  before the time limit, which it passes on to attn-tune as SIGTERM.
//   merge.sbatch   the merge job (submitted with --dependency=afterany on the array): merges the
//                  shards into merged.db, prints the winners, and names the shards that did not
//                  finish with the command that runs them again.
//   submit.sh      submits both (or only the shards named with --shards, then the merge again).
//   run-local.sh   the same two scripts on this machine without Slurm: the shards as processes,
//                  --parallel of them at a time, each on its own GPUs, then the merge.
//   README.md      what the plan holds and how to run it.
// Every path in them is absolute, so they run from any folder of any node that sees the plan's
// folder and the attn-tune binary at the same paths (shared storage).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tuner/sweep_plan.hpp"

namespace attn {

struct SweepScripts {
  std::string dir;        // the plan's folder, absolute
  std::string attn_tune;  // the binary the scripts run, absolute
  std::string job_name = "attn-sweep";
  uint64_t shards = 1;
  // `attn-tune tune` arguments every shard shares (the workload, --variant, --strategy, ...):
  // the scripts add --shard, --shard-map and --db.
  std::vector<std::string> tune_args;
  // `attn-tune merge` arguments after --winners (--variant GLOB).
  std::vector<std::string> winner_args;
  // Slurm: each task's resources (empty or 0: the cluster's default) and the merge job's time.
  std::string partition, account, qos, constraint, time, mem, merge_time;
  int gpus_per_task = 0, cpus_per_task = 0;
  std::optional<uint64_t> max_running;      // --array=0-(n-1)%K
  int stop_seconds = 180;                   // USR1 this long before the time limit
  std::vector<std::string> sbatch_options;  // more options for the array, e.g. "--exclusive"
  int local_parallel = 1;                   // run-local.sh's default --parallel
};

// Seconds of a Slurm time limit ("minutes", "minutes:seconds", "hours:minutes:seconds",
// "days-hours", "days-hours:minutes", "days-hours:minutes:seconds"); nullopt for "infinite",
// "unlimited" or anything else.
std::optional<long> slurm_time_seconds(const std::string& text);

// A word the shell reads back as `text`: as it is when it holds only [A-Za-z0-9_./=:,+@%-],
// else in single quotes.
std::string shell_word(const std::string& text);

std::string array_script(const SweepScripts& s);
std::string merge_script(const SweepScripts& s);
std::string submit_script(const SweepScripts& s);
std::string local_script(const SweepScripts& s);
// README.md: `command` is the plan's own command line; `sweep` says what is tuned, in words.
std::string plan_readme(const SweepScripts& s, const SweepPlan& plan, const std::string& command,
                        const std::string& sweep);

}  // namespace attn
