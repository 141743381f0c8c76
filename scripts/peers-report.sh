#!/usr/bin/env bash
# Issue 12's acceptance run, on a GPU machine over a carried build (docs/peers.md): the device's
# ceilings, then `attn-bench peers` on the decode, prefix-prefill, block-sparse and flash_fwd
# presets into one database, then `attn-tune report` of it and one `attn-tune compare` of our
# family against the peers per preset. Everything goes to $OUT (default out/).
#   OUT=$OUT scripts/peers-report.sh [PRESET ...]
#   DB=/tmp/peers.db keeps the database outside $OUT (several device calls, one database);
#   PEERS_ARGS="--policy screen" (or --peers ..., --python ...) is passed to each `attn-bench peers`.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
BIN=${BIN:-build/apps}
DB=${DB:-$OUT/peers.db}
export PYTHONUNBUFFERED=1
presets=("$@")
if [ ${#presets[@]} -eq 0 ]; then
  presets=(decode-llama3-8b-64x4096 prefix-prefill-llama3-8b-8x2048-512
           prefill-phi3-small-block-sparse prefill-dense-d128-4x4096-causal)
fi
family_of() {
  case "$1" in
    decode-*) echo paged_decode ;;
    prefix-prefill-*|mixed-*) echo prefix_prefill ;;
    *block-sparse*) echo blocksparse ;;
    *) echo flash_fwd ;;
  esac
}

{
  nvidia-smi || true
  python3 -c 'import torch, numpy; print("torch", torch.__version__, "cuda", torch.version.cuda, "numpy", numpy.__version__)' || true
  python3 -c 'import flashinfer; print("flashinfer", flashinfer.__version__)' || echo "flashinfer: not installed"
  if [ "${CALIBRATE:-1}" = 1 ]; then "$BIN/attn-bench" calibrate --db "$DB"; fi
  "$BIN/attn-bench" devices --db "$DB"
} 2>&1 | tee "$OUT/peers-summary.txt"

status=0
for p in "${presets[@]}"; do
  echo "=== attn-bench peers $p" | tee -a "$OUT/peers-summary.txt"
  # shellcheck disable=SC2086
  "$BIN/attn-bench" peers "$p" --db "$DB" ${PEERS_ARGS:-} 2>&1 | tee "$OUT/peers-$p.log"
  code=${PIPESTATUS[0]}
  echo "=== exit $code" | tee -a "$OUT/peers-summary.txt"
  [ "$code" -eq 0 ] || status=$code
done

for p in "${presets[@]}"; do
  "$BIN/attn-tune" compare --db "$DB" --workload "$p" --variant "$(family_of "$p").*" \
    --variant 'peer.*' -o "$OUT/compare-$p.md" 2>&1 | tee -a "$OUT/peers-summary.txt"
done
"$BIN/attn-tune" report --db "$DB" -o "$OUT/report" 2>&1 | tee -a "$OUT/peers-summary.txt"
[ "$DB" = "$OUT/peers.db" ] || cp "$DB" "$OUT/peers.db"
exit "$status"
