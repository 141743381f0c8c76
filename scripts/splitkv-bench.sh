#!/usr/bin/env bash
# paged_decode.splitkv on a GPU machine, in one call (build carried from the CPU machine):
# calibration, the GPU tests, the issue-5 benchmark presets, optional config sweeps and the peers.
#
#   OUT=$OUT scripts/splitkv-bench.sh            (EXTRA="preset:config ..." adds config runs)
# Environment: BUILD (default build), OUT, SKIP_TESTS=1, PEERS=1 (seed_peers.py decode_paged).
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
db="$out/a.db"
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $("$bench" --version)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null
"$bench" calibrate --db "$db" > "$out/calibrate.txt" 2>&1; tail -4 "$out/calibrate.txt"
if [ -z "${SKIP_TESTS:-}" ]; then
  ctest --test-dir "$build" -L gpu --output-on-failure -R "${TESTS:-.}" > "$out/ctest.txt" 2>&1
  grep -E "tests passed|Failed|FAILED|Failure|ATTN_TEST_SEED|Expected|Which is|passed\)" "$out/ctest.txt" | head -40
fi
run() {  # preset [config]
  local args=(run --preset "$1" --db "$db" --variant paged_decode.splitkv --policy "${POLICY:-confirm}")
  [ -n "${2:-}" ] && args+=(--config "$2")
  echo "== $1 ${2:-default}"
  "$bench" "${args[@]}" >> "$out/runs.txt" 2>&1
  tail -n 12 "$out/runs.txt" | grep -E "splitkv|rejected|failed|error" | tail -3
}
for p in ${PRESETS:-decode-llama3-8b-64x4096 decode-llama3-8b-lognormal-96 decode-llama3-8b-1x32768 decode-llama3-8b-fp8-64x4096 decode-llama3-8b-64x4096-page1}; do
  run "$p"
done
for e in ${EXTRA:-}; do run "${e%%:*}" "${e#*:}"; done
if [ -n "${PEERS:-}" ] && [ -f .carry/seed_peers.py ]; then
  PYTHONUNBUFFERED=1 timeout 240 python3 .carry/seed_peers.py decode_paged > "$out/peers.txt" 2>&1
  tail -n 30 "$out/peers.txt"
fi
