#!/usr/bin/env bash
# Issue 9 acceptance on a GPU machine (build carried from the CPU machine; DESIGN.md, "GPU
# testing"), in one call. Writes databases and logs into $OUT and prints lines to quote:
#   (a) exhaustive, halving and model sweeps of the paged_decode CUDA variants on the Llama-3-8B
#       decode case (64 x 4096, bf16, 16-token pages), each into its own database: best time, the
#       measure phase's seconds (from the summary's "phases" line, so that compiles into a cold JIT
#       cache do not decide the comparison), the total evaluation time, and each strategy's ratios
#       to exhaustive (the 25% test on the measure phase; the total's ratio for information);
#   (b) a sweep of the test-only faulting variants (ATTN_BENCH_TEST_VARIANTS=1): each config's
#       disposition, and whether any worker is left;
#   (c) kill -9 of the orchestrator mid-sweep, then the same command again: duplicate and missing
#       counts from SQL;
#   (d) with two GPUs visible: the exhaustive sweep with --devices 0 and --devices 0,1, wall times.
#
#   OUT=$OUT scripts/tune-acceptance.sh
# Environment (the defaults keep it under about 8 minutes on an H100):
#   BUILD (default build), OUT (default out/), WORKLOAD (default preset decode-llama3-8b-64x4096),
#   SPACE: axis overrides that cut the space ("full": each variant's own axes; default below),
#   DEADLINE (default compile=120,verify=30,measure=120), KILL_AT measurements (default 5) or
#   KILL_AFTER seconds (default 60), whichever comes first,
#   PARTS: which of a b c d to run (default "a b c d").
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
tune="$build/apps/attn-tune"
workload=${WORKLOAD:-decode-llama3-8b-64x4096}
deadline=${DEADLINE:-compile=120,verify=30,measure=120}
parts=${PARTS:-a b c d}
if [ "${SPACE:-}" = full ]; then
  space=()
else
  read -r -a space <<< "${SPACE:--a tile_tokens=16,32,64 -a stages=2,3,4 -a warps=2,4,8 -a heads_per_cta=4,8 -a num_splits=0,1,8}"
fi
export ATTN_JIT_CACHE_DIR=${ATTN_JIT_CACHE_DIR:-$out/jit}
status=0
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $("$tune" --version 2>/dev/null | head -1)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null
echo "== workload $workload, space ${space[*]:-full}, deadlines $deadline"

# sql DB QUERY: one value (python3's sqlite3: the GPU machine has no sqlite3 CLI).
sql() {
  python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone(); print(r[0] if r and r[0] is not None else "")' "$1" "$2"
}
# Best confirm median (us) and the summed wall time of the evaluations (s, all phases) in a database.
best_us() { sql "$1" "SELECT printf('%.2f', min(median_us)) FROM measurements WHERE disposition = 'passed' AND policy = 'confirm'"; }
evaluation_s() { sql "$1" "SELECT printf('%.1f', sum((julianday(finished_at) - julianday(started_at)) * 86400)) FROM attempts WHERE status = 'finished'"; }
# phase_s SUMMARY PHASE: the seconds of PHASE (compile, verify, measure) over all variants, from the
# line "phases    compile 1.2s, verify 3.4s, measure 5.6s over all variants (...)" of a tune
# summary; empty when it has none (no phases reported).
phase_s() { grep -E '^phases ' "$1" | tail -1 | grep -oE "$2 [0-9.]+s" | grep -oE '[0-9.]+'; }
now() { date +%s.%N; }

if [[ " $parts " == *" a "* ]]; then
  declare -A best secs total
  for strategy in exhaustive halving model; do
    db="$out/tune-$strategy.db"
    rm -f "$db"*
    start=$(now)
    "$tune" tune "$workload" --variant 'paged_decode.*' --strategy "$strategy" --db "$db" \
      --deadline "$deadline" "${space[@]}" > "$out/tune-$strategy.txt" 2> "$out/tune-$strategy.err"
    rc=$?
    wall=$(python3 -c "print(f'{$(now) - $start:.1f}')")
    best[$strategy]=$(best_us "$db")
    secs[$strategy]=$(phase_s "$out/tune-$strategy.txt" measure)
    total[$strategy]=$(evaluation_s "$db")
    compile_s=$(phase_s "$out/tune-$strategy.txt" compile)
    verify_s=$(phase_s "$out/tune-$strategy.txt" verify)
    echo "(a) $strategy: exit $rc, best ${best[$strategy]} us, measure phase ${secs[$strategy]:-unknown} s," \
      "evaluation time ${total[$strategy]} s (compile ${compile_s:-unknown} s, verify ${verify_s:-unknown} s)," \
      "wall $wall s"
    grep -E "^paged_decode|^overall|^compile|^phases|winner" "$out/tune-$strategy.txt" | sed 's/^/    /'
    [ "$rc" = 0 ] || [ "$rc" = 5 ] || status=1
  done
  for strategy in halving model; do
    python3 - "$strategy" "${best[$strategy]}" "${best[exhaustive]}" "${secs[$strategy]}" "${secs[exhaustive]}" \
      "${total[$strategy]}" "${total[exhaustive]}" <<'PY'
import sys
s = sys.argv[1]
b, be, t, te, a, ae = (float(x) if x else None for x in sys.argv[2:])
if None in (b, be):
    best = "best unknown (no passed confirm result); within 2%: NO"
else:
    best = (f"best {b:.2f} us vs {be:.2f} us ({(b / be - 1) * 100:+.2f}%); "
            f"within 2%: {'yes' if b <= be * 1.02 else 'NO'}")
if None in (t, te):
    measure = "measure phase unknown (no phases line in a summary); at most 25% of the time: NO"
elif not te:
    measure = f"measure phase {t:.1f} s vs {te:.1f} s (no ratio); at most 25% of the time: NO"
else:
    measure = (f"measure phase {t:.1f} s vs {te:.1f} s ({t / te * 100:.1f}%); "
               f"at most 25% of the time: {'yes' if t <= 0.25 * te else 'NO'}")
if None in (a, ae) or not ae:
    evaluation = "evaluation time unknown"
else:
    evaluation = f"evaluation time {a:.1f} s vs {ae:.1f} s ({a / ae * 100:.1f}%, for information)"
print(f"(a) {s} vs exhaustive: {best}; {measure}; {evaluation}")
PY
  done
fi

if [[ " $parts " == *" b "* ]]; then
  db="$out/tune-faults.db"
  rm -f "$db"*
  ATTN_BENCH_TEST_VARIANTS=1 "$tune" tune "$workload" --variant 'test.fault_*' --strategy exhaustive \
    --db "$db" --deadline compile=120,verify=15,measure=120 > "$out/tune-faults.txt" 2> "$out/tune-faults.err"
  echo "(b) faulting sweep: exit $? (5 expected: some configs failed)"
  python3 - "$db" <<'PY'
import sqlite3, sys
for v, c, d, r in sqlite3.connect(sys.argv[1]).execute(
    "SELECT variant, config_key, disposition, substr(reason, 1, 110) FROM measurements ORDER BY variant, config_key"):
    print(f"(b)   {v} {{{c}}}: {d}" + (f"  ({r})" if d != "passed" else ""))
PY
  grep -E "replaced after a sticky" "$out/tune-faults.txt" | sed 's/^/(b)   /'
  echo "(b) workers left: $(pgrep -fc "attn-tune worker" || true)"
  echo "(b) GPU usable afterwards: $("$bench" run "$workload" --variant paged_decode.splitkv --policy screen --db "$out/after-faults.db" > "$out/after-faults.txt" 2>&1 && echo yes || echo NO)"
fi

if [[ " $parts " == *" c "* ]]; then
  db="$out/tune-kill.db"
  rm -f "$db"*
  cmd=("$tune" tune "$workload" --variant 'paged_decode.*' --strategy exhaustive --db "$db" --deadline "$deadline" "${space[@]}")
  "${cmd[@]}" > "$out/tune-kill-1.txt" 2> "$out/tune-kill-1.err" &
  pid=$!
  # Kill once KILL_AT measurements are recorded (mid-sweep whatever the speed of the machine), or
  # after KILL_AFTER seconds at the latest.
  start=$(now)
  while kill -0 "$pid" 2>/dev/null; do
    n=0
    [ -f "$db" ] && n=$(sql "$db" "SELECT count(*) FROM measurements" 2>/dev/null)
    [ "${n:-0}" -ge "${KILL_AT:-5}" ] && break
    python3 -c "import sys; sys.exit(0 if $(now) - $start > ${KILL_AFTER:-60} else 1)" && break
    sleep 0.2
  done
  running=$(kill -0 "$pid" 2>/dev/null && echo "still running" || echo "ALREADY FINISHED")
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  sleep 1
  before=$(sql "$db" "SELECT count(*) FROM measurements")
  echo "(c) kill -9 at $(python3 -c "print(f'{$(now) - $start:.1f}')") s (sweep $running): $before measurements, $(sql "$db" "SELECT count(*) FROM attempts WHERE status = 'started'") attempt(s) left started, workers left: $(pgrep -fc "attn-tune worker" || true)"
  "${cmd[@]}" > "$out/tune-kill-2.txt" 2> "$out/tune-kill-2.err"
  echo "(c) resume: exit $?"
  grep -E "^paged_decode" "$out/tune-kill-2.txt" | sed 's/^/    /'
  space_n=$(grep -oE "^paged_decode[^:]*: [0-9]+ configs \([0-9]+ in shard" "$out/tune-kill-2.txt" | grep -oE "[0-9]+ in shard" | awk '{s += $1} END {print s + 0}')
  dup=$(sql "$db" "SELECT count(*) FROM (SELECT variant, config_key, policy FROM measurements WHERE disposition NOT IN ('crashed', 'timed_out') GROUP BY 1, 2, 3 HAVING count(*) > 1)")
  got=$(sql "$db" "SELECT count(DISTINCT variant || ' ' || config_key) FROM measurements WHERE policy = 'confirm' AND disposition NOT IN ('crashed', 'timed_out')")
  echo "(c) duplicates: $dup (0 expected); configs recorded: $got of $space_n in the space (lost: $((space_n - got)))"
  [ "$dup" = 0 ] && [ "$got" = "$space_n" ] || status=1
fi

if [[ " $parts " == *" d "* ]]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU")
  if [ "$gpus" -ge 2 ]; then
    for devices in 0 0,1; do
      db="$out/tune-devices-${devices/,/-}.db"
      rm -f "$db"*
      start=$(now)
      "$tune" tune "$workload" --variant 'paged_decode.*' --strategy exhaustive --db "$db" \
        --deadline "$deadline" --devices "$devices" "${space[@]}" > "$out/tune-devices-${devices/,/-}.txt" 2>&1
      rc=$?
      echo "(d) --devices $devices: exit $rc, wall $(python3 -c "print(f'{$(now) - $start:.1f}')") s, $(grep -E "^workers  " "$out/tune-devices-${devices/,/-}.txt" | head -1)"
    done
  else
    echo "(d) only $gpus GPU visible: no two-GPU sweep on this machine"
  fi
fi
exit $status
