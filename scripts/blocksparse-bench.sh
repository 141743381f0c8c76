#!/usr/bin/env bash
# The blocksparse family on a GPU machine, in one call (build carried from the CPU machine):
# calibration, the blocksparse GPU tests, issue 7's benchmark cases (4 x 8192 and 2 x 16384
# tokens, 32/8 heads, d128, bf16, blocks of 64, local 16, vertical stride 8) with every blocksparse
# variant side by side (blocksparse.mma, and on Hopper blocksparse.sm90_wgmma at its default of two
# consumers with 128-key tiles, and with one consumer at two CTAs per SM and 64-key tiles, the
# earlier default), their dense causal counterparts with flash_fwd.sm80_mma, the
# block-sparse decode preset, and seed 003's Triton kernel and dense causal torch SDPA
# (seed_peers.py blocksparse) in the same call.
#
#   OUT=$OUT PEERS=1 scripts/blocksparse-bench.sh
#   (EXTRA="preset:variant:config ..." adds config runs, e.g.
#    EXTRA="prefill-phi3-small-block-sparse:blocksparse.sm90_wgmma:tile_n=128,stages=3,ctas_per_sm=1,consumers=2")
# Environment: BUILD (default build), OUT, SKIP_TESTS=1, PEERS=1, POLICY (default confirm).
# Each case is verified against the CPU reference before it is timed.
set -uo pipefail
build=${BUILD:-build}
out=${OUT:-out}
mkdir -p "$out"
db="$out/a.db"
bench="$build/apps/attn-bench"
source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
if [ -n "$source_dir" ] && [ "$source_dir" != "$PWD" ] && [ ! -e "$source_dir" ]; then
  mkdir -p "$(dirname "$source_dir")" && ln -s "$PWD" "$source_dir"
fi
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $("$bench" --version)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null
"$bench" calibrate --db "$db" > "$out/calibrate.txt" 2>&1; tail -4 "$out/calibrate.txt"
if [ -z "${SKIP_TESTS:-}" ]; then
  ctest --test-dir "$build" -L gpu --output-on-failure -R "${TESTS:-BlockSparse}" > "$out/ctest.txt" 2>&1
  grep -E "tests passed|Failed|FAILED|Failure|Expected|Which is|passed\)" "$out/ctest.txt" | head -40
fi
run() {  # preset variant [config]
  local args=(run --preset "$1" --db "$db" --variant "$2" --policy "${POLICY:-confirm}")
  [ -n "${3:-}" ] && args+=(--config "$3")
  echo "== $1 $2 ${3:-default}"
  "$bench" "${args[@]}" >> "$out/runs.txt" 2>&1
  tail -n 12 "$out/runs.txt" | grep -E "$2|rejected|failed|error" | tail -4
}
for preset in prefill-phi3-small-block-sparse prefill-phi3-small-block-sparse-2x16384; do
  run "$preset" 'blocksparse.*'
  run "$preset" blocksparse.sm90_wgmma tile_n=64,stages=2,ctas_per_sm=2,consumers=1
done
run prefill-phi3-small-dense-causal-4x8192 flash_fwd.sm80_mma
run prefill-phi3-small-dense-causal-2x16384 flash_fwd.sm80_mma
run decode-phi3-small-block-sparse 'blocksparse.*'
for e in ${EXTRA:-}; do
  IFS=: read -r preset variant config <<< "$e"
  run "$preset" "$variant" "$config"
done
if [ -n "${PEERS:-}" ] && [ -f .carry/seed_peers.py ]; then
  PYTHONUNBUFFERED=1 timeout 300 python3 .carry/seed_peers.py blocksparse > "$out/peers.txt" 2>&1
  tail -n 40 "$out/peers.txt"
fi
