#!/usr/bin/env bash
# Two builds side by side on a GPU machine (both carried from the CPU machine), so that a change
# is measured against the tree before it on the same GPU in one call:
#
#   BASE=.carry/base NEW=.carry/new PRESETS="prefill-dense-d64-16x1024 ..." OUT=$OUT \
#     scripts/ab-bench.sh
#
# Each of BASE and NEW is a folder with apps/attn-bench (and the libraries beside it, as a build
# folder has them). Per round every preset runs with both builds, the order alternating from round
# to round so that a drift of the GPU falls on both alike (`attn-bench run --preset P --variant
# VARIANT --policy confirm`: each case verified first), each build with its own JIT cache and
# database; PEERS names sections of .carry/seed_peers.py (e.g. dense_flash: torch's SDPA backends
# on the dense prefill shapes) to run once per round.
# Environment: ROUNDS (default 2), VARIANT (default flash_fwd.sm*), PRESETS (required), PEERS.
# Prints each preset's medians, base / new and their ratio, and leaves OUT/ab.tgz (both
# databases, the runs' logs, the peers' rounds).
set -uo pipefail
: "${PRESETS:?name the presets to compare}"
work=$(mktemp -d)
final=${OUT:-out}
mkdir -p "$final" "$work/base" "$work/new"
declare -A build=([base]="${BASE:-.carry/base}" [new]="${NEW:-.carry/new}")
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv,noheader
date -u +%FT%TZ
"${build[new]}/apps/attn-bench" calibrate --db "$work/new/a.db" > "$work/new/calibrate.txt" 2>&1
tail -n 3 "$work/new/calibrate.txt"
one() {  # side preset
  ATTN_JIT_CACHE_DIR="$work/jit-$1" "${build[$1]}/apps/attn-bench" run --preset "$2" \
    --db "$work/$1/a.db" --variant "${VARIANT:-flash_fwd.sm*}" --policy confirm \
    >> "$work/$1/runs.txt" 2>&1 || echo "$1 $2: attn-bench exited $?"
}
for ((r = 1; r <= ${ROUNDS:-2}; ++r)); do
  echo "== round $r $(date -u +%T)"
  for p in $PRESETS; do
    if ((r % 2)); then one base "$p"; one new "$p"; else one new "$p"; one base "$p"; fi
  done
  if [ -n "${PEERS:-}" ] && [ -f .carry/seed_peers.py ]; then
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 timeout 300 python3 .carry/seed_peers.py $PEERS > "$work/new/peers-$r.txt" 2>&1
    cp "$work/new/peers-$r.txt" "$work/base/peers-$r.txt"
  fi
done
python3 - "$work" <<'PY'
import sqlite3, statistics, sys
def load(side):
    db = sqlite3.connect(f"{sys.argv[1]}/{side}/a.db")
    runs = {}
    for name, variant, us, disposition in db.execute(
            "SELECT w.name, m.variant, m.median_us, m.disposition FROM measurements m "
            "JOIN workloads w ON w.id = m.workload_id ORDER BY m.id"):
        runs.setdefault((name, variant), []).append((us, disposition))
    return runs
base, new = load("base"), load("new")
for key, rows in base.items():
    b = [us for us, d in rows if d == "passed"]
    n = [us for us, d in new.get(key, []) if d == "passed"]
    bad = {d for _, d in rows + new.get(key, []) if d != "passed"}
    ratio = f"{statistics.median(b) / statistics.median(n):.3f}" if b and n else "-"
    print(f"{key[0]} {key[1]}: base {' / '.join(f'{x:.2f}' for x in b)} us, "
          f"new {' / '.join(f'{x:.2f}' for x in n)} us, base / new {ratio}"
          + (f" (not passed: {', '.join(sorted(bad))})" if bad else ""))
PY
tar czf "$final/ab.tgz" -C "$work" base new
