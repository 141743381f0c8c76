#!/usr/bin/env bash
# A kernel family's benchmark suite on a GPU machine in one call, over a build carried from the
# CPU machine (docs/gpu-testing.md): the device's ceilings once (attn-bench calibrate), then the
# steps of scripts/bench/SUITE.txt in turn into one database: our variants on each benchmark
# preset, the peers on the same batches, the measuring-stick sections; last, a summary table of
# every case (scripts/bench/summary.py; also $OUT/summary.md).
#
#   OUT=$OUT scripts/gpu-bench.sh SUITE... | all       (carry: .carry, from scripts/carry-build.sh)
#
# Paths (BUILD, OUT, DB, workload files, .carry) are relative to the checkout's root.
#
# Suites (scripts/bench/*.txt): paged_decode, prefix_prefill, flash_fwd, blocksparse, and
# measurement (the timer checks); `all` runs every one, measurement first.
#
# A suite file has one step per line (`#` starts a comment); ARGS go to the command as written:
#   variant GLOB          the suite's --variant default (else SUITE.*)
#   tests REGEX           ctest -L gpu -R REGEX, with `tests` in STEPS
#   run PRESET [ARGS]     attn-bench run PRESET ARGS (PRESET: a preset name or a workload file)
#   peers PRESET [ARGS]   attn-bench peers PRESET ARGS $PEERS_ARGS, then `attn-tune compare` of
#                         the suite's variants against the peers on that preset
#   seed_peers SECTION    python3 .carry/seed_peers.py SECTION (../shared/peers/seed_peers.py
#                         copied into .carry/), when it is there
# run and peers add `--variant GLOB` and `--policy confirm` unless ARGS name their own.
#
# Environment:
#   BUILD       the build folder (default build, linked to .carry/b when only that exists)
#   OUT         logs, the database and the summary (default out/)
#   DB          the database (default $OUT/attn-bench.db; a path outside $OUT gathers the results
#               of several calls on one machine)
#   STEPS       the kinds of step to run (default "run peers seed_peers"; add tests for the
#               suite's GPU tests first)
#   PRESETS     only the run and peers steps whose preset matches one of these globs
#   VARIANT     the --variant of steps that name none (default: the suite's)
#   POLICY      the --policy of steps that name none (default confirm)
#   ROUNDS      the run and seed_peers steps that many times in turn (default 1), so a drift of
#               the GPU falls on ours and the measuring stick alike; the summary takes each
#               case's median over the rounds
#   PEERS_ARGS  more arguments for every attn-bench peers (e.g. "--max-time 6")
#   CALIBRATE   0: no calibration (the database holds this device's ceilings already)
#   DRY_RUN     1: check every preset (attn-bench workload validate) and print the commands
#               without running them; needs no GPU
# Exit status: 0 when every step succeeded (a failed `attn-tune compare`, e.g. no peer passed, is
# only listed), 1 when one failed (the summary lists it), 2 on a usage error (an unknown suite, a
# PRESETS glob that matches nothing), 4 when the build is missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.." || exit 4
# shellcheck source=scripts/gpu-env.sh
source "$here/gpu-env.sh"
tune="$build/apps/attn-tune"
db=${DB:-$out/attn-bench.db}
steps=" ${STEPS:-run peers seed_peers} "
rounds=${ROUNDS:-1}
dry=${DRY_RUN:-0}
all_suites=(measurement paged_decode prefix_prefill flash_fwd blocksparse)

usage() {
  echo "usage: scripts/gpu-bench.sh SUITE... | all   (SUITE: ${all_suites[*]})" >&2
  exit 2
}
[ $# -gt 0 ] || usage
suites=()
for a in "$@"; do
  if [ "$a" = all ]; then
    suites+=("${all_suites[@]}")
  elif [ -f "$here/bench/$a.txt" ]; then
    suites+=("$a")
  else
    echo "gpu-bench: no suite '$a' (scripts/bench/$a.txt)" >&2
    usage
  fi
done
[ -x "$bench" ] || { echo "gpu-bench: $bench is missing: build first and carry $build" >&2; exit 4; }

# The suite's steps, one per line, comments and blank lines dropped.
suite_steps() { sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^[[:space:]]*$/d' "$here/bench/$1.txt"; }

# PRESETS: does the preset match one of the globs (every preset when PRESETS is empty)?
selected() {
  [ -z "${PRESETS:-}" ] && return 0
  local glob
  for glob in $PRESETS; do
    # shellcheck disable=SC2053
    [[ $1 == $glob ]] && return 0
  done
  return 1
}

if [ -n "${PRESETS:-}" ]; then
  for glob in $PRESETS; do
    found=0
    for suite in "${suites[@]}"; do
      while read -r kind preset _; do
        # shellcheck disable=SC2053
        [[ ($kind == run || $kind == peers) && $preset == $glob ]] && found=1
      done < <(suite_steps "$suite")
    done
    [ "$found" = 1 ] || { echo "gpu-bench: PRESETS '$glob' matches no step of ${suites[*]}" >&2; exit 2; }
  done
fi

status=0
steps_log="$out/steps.tsv"
[ "$dry" = 1 ] || : > "$steps_log"
# step [--soft] LOG COMMAND...: runs the command with its output in LOG (appended) and records
# its exit status for the summary (a failure fails the run, unless --soft); with DRY_RUN prints
# it instead.
step() {
  local soft=0
  [ "$1" = --soft ] && soft=1 && shift
  local log=$1
  shift
  if [ "$dry" = 1 ]; then
    echo "+ $*"
    return 0
  fi
  echo "== $(date -u +%H:%M:%S) $*"
  "$@" >> "$log" 2>&1
  local rc=$?
  printf '%s\t%s\n' "$rc" "$*" >> "$steps_log"
  if [ "$rc" != 0 ]; then
    echo "   exit $rc (see $log)"
    [ "$soft" = 1 ] || status=1
  fi
  return "$rc"
}
# with_defaults GLOB ARGS...: ARGS, then --variant GLOB and --policy unless ARGS name their own.
with_defaults() {
  local glob=$1
  shift
  local args=("$@") a has_variant=0 has_policy=0
  for a in "${args[@]}"; do
    [ "$a" = --variant ] && has_variant=1
    [ "$a" = --policy ] && has_policy=1
  done
  [ "$has_variant" = 1 ] || args+=(--variant "$glob")
  [ "$has_policy" = 1 ] || args+=(--policy "${POLICY:-confirm}")
  printf '%s\n' "${args[@]}"
}

if [ "$dry" = 1 ]; then
  for suite in "${suites[@]}"; do
    while read -r kind preset _; do
      if [[ $kind == run || $kind == peers ]] && selected "$preset"; then
        "$bench" workload validate "$preset" > /dev/null ||
          { echo "gpu-bench: suite $suite: '$preset' is not a valid workload" >&2; status=1; }
      fi
    done < <(suite_steps "$suite")
  done
else
  # The build's own commit: the checkout's .git on the GPU machine may not be the one built.
  echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $("$bench" --version); suites: ${suites[*]}; database $db"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu \
    --format=csv,noheader 2>/dev/null
  if [[ $steps == *" peers "* ]]; then
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' \
      2>/dev/null || echo "torch: not importable"
    python3 -c 'import flashinfer; print("flashinfer", flashinfer.__version__)' 2>/dev/null ||
      echo "flashinfer: not installed (scripts/flashinfer.sh)"
  fi
fi
if [ "${CALIBRATE:-1}" != 0 ]; then
  step "$out/calibrate.txt" "$bench" calibrate --db "$db" && [ "$dry" != 1 ] &&
    tail -n 4 "$out/calibrate.txt"
fi

for suite in "${suites[@]}"; do
  mapfile -t lines < <(suite_steps "$suite")
  glob="$suite.*"
  for line in "${lines[@]}"; do
    read -r -a w <<< "$line"
    [ "${w[0]}" = variant ] && glob=${w[1]}
  done
  glob=${VARIANT:-$glob}
  if [[ $steps == *" tests "* ]]; then
    for line in "${lines[@]}"; do
      read -r -a w <<< "$line"
      [ "${w[0]}" = tests ] || continue
      step "$out/ctest-$suite.txt" ctest --test-dir "$build" -L gpu --output-on-failure -R "${w[1]}"
      [ "$dry" = 1 ] || grep -E "tests passed|Failed|SKIPPED" "$out/ctest-$suite.txt" | tail -n 5
    done
  fi
  for ((round = 1; round <= rounds; ++round)); do
    [ "$rounds" = 1 ] || echo "== $suite: round $round of $rounds"
    for line in "${lines[@]}"; do
      read -r -a w <<< "$line"
      case "${w[0]}" in
        run)
          [[ $steps == *" run "* ]] && selected "${w[1]}" || continue
          mapfile -t args < <(with_defaults "$glob" "${w[@]:2}")
          step "$out/run-$suite.txt" "$bench" run "${w[1]}" --db "$db" "${args[@]}"
          ;;
        seed_peers)
          [[ $steps == *" seed_peers "* ]] || continue
          if [ -f .carry/seed_peers.py ] || [ "$dry" = 1 ]; then
            log="$out/seed_peers-${w[1]}.txt"
            [ "$rounds" = 1 ] || log="$out/seed_peers-${w[1]}-$round.txt"
            PYTHONUNBUFFERED=1 step "$log" timeout 400 python3 .carry/seed_peers.py "${w[1]}" &&
              [ "$dry" != 1 ] && grep -E '^\{' "$log" | tail -n 20
          else
            echo "== seed_peers.py ${w[1]}: .carry/seed_peers.py is not carried; skipped"
          fi
          ;;
      esac
    done
  done
  for line in "${lines[@]}"; do
    read -r -a w <<< "$line"
    [ "${w[0]}" = peers ] && [[ $steps == *" peers "* ]] && selected "${w[1]}" || continue
    mapfile -t args < <(with_defaults "$glob" "${w[@]:2}")
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 step "$out/peers-$suite.txt" "$bench" peers "${w[1]}" --db "$db" \
      "${args[@]}" ${PEERS_ARGS:-}
    # Listed in the summary when it fails (no peer passed, e.g. without torch), not a failed run.
    step --soft "$out/peers-$suite.txt" "$tune" compare --db "$db" --workload "${w[1]}" \
      --variant "$glob" --variant 'peer.*' -o "$out/compare-${w[1]##*/}.md"
  done
done

if [ "$dry" != 1 ]; then
  echo
  python3 "$here/bench/summary.py" "$db" --steps "$steps_log" | tee "$out/summary.md"
fi
exit $status
