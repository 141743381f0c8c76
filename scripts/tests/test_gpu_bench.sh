#!/usr/bin/env bash
# scripts/gpu-bench.sh without a GPU (DRY_RUN=1): every suite's presets are valid workloads of the
# build, the commands carry the suite's defaults unless a step names its own, the environment's
# filters and overrides apply, and usage errors exit 2. CTest runs it (scripts.gpu_bench).
#
#   scripts/tests/test_gpu_bench.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
script="$(cd "$(dirname "$0")/.." && pwd)/gpu-bench.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
dry() { DRY_RUN=1 BUILD="$build" OUT="$tmp/out" "$@"; }
# has TEXT PATTERN: TEXT holds a line matching the extended regex PATTERN.
has() { grep -qE -- "$2" <<< "$1" || fail "no line matching '$2' in:"$'\n'"$1"; }
count() { grep -cE -- "$2" <<< "$1" || true; }

# Every suite, every preset checked by attn-bench workload validate (the run fails otherwise).
all=$(dry "$script" all) || fail "DRY_RUN=1 gpu-bench.sh all exited $?"
has "$all" "^\+ .*/attn-bench calibrate --db $tmp/out/attn-bench.db$"
has "$all" "^\+ .*/attn-bench run decode-llama3-8b-64x4096 --db .* --variant paged_decode\.\* --policy confirm$"
has "$all" "^\+ .*/attn-bench run decode-llama3-8b-1x32768 --db .* --timer graph --variant paged_decode\.\* --policy confirm$"
has "$all" "^\+ .*/attn-bench run mixed-chunked-prefill-llama3-8b-decode-part --db .* --variant paged_decode\.\* --policy confirm$"
has "$all" "^\+ .*/attn-bench run prefix-prefill-llama3-8b-8x2048-512-vllm --db .* --variant prefix_prefill\.\* --policy confirm$"
has "$all" "^\+ .*/attn-bench run prefill-phi3-small-dense-causal-4x8192 --db .* --variant flash_fwd\.sm80_mma --policy confirm$"
has "$all" "^\+ .*/attn-bench run tests/measure/data/decode-small-20us.json --db .* --timer graph --repeat-check --variant paged_decode\.\* --policy confirm$"
has "$all" "^\+ .*/attn-bench peers prefill-phi3-small-block-sparse --db .* --variant blocksparse\.\* --policy confirm$"
has "$all" "^\+ .*/attn-tune compare --db .* --workload prefill-dense-d128-4x4096-causal --variant flash_fwd\.\* --variant peer\.\* -o $tmp/out/compare-prefill-dense-d128-4x4096-causal\.md$"
has "$all" "^\+ timeout [0-9]+ python3 \.carry/seed_peers\.py dense_flash$"
[ "$(count "$all" "attn-bench calibrate")" = 1 ] || fail "calibrate should run once for all suites"
[ "$(count "$all" "^\+ .*/attn-bench run prefill-dense-")" = 18 ] || fail "flash_fwd: 18 dense cases"
[ "$(count "$all" "ctest")" = 0 ] || fail "GPU tests run only with tests in STEPS"

# Filters and overrides: PRESETS, VARIANT (not where a step names its own), POLICY, STEPS, ROUNDS.
one=$(PRESETS='prefill-dense-d128-*' VARIANT=flash_fwd.sm90_wgmma POLICY=screen ROUNDS=2 \
  STEPS="tests run" CALIBRATE=0 dry "$script" flash_fwd)
[ "$(count "$one" "^\+ .*/attn-bench run prefill-dense-d128-")" = 12 ] || fail "6 d128 cases x 2 rounds"
[ "$(count "$one" "^\+ .*/attn-bench run prefill-dense-d(64|256)-")" = 0 ] || fail "PRESETS ignored"
has "$one" "^\+ .*/attn-bench run prefill-dense-d128-4x4096 --db .* --variant flash_fwd\.sm90_wgmma --policy screen$"
has "$one" "^\+ ctest --test-dir $build -L gpu --output-on-failure -R FlashFwd$"
[ "$(count "$one" "calibrate|peers|seed_peers")" = 0 ] || fail "STEPS and CALIBRATE=0 ignored"
two=$(VARIANT='blocksparse.sm80_mma' STEPS=run dry "$script" blocksparse)
has "$two" "^\+ .*/attn-bench run prefill-phi3-small-block-sparse --db .* --variant blocksparse\.sm80_mma --policy confirm$"
has "$two" "^\+ .*/attn-bench run prefill-phi3-small-dense-causal-2x16384 --db .* --variant flash_fwd\.sm80_mma --policy confirm$"

# Usage errors: an unknown suite, a PRESETS glob that names no step.
set +e
dry "$script" no_such_family > /dev/null 2>&1
[ $? = 2 ] || fail "an unknown suite should exit 2"
PRESETS='no-such-preset*' dry "$script" paged_decode > /dev/null 2>&1
[ $? = 2 ] || fail "a PRESETS glob that matches nothing should exit 2"
dry "$script" > /dev/null 2>&1
[ $? = 2 ] || fail "no suite should exit 2"
echo "gpu-bench.sh: dry runs as expected"
