#!/usr/bin/env bash
# On a GPU machine, over a carried build (docs/gpu-testing.md): compute-sanitizer's memcheck and
# racecheck over GPU tests of small workloads (one tile, each feature, every family), then the
# faulting-variant sweep (TuneFaultsGpu). Prints one summary line per tool with the sanitizer's own
# counts, for docs/reliability.md; logs go to $OUT.
#
#   OUT=$OUT scripts/gpu-sanitize.sh                     # carry: .carry (carry-build.sh)
#   FILTER='Sm80SimtGpu.*' TOOLS=memcheck scripts/gpu-sanitize.sh
#
# Environment: BUILD, OUT (scripts/gpu-env.sh), FILTER (a --gtest_filter; default below), TOOLS
# (default "memcheck racecheck"), LIMIT (seconds per tool, default 200).
# Exit status: non-zero when a tool reported an error or a test failed.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
tests="$build/tests/attn_gpu_tests"
[ -x "$tests" ] || { echo "gpu-sanitize: $tests is missing: build first and carry $build" >&2; exit 4; }
sanitizer="${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer"
[ -x "$sanitizer" ] || sanitizer=$(command -v compute-sanitizer || true)
[ -n "$sanitizer" ] || { echo "gpu-sanitize: compute-sanitizer not found (set CUDA_HOME)" >&2; exit 4; }

# Small cases of every family: features one at a time, one tile, the diagonal, the fill and the
# naive reference. (The tests that start worker processes are left to the plain run below.)
default_filter='Sm80SimtGpu.EachFeatureMatchesTheReference'
default_filter+=':Variants/Sm80MmaGpu.EachFeatureWithOneAndManySplitsMatchesTheReference/*'
default_filter+=':PrefixPrefillMmaGpu.SingleTokenAndEmptyContextSequencesMatchTheReference'
default_filter+=':PrefixPrefillSm90Gpu.OneTileMatchesTheReference'
default_filter+=':FlashFwdSm80Gpu.CausalDiagonalAlignedToTheBottomRight'
default_filter+=':FlashFwdSm90Gpu.OneTileMatchesTheReference'
default_filter+=':BlockSparseSm90Gpu.OneTileMatchesTheReference'
default_filter+=':BlockSparseDecodeGpu.EveryAcceptedConfigMatchesTheReference'
default_filter+=':BatchFillGpu.DeviceFillEqualsHostFillByteForByte'
default_filter+=':GpuReference.MatchesTheCpuReferenceOnEveryFeatureBatch'
filter="${FILTER:-$default_filter}"
limit="${LIMIT:-200}"
status=0
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $("$bench" --version); $("$sanitizer" --version | tail -1)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
for tool in ${TOOLS:-memcheck racecheck}; do
  log="$out/sanitize-$tool.log"
  start=$(date +%s)
  timeout "$limit" "$sanitizer" --tool "$tool" --error-exitcode 97 --print-limit 50 \
    "$tests" --gtest_filter="$filter" >"$log" 2>&1
  rc=$?
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
  tests_line=$(grep -E "^\[  PASSED  \]|^\[  FAILED  \]|tests? ran" "$log" | tr '\n' ' ')
  echo "$tool: exit $rc in $(($(date +%s) - start))s: ${summary:-no summary (see $log)}; $tests_line"
  [ "$rc" -eq 0 ] || status=1
done
echo "== the faulting sweep (TuneFaultsGpu, without a sanitizer: its workers crash on purpose)"
"$tests" --gtest_filter='TuneFaultsGpu.*' >"$out/tune-faults.log" 2>&1 || status=1
grep -E "^\[  PASSED  \]|^\[  FAILED  \]|SKIPPED \]" "$out/tune-faults.log" | tail -3
echo "workers left: $(pgrep -fc 'attn-tune worker' || true)"
exit $status
