#!/usr/bin/env bash
# The issue-5 paged_decode benchmark cases in one GPU-machine call (build carried from the CPU
# machine; DESIGN.md, "GPU testing"): calibration, every case for every CUDA variant with the
# confirm policy, the long single sequence also with the graph timer and the stages=3 config and
# the HND copy of 64 x 4096 for the two tensor-core variants, and the peers (torch SDPA on contiguous KV, JAX Pallas paged attention)
# from seed_peers.py decode_paged in the same call.
#
#   OUT=$OUT scripts/paged-decode-bench.sh
# Environment: BUILD (default build), OUT (default out/), PEERS=0 skips the peers.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
db="$out/attn-bench.db"
status=0
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $("$bench" --version)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null
"$bench" calibrate --db "$db" > "$out/calibrate.txt" 2>&1 || status=1
grep -iE "read|copy" "$out/calibrate.txt" | head -4
run() {  # label, then attn-bench run arguments
  local label=$1
  shift
  echo "== $label: attn-bench run $*"
  "$bench" run "$@" --db "$db" > "$out/run.txt" 2>&1 || status=1
  cat "$out/run.txt" >> "$out/runs.txt"
  grep -E "^paged_decode|unsupported|error" "$out/run.txt"
}
for preset in decode-llama3-8b-64x4096 decode-llama3-8b-lognormal-96 decode-llama3-8b-1x32768 \
  decode-llama3-8b-fp8-64x4096 decode-llama3-8b-64x4096-page1; do
  run "$preset" "$preset" --variant 'paged_decode.*' --policy confirm
done
for v in paged_decode.tensorcore paged_decode.sm90_tma; do
  run "1x32768 graph" decode-llama3-8b-1x32768 --variant $v --timer graph
  run "1x32768 graph st3" decode-llama3-8b-1x32768 --variant $v --timer graph --config stages=3
  run "64x4096 HND" scripts/workloads/decode-llama3-8b-64x4096-hnd.json --variant $v \
    --policy confirm
done
if [ "${PEERS:-1}" != 0 ] && [ -f .carry/seed_peers.py ]; then
  echo "== seed_peers.py decode_paged"
  PYTHONUNBUFFERED=1 timeout 400 python3 .carry/seed_peers.py decode_paged > "$out/peers.txt" 2>&1
  grep -E "llama8b_b64_L4096|llama8b_var96|llama8b_b8_L32768" "$out/peers.txt" | grep -v error | head -40
fi
exit $status
