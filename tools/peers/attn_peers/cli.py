"""python3 tools/peers/run_peers.py DUMP_DIR --out RESULTS.jsonl [options]

Exit codes (as attn-bench's, docs/exit-codes.md): 0 every chosen peer has its line in the results
file (skipped, incorrect and failed peers included); 2 usage; 3 the dump is missing, malformed,
its bytes do not match its index, or it has no reference output, or a --peer-module cannot be
used; 4 the results file cannot be written.
"""
import argparse
import json
import os
import sys

from . import batch as batch_module
from . import runner, timing, user_modules
from .peers import all_peers
from .peers.base import Environment


def parser():
    p = argparse.ArgumentParser(
        prog="run_peers.py",
        description="Run other libraries' attention (torch SDPA, FlexAttention, FlashInfer) on a "
                    "batch dumped by `attn-bench workload dump`, verify each against the dump's "
                    "reference output and time it under attn-bench's policy. docs/peers.md")
    p.add_argument("dump", nargs="?", help="folder with batch.json and batch.safetensors")
    p.add_argument("--out", help="results file to write (JSON lines)")
    p.add_argument("--peers", default="", help="comma-separated globs over peer names "
                   "(default: every peer)")
    p.add_argument("--policy", default="confirm", help="screen or confirm (default)")
    p.add_argument("--policy-json", default="", help="a whole policy as JSON (attn-bench peers "
                   "passes its own, overrides applied); wins over --policy")
    p.add_argument("--device", default="0", help="CUDA ordinal, or 'cpu' (only the CPU test peers run)")
    p.add_argument("--test-peers", action="store_true",
                   help="add the CPU test peers (peer.test.*); also ATTN_PEERS_TEST_PEERS=1")
    p.add_argument("--no-hash-check", action="store_true",
                   help="do not recompute the SHA-256 of every tensor")
    p.add_argument("--peer-module", action="append", default=[], metavar="FILE.py",
                   help="add the peers a Python module of yours declares (repeatable; "
                        "docs/user-kernels.md)")
    p.add_argument("--units", default="", metavar="FILE",
                   help="run exactly the runs this file names, one per line, as --list prints "
                        "them (a peer's name, or name@config for one config of a module's peer); "
                        "wins over --peers")
    p.add_argument("--list-json", action="store_true",
                   help="list the runs as one JSON array (unit, name, device, config, summary) "
                        "and exit; attn-bench and attn-tune read it")
    p.add_argument("--list", action="store_true",
                   help="list the peers and exit: one line per run (a module peer's config is "
                        "name@config), then its summary")
    return p


def _read_units(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [line.strip() for line in f if line.strip()]
    except OSError as e:
        raise ValueError(f"--units {path}: {e}") from e


def main(argv=None):
    args = parser().parse_args(argv)
    include_test = args.test_peers or os.environ.get("ATTN_PEERS_TEST_PEERS") == "1"
    peers = all_peers(include_test)
    try:
        for path in args.peer_module:
            peers += user_modules.load(path)
    except user_modules.ModuleError as e:
        print(f"run_peers.py: invalid input: {e}", file=sys.stderr)
        return 3
    if args.list_json:
        print(json.dumps([{"unit": p.unit, "name": p.name, "device": p.device,
                           "config": dict(getattr(p, "config_values", {}) or {}),
                           "summary": p.summary} for p in peers]))
        return 0
    if args.list:
        for peer in peers:
            print(f"{peer.unit:28s} {peer.summary}")
        return 0
    if not args.dump or not args.out:
        print("run_peers.py: usage: DUMP_DIR and --out RESULTS are required", file=sys.stderr)
        return 2
    try:
        chosen = (runner.select_units(peers, _read_units(args.units)) if args.units
                  else runner.select(peers, args.peers))
        policy = timing.policy_from(json.loads(args.policy_json) if args.policy_json else args.policy)
    except (ValueError, json.JSONDecodeError) as e:
        print(f"run_peers.py: usage: {e}", file=sys.stderr)
        return 2
    if args.device == "cpu":
        env = Environment(0, want_cuda=False)
    else:
        try:
            env = Environment(int(args.device))
        except ValueError:
            print(f"run_peers.py: usage: --device {args.device!r}: an ordinal or 'cpu'", file=sys.stderr)
            return 2
    try:
        batch = batch_module.load(args.dump, check_hashes=not args.no_hash_check)
    except (batch_module.BatchError, OSError) as e:
        print(f"run_peers.py: invalid input: {e}", file=sys.stderr)
        return 3
    if batch.reference is None or batch.tolerance is None:
        print(f"run_peers.py: invalid input: {args.dump}: the dump has no reference_out or no "
              "verification tolerance; dump it again without --no-reference", file=sys.stderr)
        return 3
    print(f"peers     {batch.name} ({batch.spec_hash[:12]}): {batch.num_seqs} sequences, "
          f"{batch.total_q} query tokens, {batch.total_kv} keys; "
          f"{', '.join(batch.features()) or 'no masks'}", flush=True)
    try:
        records = runner.run(batch, args.out, chosen, policy, env,
                             log=lambda line: print(line, flush=True))
    except OSError as e:
        print(f"run_peers.py: environment: cannot write {args.out}: {e}", file=sys.stderr)
        return 4
    counts = {}
    for r in records:
        counts[r["disposition"]] = counts.get(r["disposition"], 0) + 1
    print("peers     " + ", ".join(f"{n} {d}" for d, n in sorted(counts.items()))
          + f"; results in {args.out}", flush=True)
    return 0
