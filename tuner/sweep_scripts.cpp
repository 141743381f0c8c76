#include "tuner/sweep_scripts.hpp"

#include <algorithm>
#include <sstream>

#include "results/table.hpp"

namespace attn {

namespace {

std::string words(const std::vector<std::string>& args) {
  std::string text;
  for (const std::string& a : args) text += " " + shell_word(a);
  return text;
}

// The #SBATCH lines every job of the plan shares: where it runs and under which account.
std::string placement_lines(const SweepScripts& s) {
  std::string text;
  if (!s.partition.empty()) text += "#SBATCH --partition=" + s.partition + "\n";
  if (!s.account.empty()) text += "#SBATCH --account=" + s.account + "\n";
  if (!s.qos.empty()) text += "#SBATCH --qos=" + s.qos + "\n";
  return text;
}

std::string array_range(const SweepScripts& s) {
  std::string range = "0-" + std::to_string(s.shards - 1);
  if (s.max_running) range += "%" + std::to_string(*s.max_running);
  return range;
}

}  // namespace

std::optional<long> slurm_time_seconds(const std::string& text) {
  std::vector<long> parts;
  long days = 0;
  std::string rest = text;
  const size_t dash = text.find('-');
  const auto number = [](const std::string& digits) -> std::optional<long> {
    if (digits.empty() || digits.size() > 6 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    return std::stol(digits);
  };
  if (dash != std::string::npos) {
    const std::optional<long> d = number(text.substr(0, dash));
    if (!d) return std::nullopt;
    days = *d;
    rest = text.substr(dash + 1);
  }
  size_t start = 0;
  for (;;) {
    const size_t colon = rest.find(':', start);
    const std::optional<long> part = number(rest.substr(start, colon - start));
    if (!part) return std::nullopt;
    parts.push_back(*part);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3) return std::nullopt;
  if (dash != std::string::npos) {  // days-hours[:minutes[:seconds]]
    while (parts.size() < 3) parts.push_back(0);
    return ((days * 24 + parts[0]) * 60 + parts[1]) * 60 + parts[2];
  }
  if (parts.size() == 1) return parts[0] * 60;             // minutes
  if (parts.size() == 2) return parts[0] * 60 + parts[1];  // minutes:seconds
  return (parts[0] * 60 + parts[1]) * 60 + parts[2];       // hours:minutes:seconds
}

std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string("_./=:,+@%-").find(c) != std::string::npos;
  });
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string array_script(const SweepScripts& s) {
  const std::string n = std::to_string(s.shards);
  std::ostringstream out;
  out << "#!/bin/bash\n"
      << "# One shard of the attn-tune sweep planned in " << s.dir << "\n"
      << "# (README.md there says what it holds). submit.sh submits this script as a job array:\n"
      << "# task i runs shard i of " << n << " into shards/shard-i.db. A requeued task (a\n"
      << "# preemption, scontrol requeue) runs the same command, which resumes the shard where it\n"
      << "# stopped. run-local.sh runs it without Slurm.\n"
      << "#SBATCH --job-name=" << s.job_name << "\n"
      << "#SBATCH --array=" << array_range(s) << "\n"
      << "#SBATCH --output=" << s.dir << "/logs/shard-%a.log\n"
      << "#SBATCH --open-mode=append\n"
      << "#SBATCH --requeue\n"
      << "#SBATCH --signal=B:USR1@" << s.stop_seconds << "\n"
      << "#SBATCH --ntasks=1\n";
  if (s.cpus_per_task > 0) out << "#SBATCH --cpus-per-task=" << s.cpus_per_task << "\n";
  if (s.gpus_per_task > 0) out << "#SBATCH --gres=gpu:" << s.gpus_per_task << "\n";
  if (!s.mem.empty()) out << "#SBATCH --mem=" << s.mem << "\n";
  if (!s.time.empty()) out << "#SBATCH --time=" << s.time << "\n";
  if (!s.constraint.empty()) out << "#SBATCH --constraint=" << s.constraint << "\n";
  out << placement_lines(s);
  for (const std::string& option : s.sbatch_options) out << "#SBATCH " << option << "\n";
  out << "set -u\n"
      << "shards=" << n << "\n"
      << "dir=" << shell_word(s.dir) << "\n"
      << "attn_tune=" << shell_word(s.attn_tune) << "\n"
      << R"sh(shard=${ATTN_SWEEP_SHARD:-${SLURM_ARRAY_TASK_ID:-}}
if [ -z "$shard" ]; then
  echo "attn-sweep: run this script with submit.sh (sbatch) or run-local.sh" >&2
  exit 2
fi
mkdir -p "$dir/shards" "$dir/status" "$dir/logs"
status="$dir/status/shard-$shard"
where="on $(hostname), job ${SLURM_JOB_ID:-none}, restart ${SLURM_RESTART_COUNT:-0}"
echo "running $where since $(date '+%F %T')" > "$status"
echo "attn-sweep: shard $shard/$shards $where, $(date '+%F %T')"

# attn-tune stops between configs on SIGTERM, keeps what it measured, and resumes when this script
# runs again. Slurm sends SIGTERM to every process of the job (scancel, a requeue, a preemption,
# the time limit), attn-tune included, so this shell only waits for it. USR1 (--signal above)
# comes to this shell alone before the time limit, and run-local.sh stops a shard with SIGTERM to
# this shell: both are passed on to attn-tune, once.
child=
stop() { if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null; fi; }
trap stop USR1
if [ -n "${ATTN_SWEEP_SHARD:-}" ]; then trap stop TERM HUP; else trap : TERM; fi
"$attn_tune" tune)sh"
      << words(s.tune_args) << R"sh( \
  --shard "$shard/$shards" --shard-map "$dir/shard-map.tsv" --db "$dir/shards/shard-$shard.db" &
child=$!
# wait returns early when a trapped signal comes; the child's status is kept for the last wait.
while kill -0 "$child" 2>/dev/null; do wait "$child"; done
wait "$child"
code=$?
echo "exit $code $where at $(date '+%F %T')" > "$status"
echo "attn-sweep: shard $shard/$shards ended with exit $code"
exit "$code"
)sh";
  return out.str();
}

std::string merge_script(const SweepScripts& s) {
  std::ostringstream out;
  out << "#!/bin/bash\n"
      << "# The merge step of the attn-tune sweep planned in " << s.dir
      << ": submit.sh submits it\n"
      << "# after the shards' job array (--dependency=afterany). It merges the shards' databases\n"
      << "# into merged.db, prints the winners, and names the shards that did not finish.\n"
      << "#SBATCH --job-name=" << s.job_name << "-merge\n"
      << "#SBATCH --output=" << s.dir << "/logs/merge.log\n"
      << "#SBATCH --open-mode=append\n"
      << "#SBATCH --ntasks=1\n";
  if (!s.merge_time.empty()) out << "#SBATCH --time=" << s.merge_time << "\n";
  out << placement_lines(s);
  out << "set -u\n"
      << "shards=" << s.shards << "\n"
      << "dir=" << shell_word(s.dir) << "\n"
      << "attn_tune=" << shell_word(s.attn_tune) << "\n"
      << R"sh(echo "attn-sweep: merging the shards of $dir on $(hostname), $(date '+%F %T')"
inputs=()
unfinished=()
for ((i = 0; i < shards; i++)); do
  if [ -f "$dir/shards/shard-$i.db" ]; then inputs+=("$dir/shards/shard-$i.db"); fi
  state=$(head -n 1 "$dir/status/shard-$i" 2>/dev/null)
  case "$state" in
    "exit 0 "* | "exit 5 "*) ;; # finished (5: some configs failed, and are recorded so)
    "") unfinished+=("$i"); echo "attn-sweep: shard $i never started" ;;
    *) unfinished+=("$i"); echo "attn-sweep: shard $i did not finish: $state (log: $dir/logs/shard-$i.log)" ;;
  esac
done
if [ ${#inputs[@]} -gt 0 ]; then
  "$attn_tune" merge "${inputs[@]}" --into "$dir/merged.db" --winners)sh"
      << words(s.winner_args) << R"sh( || exit $?
fi
if [ ${#unfinished[@]} -gt 0 ]; then
  list=$(IFS=,; echo "${unfinished[*]}")
  echo "attn-sweep: shards $list did not finish: the winners above are over what was measured."
  echo "attn-sweep: run them again (each resumes where it stopped), then this merge runs again:"
  echo "  $dir/submit.sh --shards $list      (or: $dir/run-local.sh --shards $list)"
  exit 130
fi
echo "attn-sweep: every shard finished; the results are in $dir/merged.db"
)sh";
  return out.str();
}

std::string submit_script(const SweepScripts& s) {
  std::ostringstream out;
  out << "#!/bin/bash\n"
      << "# Submits the attn-tune sweep planned in " << s.dir << ": the shards as a job array\n"
      << "# (sweep.sbatch), then the merge (merge.sbatch) to run after every task of the array "
         "has\n"
      << "# ended, however it ended (--dependency=afterany).\n"
      << "#   submit.sh                  every shard, then the merge\n"
      << "#   submit.sh --shards 1,3     these shards again (each resumes where it stopped), then\n"
      << "#                              the merge again\n"
      << "# Other arguments go to both sbatch commands (e.g. --partition=debug).\n"
      << "set -eu\n"
      << "dir=" << shell_word(s.dir) << "\n"
      << "array=" << array_range(s) << "\n"
      << "limit=" << (s.max_running ? "%" + std::to_string(*s.max_running) : std::string()) << "\n"
      << R"sh(if [ "${1:-}" = "--shards" ]; then
  array=${2:?"--shards needs a list of shards, e.g. 1,3"}$limit
  shift 2
fi
out=$(sbatch --parsable --array="$array" "$@" "$dir/sweep.sbatch")
array_job=${out%%;*}
out=$(sbatch --parsable --dependency="afterany:$array_job" "$@" "$dir/merge.sbatch")
merge_job=${out%%;*}
echo "attn-sweep: shards submitted as job array $array_job (tasks $array), the merge as job $merge_job"
echo "attn-sweep: follow them with: squeue -j $array_job,$merge_job   logs: $dir/logs/"
)sh";
  return out.str();
}

std::string local_script(const SweepScripts& s) {
  std::ostringstream out;
  out << "#!/bin/bash\n"
      << "# Runs the attn-tune sweep planned in " << s.dir << " on this machine, without Slurm:\n"
      << "# each shard through sweep.sbatch as array task i would run it, --parallel of them at a\n"
      << "# time, then merge.sbatch.\n"
      << "#   run-local.sh                every shard, then the merge\n"
      << "#   run-local.sh --shards 1,3   these shards again (each resumes where it stopped)\n"
      << "#   run-local.sh --parallel P   P shards at a time (default " << s.local_parallel << ")";
  if (s.gpus_per_task > 0) {
    out << ", each on its own " << s.gpus_per_task << " GPU" << (s.gpus_per_task > 1 ? "s" : "")
        << "\n#                               of $CUDA_VISIBLE_DEVICES (default 0, 1, ...)";
  }
  out << "\n"
      << "# Ctrl-C or SIGTERM stops the running shards after their configs in flight; what they\n"
      << "# measured is kept, and running this again resumes them.\n"
      << "set -u\n"
      << "shards=" << s.shards << "\n"
      << "gpus=" << s.gpus_per_task << "\n"
      << "parallel=" << s.local_parallel << "\n"
      << "dir=" << shell_word(s.dir) << "\n"
      << R"sh(list=
while [ $# -gt 0 ]; do
  case "$1" in
    --shards | --parallel)
      if [ $# -lt 2 ]; then echo "run-local.sh: $1 needs a value" >&2; exit 2; fi
      if [ "$1" = --shards ]; then list=$2; else parallel=$2; fi
      shift 2 ;;
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "run-local.sh: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done
pending=()
if [ -z "$list" ]; then
  for ((i = 0; i < shards; i++)); do pending+=("$i"); done
else
  IFS=, read -r -a pending <<< "$list"
fi
for i in "${pending[@]}"; do
  case "$i" in
    "" | *[!0-9]*) echo "run-local.sh: --shards: '$i' is not a shard number" >&2; exit 2 ;;
  esac
  if [ "$i" -ge "$shards" ]; then
    echo "run-local.sh: --shards: the shards are 0 to $((shards - 1))" >&2; exit 2
  fi
done
case "$parallel" in
  "" | *[!0-9]* | 0) echo "run-local.sh: --parallel needs a number of at least 1" >&2; exit 2 ;;
esac
visible=()
if [ "$gpus" -gt 0 ]; then
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    IFS=, read -r -a visible <<< "$CUDA_VISIBLE_DEVICES"
  else
    for ((g = 0; g < parallel * gpus; g++)); do visible+=("$g"); done
  fi
  if [ $((parallel * gpus)) -gt ${#visible[@]} ]; then
    echo "run-local.sh: $parallel shards at once of $gpus GPU(s) each need $((parallel * gpus)) GPUs; CUDA_VISIBLE_DEVICES lists ${#visible[@]}" >&2
    exit 2
  fi
fi
mkdir -p "$dir/logs"
pids=()
names=()
stopping=
stop() {
  if [ -n "$stopping" ]; then return; fi
  stopping=1
  echo "attn-sweep: stopping: the running shards finish their configs in flight" >&2
  for p in "${pids[@]}"; do if [ -n "$p" ]; then kill -TERM "$p" 2>/dev/null; fi; done
}
trap stop INT TERM HUP
next=0
unfinished=()
while :; do
  busy=
  for ((lane = 0; lane < parallel; lane++)); do
    p=${pids[lane]:-}
    if [ -n "$p" ]; then
      if kill -0 "$p" 2>/dev/null; then busy=1; continue; fi
      wait "$p"
      code=$?
      echo "attn-sweep: shard ${names[lane]} ended with exit $code (log: $dir/logs/shard-${names[lane]}.log)"
      if [ "$code" -ne 0 ] && [ "$code" -ne 5 ]; then unfinished+=("${names[lane]}"); fi
      pids[lane]=
    fi
    if [ -z "$stopping" ] && [ "$next" -lt ${#pending[@]} ]; then
      i=${pending[next]}
      next=$((next + 1))
      on=
      if [ "$gpus" -gt 0 ]; then on=$(IFS=,; echo "${visible[*]:lane * gpus:gpus}"); fi
      (
        if [ -n "$on" ]; then export CUDA_VISIBLE_DEVICES=$on; fi
        export ATTN_SWEEP_SHARD=$i
        exec bash "$dir/sweep.sbatch" >> "$dir/logs/shard-$i.log" 2>&1
      ) &
      pids[lane]=$!
      names[lane]=$i
      busy=1
      echo "attn-sweep: shard $i of $shards started${on:+ on GPU $on} (log: $dir/logs/shard-$i.log)"
    fi
  done
  if [ -z "$busy" ]; then break; fi
  sleep 1
done
if [ -n "$stopping" ]; then
  left=("${unfinished[@]}" "${pending[@]:next}")
  list=$(IFS=,; echo "${left[*]}")
  echo "attn-sweep: stopped; resume with: $dir/run-local.sh --shards $list" >&2
  exit 130
fi
bash "$dir/merge.sbatch" 2>&1 | tee -a "$dir/logs/merge.log"
exit "${PIPESTATUS[0]}"
)sh";
  return out.str();
}

std::string plan_readme(const SweepScripts& s, const SweepPlan& plan, const std::string& command,
                        const std::string& sweep) {
  std::ostringstream out;
  const double largest = *std::max_element(plan.shard_seconds.begin(), plan.shard_seconds.end());
  out << "# attn-tune sweep plan\n\n"
      << sweep << ": " << plan.configs() << " configs in " << s.shards
      << " shards, balanced by estimated cost.\n\n"
      << "Planned by:\n\n```sh\n"
      << command << "\n```\n\n"
      << "## Shards\n\n"
      << "Estimated seconds come from a rough model (launch times from `--history` where it had\n"
      << "them): compare shards with each other, not with a clock.\n\n"
      << "| shard | configs | estimated |\n|---:|---:|---:|\n";
  for (uint64_t i = 0; i < s.shards; ++i) {
    out << "| " << i << " | " << plan.shard_configs[i] << " | "
        << estimate_text(plan.shard_seconds[i]) << " |\n";
  }
  out << "\nThe largest shard is estimated at " << estimate_text(largest) << " of "
      << estimate_text(plan.seconds()) << " in all; split by the hash rule alone it would be "
      << estimate_text(plan.hash_largest_seconds) << ".\n\n"
      << "| workload | variant | configs | from the history | estimated |\n"
      << "|---|---|---:|---:|---:|\n";
  for (const PlannedSpace& p : plan.spaces) {
    out << "| " << p.workload << " (" << p.workload_hash.substr(0, 12) << ") | " << p.variant
        << " | " << p.configs << " | " << p.recorded << " | " << estimate_text(p.seconds) << " |\n";
  }
  out << "\n## Files\n\n"
      << "- `shard-map.tsv`: the shard of every config, with its estimate. Each task reads it "
         "(`--shard i/"
      << s.shards << " --shard-map`), so a requeued task takes the same configs.\n"
      << "- `sweep.sbatch`: the job array, task i runs shard i into `shards/shard-i.db`.\n"
      << "- `merge.sbatch`: merges the shards into `merged.db` and prints the winners.\n"
      << "- `submit.sh`: submits the array, then the merge after it.\n"
      << "- `run-local.sh`: runs the same scripts on one machine, without Slurm.\n"
      << "- Written by the run: `shards/shard-i.db`, `status/shard-i` (running, or the exit "
         "code), `logs/shard-i.log`, `logs/merge.log`, `merged.db`.\n\n"
      << "## Running it\n\n"
      << "```sh\n"
      << s.dir << "/submit.sh                # on a Slurm cluster\n"
      << s.dir << "/run-local.sh             # here, " << s.local_parallel
      << " shard(s) at a time (--parallel P)\n"
      << "```\n\n"
      << "The merge names any shard that did not finish (cancelled, timed out, failed) and the "
         "command that runs it again: `submit.sh --shards 1,3` (or `run-local.sh --shards "
         "1,3`). A shard run again resumes where it stopped, and the merge runs again after it.\n"
      << "Then read the results from `merged.db`: `attn-tune export --db " << s.dir
      << "/merged.db`, `attn-tune report --db " << s.dir << "/merged.db -o DIR`.\n";
  return out.str();
}

}  // namespace attn
