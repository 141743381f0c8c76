#!/usr/bin/env bash
# Issue 10 on a GPU machine (build carried from the CPU machine; DESIGN.md, "GPU testing"): tunes one
# workload set on GPU 0 into $OUT/generations-<GPU>.db (GPU: H100, H200, ... from the board's
# name), after `attn-bench calibrate` has stored the device's ceilings in the same file. Run it on
# each machine, bring the databases back, then on any machine:
#   attn-tune merge generations.db generations-H100.db generations-H200.db
#   attn-tune compare --db generations.db --device H100 --device H200
#   attn-tune report  --db generations.db --compare-devices H100,H200 -o docs/reports/...
#
#   OUT=$OUT scripts/tune-generations.sh
# Environment: BUILD (default build), OUT (default out/), JOBS (compile threads, default nproc),
# CASES (a subset of the case names below, space separated; default all).
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
tune="$build/apps/attn-tune"
jobs=${JOBS:-$(nproc)}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | awk '{print $2}')
db="$out/generations-${gpu:-gpu}.db"
export ATTN_JIT_CACHE_DIR=${ATTN_JIT_CACHE_DIR:-$out/jit}

# name | workload preset | variants | strategy | axis overrides. The decode space is cut to 189
# configs per variant family so every config is measured on both machines (rank correlation and
# transfer regret need configs both sides have); the prefill spaces are each variant's own.
decode_axes="-a tile_tokens=16,32,64 -a stages=2,3,4 -a warps=2,4,8 -a heads_per_cta=4,8 -a num_splits=0,1,8"
all_cases=(
  "decode-8b|decode-llama3-8b-64x4096|paged_decode.*|exhaustive|$decode_axes"
  "decode-70b|decode-llama3-70b-tp8|paged_decode.*|exhaustive|$decode_axes"
  "prefix|prefix-prefill-llama3-8b-8x2048-512|prefix_prefill.*|halving|"
  "flash-4x4096-causal|prefill-dense-d128-4x4096-causal|flash_fwd.*|exhaustive|"
  "flash-16x1024|prefill-dense-d128-16x1024|flash_fwd.*|exhaustive|"
)
selected=${CASES:-decode-8b decode-70b prefix flash-4x4096-causal flash-16x1024}

echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $("$tune" --version 2>/dev/null | head -1) on $gpu -> $db"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv,noheader
status=0
"$bench" calibrate --db "$db" > "$out/calibrate-$gpu.txt" 2>&1 || status=1
grep -iE "bandwidth|tensor|TFLOP|GB/s" "$out/calibrate-$gpu.txt" | head -6

# Compile every case's programs first, all threads busy, so the sweeps measure warm.
for c in "${all_cases[@]}"; do
  IFS='|' read -r name workload variant strategy axes <<< "$c"
  [[ " $selected " == *" $name "* ]] || continue
  # shellcheck disable=SC2086
  "$tune" compile "$workload" --variant "$variant" $axes -j "$jobs" > "$out/compile-$gpu-$name.txt" 2>&1 ||
    { echo "compile $name failed"; tail -3 "$out/compile-$gpu-$name.txt"; status=1; }
done
echo "== compiled ($SECONDS s)"

for c in "${all_cases[@]}"; do
  IFS='|' read -r name workload variant strategy axes <<< "$c"
  [[ " $selected " == *" $name "* ]] || continue
  start=$SECONDS
  # shellcheck disable=SC2086
  "$tune" tune "$workload" --variant "$variant" --strategy "$strategy" $axes --db "$db" \
    --deadline compile=120,verify=30,measure=120 > "$out/tune-$gpu-$name.txt" 2>&1
  rc=$?
  echo "== $name: exit $rc, $((SECONDS - start)) s"
  grep -E "^overall|winner|^phases" "$out/tune-$gpu-$name.txt" | head -6 | sed 's/^/    /'
  [ "$rc" = 0 ] || [ "$rc" = 5 ] || status=1
done
echo "== end $(date -u +%T) ($SECONDS s), status $status"
exit $status
