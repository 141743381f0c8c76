#!/usr/bin/env bash
# flash_fwd.sm80_mma and flash_fwd.sm90_wgmma (Hopper) on a GPU machine, in one call (build
# carried from the CPU machine):
# calibration, the flash_fwd GPU tests, the issue-8 dense prefill presets, optional config runs
# and torch's SDPA flash and cuDNN backends on the same shapes (seed_peers.py dense_flash).
#
#   OUT=$OUT scripts/flash-fwd-bench.sh          (EXTRA="preset:config ..." adds config runs)
# Environment: BUILD (default build), OUT, SKIP_TESTS=1, PEERS=1, POLICY (default confirm),
# VARIANT (a --variant glob, default flash_fwd.sm*: both CUDA variants side by side; EXTRA configs
# name one variant's axes, so set VARIANT to that variant for them),
# PRESETS (default: the six head_dim 128 cases; HEAD_DIMS="64 128 256" for all eighteen),
# ROUNDS (default 1): the presets and then torch, that many times in turn, so that both sides
# are measured through the same stretch of the GPU's time; scripts/flash-fwd-table.py then
# takes each case's median over the rounds (a.db holds every round's measurements; torch's
# rounds go to peers-1.txt, peers-2.txt, ...).
# Each case is verified before it is timed, against the CPU reference or, for the large ones, the
# naive GPU reference (attn-bench run --reference auto, docs/measurement.md).
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
db="$out/a.db"
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $("$bench" --version)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null
"$bench" calibrate --db "$db" > "$out/calibrate.txt" 2>&1; tail -4 "$out/calibrate.txt"
if [ -z "${SKIP_TESTS:-}" ]; then
  ctest --test-dir "$build" -L gpu --output-on-failure -R "${TESTS:-FlashFwd}" > "$out/ctest.txt" 2>&1
  grep -E "tests passed|Failed|FAILED|Failure|Expected|Which is|passed\)" "$out/ctest.txt" | head -40
fi
run() {  # preset [config]
  local args=(run --preset "$1" --db "$db" --variant "${VARIANT:-flash_fwd.sm*}" --policy "${POLICY:-confirm}")
  [ -n "${2:-}" ] && args+=(--config "$2")
  echo "== $1 ${2:-default}"
  "$bench" "${args[@]}" >> "$out/runs.txt" 2>&1
  tail -n 12 "$out/runs.txt" | grep -E "sm80_mma|sm90_wgmma|rejected|failed|error" | tail -4
}
if [ -z "${PRESETS:-}" ]; then
  PRESETS=""
  for d in ${HEAD_DIMS:-128}; do
    for s in 16x1024 4x4096 1x16384; do
      PRESETS+=" prefill-dense-d$d-$s prefill-dense-d$d-$s-causal"
    done
  done
fi
for ((round = 1; round <= ${ROUNDS:-1}; ++round)); do
  echo "== round $round $(date -u +%H:%M:%SZ)"
  for p in $PRESETS; do run "$p"; done
  for e in ${EXTRA:-}; do run "${e%%:*}" "${e#*:}"; done
  if [ -n "${PEERS:-}" ] && [ -f .carry/seed_peers.py ]; then
    PYTHONUNBUFFERED=1 timeout 300 python3 .carry/seed_peers.py dense_flash > "$out/peers-$round.txt" 2>&1
    tail -n 40 "$out/peers-$round.txt"
  fi
done
