#!/usr/bin/env python3
"""The summary table of a scripts/gpu-bench.sh run, from its database (python3's sqlite3: the GPU
machine has no sqlite3 command line).

    python3 scripts/bench/summary.py DB [--steps STEPS_TSV]

One row per workload, variant, config and timer, workloads in the order they were first measured:
the median of the passed measurements' medians (over the rounds, each round's beside it when there
were several), TFLOP/s and GB/s of that median, and the row's time over the best of our variants
on the workload (peers are the variants named peer.*). A row with no passed measurement shows its
last disposition and reason. Then the A/A repeat checks, if any, and every step that failed
(STEPS_TSV: one "exit status<TAB>command" line per step, written by gpu-bench.sh).
"""
import argparse
import sqlite3
import statistics
import sys


def rows_of(db):
    """{workload: {(variant, config_key, timer): [measurement dicts in order]}}, in first-seen order."""
    query = (
        "SELECT w.name, m.variant, m.config_key, coalesce(m.timer, ''), m.disposition, m.reason, "
        "m.median_us, m.tflops, m.gbps FROM measurements m JOIN workloads w ON w.id = m.workload_id "
        "ORDER BY m.id")
    out = {}
    for name, variant, config, timer, disposition, reason, us, tflops, gbps in db.execute(query):
        out.setdefault(name, {}).setdefault((variant, config, timer), []).append(
            dict(disposition=disposition, reason=reason, us=us, tflops=tflops, gbps=gbps))
    return out


def is_peer(variant):
    return variant.startswith("peer.")


def number(x, places):
    return "" if x is None else f"{x:.{places}f}"


def table(db):
    lines = ["| workload | variant | config | timer | median µs (rounds) | TFLOP/s | GB/s | "
             "vs our best |", "|---|---|---|---|---:|---:|---:|---:|"]
    for workload, cases in rows_of(db).items():
        medians = {}
        for key, ms in cases.items():
            passed = [m for m in ms if m["disposition"] == "passed" and m["us"] is not None]
            if passed:
                medians[key] = (statistics.median(m["us"] for m in passed), passed)
        ours = [us for (variant, _, _), (us, _) in medians.items() if not is_peer(variant)]
        best = min(ours) if ours else None
        for key, ms in cases.items():
            variant, config, timer = key
            if key not in medians:
                last = ms[-1]
                reason = last["reason"].replace("|", "/")[:80]
                lines.append(f"| {workload} | {variant} | {config} | {timer} | "
                             f"{last['disposition']}: {reason} | | | |")
                continue
            us, passed = medians[key]
            rounds = ""
            if len(passed) > 1:
                rounds = " (" + " / ".join(f"{m['us']:.2f}" for m in passed) + ")"
            tflops = statistics.median(m["tflops"] for m in passed if m["tflops"] is not None) \
                if any(m["tflops"] is not None for m in passed) else None
            gbps = statistics.median(m["gbps"] for m in passed if m["gbps"] is not None) \
                if any(m["gbps"] is not None for m in passed) else None
            versus = "best" if best is not None and us == best and not is_peer(variant) else (
                f"{us / best:.3f}x" if best else "")
            lines.append(f"| {workload} | {variant} | {config} | {timer} | {us:.2f}{rounds} | "
                         f"{number(tflops, 1)} | {number(gbps, 1)} | {versus} |")
    return lines


def repeat_checks(db):
    try:
        rows = db.execute(
            "SELECT w.name, m1.variant, coalesce(m1.timer, ''), m1.median_us, m2.median_us, "
            "r.relative_difference, r.verdict FROM repeat_checks r "
            "JOIN measurements m1 ON m1.id = r.first_measurement_id "
            "JOIN measurements m2 ON m2.id = r.second_measurement_id "
            "JOIN workloads w ON w.id = m1.workload_id ORDER BY r.id").fetchall()
    except sqlite3.OperationalError:  # a database from before the repeat checks
        return []
    if not rows:
        return []
    lines = ["", "| A/A repeat check | variant | timer | first µs | second µs | difference | "
             "verdict |", "|---|---|---|---:|---:|---:|---|"]
    for name, variant, timer, first, second, difference, verdict in rows:
        lines.append(f"| {name} | {variant} | {timer} | {first:.2f} | {second:.2f} | "
                     f"{100 * difference:+.3f}% | {verdict} |")
    return lines


def failed_steps(path):
    if not path:
        return []
    failed = []
    with open(path) as f:
        for line in f:
            status, _, command = line.rstrip("\n").partition("\t")
            if status != "0":
                failed.append(f"- exit {status}: `{command}`")
    return ["", "Failed steps:"] + failed if failed else []


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--steps", help="gpu-bench.sh's steps.tsv")
    args = parser.parse_args()
    try:
        db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
        lines = table(db) + repeat_checks(db)
    except sqlite3.Error as e:  # no database (every step failed before writing one), or not ours
        lines = [f"summary: {args.db}: {e}"]
    print("\n".join(lines + failed_steps(args.steps)))


if __name__ == "__main__":
    main()
