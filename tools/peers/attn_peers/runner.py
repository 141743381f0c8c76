"""The loop: for each peer chosen, say why it is skipped, or prepare it, run it once on the batch,
verify the output against the dump's reference, and time it if it passed; write one JSON line per
peer to the results file as soon as it is known (a crash keeps what came before).

The results file (JSON lines, docs/peers.md):
  line 1   {"kind": "header", "format": "attn-bench peer results", "format_version": 1,
            "spec_hash", "spec", "workload", "dump", "output_dtype", "tolerance", "reference",
            "policy": {...}, "device": {"kind": "gpu"|"cpu", ...}, "runner": {...}, "started_at"}
  then     {"kind": "peer", "variant": "peer.<library>.<kernel>", "library", "disposition":
            "passed"|"incorrect"|"unsupported"|"launch_failed", "reason", "config": {...},
            "verification": {...} or null, "timing": {"timer", "samples_us", "warmup_samples",
            "stop_reason", "noise"} or null}
`attn-bench peers import FILE` (or `attn-bench peers WORKLOAD`, which runs this) records them.
"""
import datetime
import fnmatch
import json
import math
import platform
import sys
import traceback

from . import timing, verify
from .peers import all_peers
from .peers.base import Environment, module_version

RESULTS_FORMAT = "attn-bench peer results"


def select(peers, patterns):
    """The peers whose name matches one of the comma-separated globs (all when empty). Raises
    ValueError naming a glob that matches none."""
    if not patterns:
        return list(peers)
    globs = [p.strip() for p in patterns.split(",") if p.strip()]
    chosen = []
    for g in globs:
        matched = [p for p in peers if fnmatch.fnmatchcase(p.name, g)]
        if not matched:
            raise ValueError(f"--peers {g!r} matches no peer (peers: "
                             + ", ".join(p.name for p in peers) + ")")
        chosen += [p for p in matched if p not in chosen]
    return [p for p in peers if p in chosen]


def select_units(peers, units):
    """The peers whose run (Peer.unit) is one of `units`, in the runner's order. Raises ValueError
    naming a unit that no peer has."""
    known = {p.unit for p in peers}
    unknown = [u for u in units if u not in known]
    if unknown:
        raise ValueError(f"--units names runs no peer has: {', '.join(unknown)}")
    wanted = set(units)
    return [p for p in peers if p.unit in wanted]


class ResultsFile:
    def __init__(self, path, header):
        self.path = path
        self.file = open(path, "w", encoding="utf-8")
        self.write(header)

    def write(self, record):
        self.file.write(json.dumps(record, allow_nan=False, sort_keys=True) + "\n")
        self.file.flush()

    def close(self):
        self.file.close()


def _first_line(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:300] if text else ''}"


def run_peer(peer, batch, env, policy, log=print):
    """One peer on the batch: the record the results file holds for it."""
    record = {"kind": "peer", "variant": peer.name, "library": peer.library, "disposition": None,
              "reason": "", "config": {}, "verification": None, "timing": None}
    if getattr(peer, "config_key", ""):  # a user module's peer: one record per config
        record["config_key"] = peer.config_key

    def skipped(reason):
        log(f"skipped: {peer.unit}: {reason}")
        record.update(disposition="unsupported", reason=reason)
        return record

    reason = peer.unavailable(env)
    if reason:
        return skipped(reason)
    reason = peer.declines(batch)
    if reason:
        return skipped(reason)
    log(f"running: {peer.unit}")
    sync = (lambda: env.torch.cuda.synchronize()) if peer.device == "cuda" else (lambda: None)
    try:
        case = peer.prepare(batch, env)
        record["config"] = case.config
        case.call()
        sync()
        output = verify.to_host(case.output())
    except Exception as e:  # a peer's failure is its row, never the runner's end
        log(f"failed: {peer.unit}: {_first_line(e)}")
        log("".join(traceback.format_exception(type(e), e, e.__traceback__))[-2000:])
        record.update(disposition="launch_failed", reason=_first_line(e))
        return record
    problem = verify.shape_problem(output, batch.output_shape)
    if problem:  # e.g. a peer that wrote head_dim wide rows where V is narrower
        log(f"incorrect: {peer.name}: {problem}")
        record.update(disposition="incorrect", reason=problem)
        return record
    v = verify.verify(output, batch.reference, batch.tolerance,
                      batch.index.get("reference_oracle", "cpu_reference"))
    # JSON has no inf: an infinite error (a zero reference row, a non-zero output) is written null.
    record["verification"] = {k: (None if isinstance(x, float) and not math.isfinite(x) else x)
                              for k, x in v.items()}
    if not verify.passed(v):
        log(f"incorrect: {peer.unit}: {verify.describe(v)}")
        record.update(disposition="incorrect", reason=verify.describe(v))
        return record
    timer = timing.CpuTimer() if peer.device == "cpu" else timing.EventTimer(env.torch, policy["flush_l2"])

    def timed():
        case.call()

    try:
        record["timing"] = timing.measure(timed, policy, timer)
        sync()
    except Exception as e:
        log(f"failed: {peer.unit} while timing: {_first_line(e)}")
        record.update(disposition="launch_failed", reason="while timing: " + _first_line(e))
        return record
    t = record["timing"]
    log(f"passed: {peer.unit}: median {timing.median(t['samples_us']):.2f} us over "
        f"{len(t['samples_us'])} samples ({t['stop_reason']}), {verify.describe(v)}")
    record["disposition"] = "passed"
    return record


def runner_versions():
    versions = {"python": platform.python_version(), "numpy": module_version("numpy")}
    for name in ("torch", "triton", "flashinfer"):
        v = module_version(name)
        if v:
            versions[name] = v
    return versions


def run(batch, out_path, peers, policy, env, log=print):
    """Runs `peers` on `batch`; writes the results file; returns the records."""
    header = {"kind": "header", "format": RESULTS_FORMAT, "format_version": 1,
              "spec_hash": batch.spec_hash, "spec": batch.spec, "workload": batch.name,
              "dump": batch.directory, "output_dtype": batch.dtype, "tolerance": batch.tolerance,
              "reference": batch.index.get("reference_oracle", "cpu_reference"),
              "policy": {k: policy[k] for k in timing.POLICY_FIELDS},
              "device": env.device_record(),
              "runner": runner_versions(),
              "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    results = ResultsFile(out_path, header)
    records = []
    try:
        for peer in peers:
            record = run_peer(peer, batch, env, policy, log)
            records.append(record)
            results.write(record)
            env.release()
    finally:
        results.close()
    return records
