#!/usr/bin/env bash
# Issue 4's GPU checks in one device call, over a build carried from the CPU machine (see
# docs/gpu-testing.md): GPU tests, calibration beside torch's ceilings, the A/A repeat check of a
# decode case under `confirm`, and graph vs events timing of a ~20 us decode batch.
#
#   OUT=$OUT scripts/gpu-measure.sh          (carry: .carry from carry-build.sh, with seed_peers.py)
#
# Writes under $OUT (at most 8 files come back): summary.txt (everything printed), attn-bench.db,
# ctest-gpu.log, decode-repeat.json and small-decode.json (Google Benchmark JSON), peers.jsonl.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
db="$out/attn-bench.db"
small=scripts/workloads/decode-small-20us.json
exec > >(tee "$out/summary.txt") 2>&1

if [ ! -x "$bench" ]; then
  echo "gpu-measure: $bench is missing: build first (make build) and carry $build" >&2
  exit 4
fi

status=0
step() { echo; echo "== $(date -u +%H:%M:%S) $*"; }
# The build's own commit: the checkout's .git on the GPU machine may not be the one built.
step "$("$bench" --version)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
  --format=csv 2>/dev/null

step "ctest -L gpu"
ctest --test-dir "$build" -L gpu --output-on-failure -V >"$out/ctest-gpu.log" 2>&1 || status=1
grep -E "^(calibrate:|read_gbps|copy_gbps|memcpy_gbps|bf16_tflops|events|confirm:)|tests passed|Failed|SKIPPED" \
  "$out/ctest-gpu.log" | sed 's/^[0-9]*: //'

step "attn-bench calibrate"
"$bench" calibrate --db "$db" || status=1
"$bench" devices --db "$db"

if [ -f .carry/seed_peers.py ]; then
  step "seed_peers.py ceilings (torch: large D2D copy and 8192^3 bf16 GEMM)"
  OUT="$out" PYTHONUNBUFFERED=1 python3 .carry/seed_peers.py ceilings || status=1
fi

step "repeat check: decode-llama3-8b-64x4096 under confirm, twice in one process"
"$bench" run --preset decode-llama3-8b-64x4096 --policy confirm --repeat-check --db "$db" \
  --benchmark_out="$out/decode-repeat.json" || status=1

step "graph vs events: $small"
"$bench" run "$small" --timer events --db "$db" || status=1
"$bench" run "$small" --timer graph --repeat-check --db "$db" \
  --benchmark_out="$out/small-decode.json" || status=1

step "A/A noise floors stored"
if command -v sqlite3 >/dev/null; then
  sqlite3 -header -column "$db" "SELECT * FROM repeat_checks"
else
  python3 - "$db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = """SELECT r.id, m1.variant, m1.timer, round(m1.median_us, 3) AS median_1,
       round(m2.median_us, 3) AS median_2, round(100 * r.relative_difference, 3) AS diff_pct,
       r.verdict FROM repeat_checks r JOIN measurements m1 ON m1.id = r.first_measurement_id
       JOIN measurements m2 ON m2.id = r.second_measurement_id"""
for row in db.execute(q): print(row)
for row in db.execute("SELECT metric, round(value, 1), method FROM ceilings"): print(row)
PY
fi
exit $status
