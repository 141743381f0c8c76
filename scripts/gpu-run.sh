#!/usr/bin/env bash
# Runs the GPU tests and the decode benchmark on a GPU machine, over a build folder made on another
# machine of the same architecture (docs/gpu-testing.md): build with `make build` here, send
# the checkout with the build folder, and run this script in the checkout's root there.
#
#   scripts/gpu-run.sh [preset ...]      default preset: decode-llama3-8b-64x4096
#
# Environment: BUILD (default build), OUT (where logs and the database go; default out/),
# PEERS (sections of seed_peers.py to run in the same call, if .carry/seed_peers.py exists).
# Exit status: non-zero when a GPU test or a benchmark case failed.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(decode-llama3-8b-64x4096)

if [ ! -x "$build/apps/attn-bench" ]; then
  echo "gpu-run: $build/apps/attn-bench is missing: build first (make build) and carry $build" >&2
  exit 4
fi

status=0
# The build's own commit: the checkout's .git on the GPU machine may not be the one built.
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $("$build/apps/attn-bench" --version)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv 2>/dev/null | tee "$out/nvidia-smi.txt"
"$build/apps/attn-bench" devices | tee "$out/devices.txt"

echo "== ctest -L gpu"
ctest --test-dir "$build" -L gpu --output-on-failure 2>&1 | tee "$out/ctest-gpu.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

for preset in "${presets[@]}"; do
  echo "== attn-bench run --preset $preset"
  "$build/apps/attn-bench" run --preset "$preset" --db "$out/attn-bench.db" 2>&1 |
    tee "$out/run-$preset.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done

if [ -n "${PEERS:-}" ] && [ -f .carry/seed_peers.py ]; then
  echo "== seed_peers.py $PEERS"
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 python3 .carry/seed_peers.py $PEERS 2>&1 | tee "$out/peers.txt"
fi
exit $status
