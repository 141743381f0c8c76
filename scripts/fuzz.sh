#!/usr/bin/env bash
# Runs the workload loader's libFuzzer target (built by `make fuzz` into BUILD) for SECONDS over
# the checked-in seed corpus (tests/fuzz/corpus), the kept crashers (tests/fuzz/regressions) and
# the presets, with the workload.json dictionary. New inputs go to BUILD/corpus, a crasher to
# BUILD/crash-* (the run then fails). Prints one summary line: seconds, executions, corpus size.
#   scripts/fuzz.sh [BUILD [SECONDS]]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-fuzz}"
seconds="${2:-60}"
fuzzer="$build/tests/fuzz/attn_workload_loader_fuzz"
[ -x "$fuzzer" ] || { echo "fuzz: $fuzzer is not built (make fuzz)" >&2; exit 1; }
mkdir -p "$build/corpus"
log="$build/fuzz.log"
status=0
# stdin from /dev/null: a fuzzed workload may name /dev/stdin as a trace file.
"$fuzzer" "$build/corpus" tests/fuzz/corpus tests/fuzz/regressions workloads/presets \
  -dict=tests/fuzz/workload.dict -max_total_time="$seconds" -max_len=8192 -timeout=10 \
  -rss_limit_mb=2048 -artifact_prefix="$build/" -print_final_stats=1 </dev/null >"$log" 2>&1 ||
  status=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
corpus=$(find "$build/corpus" -type f | wc -l)
echo "fuzz: ${seconds}s, ${runs:-?} executions (${rate:-?}/s), $corpus new corpus inputs in $build/corpus, exit $status"
if [ "$status" -ne 0 ]; then
  tail -n 60 "$log" >&2
  echo "fuzz: a crasher is in $build/ (crash-*, timeout-*, oom-*): fix the bug, then keep the input in tests/fuzz/regressions/ (docs/reliability.md)" >&2
fi
exit "$status"
