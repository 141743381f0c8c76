#!/usr/bin/env bash
# Issue 6's mixed chunked-prefill case on a GPU machine, in one call (build carried from the CPU
# machine): the mixed batch (preset mixed-chunked-prefill-llama3-8b: 56 decode sequences and 6
# prefill chunks) with every prefix_prefill variant, against the same batch run as two separate
# kinds, its decode part with every paged_decode variant and its prefill part with every
# prefix_prefill variant (scripts/workloads/mixed-chunked-prefill-llama3-8b-{decode,prefill}-part.json,
# the same context lengths). Prints each run's rows, then the best mixed time against the sum of
# the two parts' best times.
#
#   OUT=$OUT scripts/mixed-batch-bench.sh
# Environment: BUILD (default build), OUT (default out/), POLICY (default confirm).
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
db="$out/mixed.db"
status=0
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $("$bench" --version)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
run() {  # workload variant-glob
  echo "== attn-bench run $1 --variant '$2' --policy ${POLICY:-confirm}"
  "$bench" run "$1" --variant "$2" --policy "${POLICY:-confirm}" --db "$db" > "$out/run.txt" 2>&1 ||
    status=1
  grep -E "^(prefix_prefill|paged_decode)\.|rror" "$out/run.txt"
}
run mixed-chunked-prefill-llama3-8b 'prefix_prefill.*'
run scripts/workloads/mixed-chunked-prefill-llama3-8b-decode-part.json 'paged_decode.*'
run scripts/workloads/mixed-chunked-prefill-llama3-8b-prefill-part.json 'prefix_prefill.*'
python3 - "$db" <<'PY'
import sqlite3, sys
best = dict(sqlite3.connect(sys.argv[1]).execute(
    "SELECT w.name, min(m.median_us) FROM measurements m JOIN workloads w ON w.id = m.workload_id "
    "WHERE m.disposition = 'passed' AND m.backend = 'cuda' GROUP BY w.name"))
mixed = best.get("mixed-chunked-prefill-llama3-8b")
parts = [best.get("mixed-chunked-prefill-llama3-8b-" + p) for p in ("decode-part", "prefill-part")]
if mixed is None or None in parts:
    sys.exit(f"missing a passed CUDA measurement: {best}")
print(f"mixed batch, best variant: {mixed:.2f} us; separately: decode {parts[0]:.2f} + prefill "
      f"{parts[1]:.2f} = {sum(parts):.2f} us; mixed / separate = {mixed / sum(parts):.3f}")
PY
exit $status
