"""What the peer runner's tests share: the attn-bench binary ($ATTN_BENCH_BINARY, set by CTest),
small workloads, dumps made by the real `attn-bench workload dump`, and numpy attention over a
dump's gathered keys and values (the tests' dense reference)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS_DIR = os.path.dirname(HERE)
RUNNER = os.path.join(PEERS_DIR, "run_peers.py")
sys.path.insert(0, PEERS_DIR)

BINARY = os.environ.get("ATTN_BENCH_BINARY", "")
TUNE_BINARY = os.environ.get("ATTN_TUNE_BINARY", "")


def require_binary(test):
    if not BINARY or not os.path.exists(BINARY):
        raise RuntimeError("set ATTN_BENCH_BINARY to the attn-bench binary (CTest does)")


def workload(name, *, layout="NHD", allocation="shuffled", kv_dtype=None, kv_scale=None,
             sequences=None, mask=None, q_heads=4, kv_heads=2, head_dim=64, v_head_dim=None,
             page_size=8, sliding_window=None, soft_cap=None, seed=7):
    model = {"num_q_heads": q_heads, "num_kv_heads": kv_heads, "head_dim": head_dim,
             "dtype": "bf16"}
    if v_head_dim:
        model["v_head_dim"] = v_head_dim
    if kv_dtype:
        model["kv_dtype"] = kv_dtype
    if kv_scale:
        model["kv_scale"] = kv_scale
    if sliding_window:
        model["sliding_window"] = sliding_window
    if soft_cap:
        model["logits_soft_cap"] = soft_cap
    spec = {"schema_version": 2, "name": name, "model": model,
            "kv_cache": {"page_size": page_size, "layout": layout, "allocation": allocation},
            "sequences": sequences or [{"context_len": 5, "query_len": 1, "count": 1},
                                       {"context_len": 20, "query_len": 1, "count": 1},
                                       {"context_len": 33, "query_len": 1, "count": 1}],
            "seed": seed}
    if mask:
        spec["mask"] = mask
    return spec


def run(args, check=True, env=None):
    merged = dict(os.environ)
    merged.update(env or {})
    result = subprocess.run(args, capture_output=True, text=True, env=merged)
    if check and result.returncode != 0:
        raise AssertionError(f"{args} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


class Dumps:
    """A temporary folder of workloads and their dumps."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="attn-peers-test-")

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def write_workload(self, spec):
        path = os.path.join(self.root, spec["name"] + ".json")
        with open(path, "w") as f:
            json.dump(spec, f)
        return path

    def dump(self, spec, extra=()):
        path = self.write_workload(spec)
        out = os.path.join(self.root, spec["name"])
        run([BINARY, "workload", "dump", path, "--out", out, "--threads", "2", *extra])
        return out


def numpy_attention(b):
    """float64 attention over each sequence's gathered K/V with b.visible(); soft-cap and sinks
    as kernels/reference/paged_attention_reference.hpp defines them. [total_q, num_q_heads,
    v_head_dim]: the logits use Q and K (head_dim wide), the output V (v_head_dim wide)."""
    q = b.q_float().astype(np.float64)
    k_pool, v_pool = b.pool_nhd("k"), b.pool_nhd("v")
    sinks = b.float_array("sink_logits").astype(np.float64) if b.has_sinks else None
    layout = b.block_layout_dense() if b.block_sparse else None
    group = b.num_q_heads // b.num_kv_heads
    out = np.zeros((b.total_q, b.num_q_heads, b.v_head_dim))
    for s in range(b.num_seqs):
        k = b.gather(k_pool, s).astype(np.float64)
        v = b.gather(v_pool, s).astype(np.float64)
        rows = slice(b.cu_seqlens_q[s], b.cu_seqlens_q[s + 1])
        for h in range(b.num_q_heads):
            logits = b.softmax_scale * q[rows, h] @ k[:, h // group].T
            if b.logits_soft_cap > 0:
                logits = b.logits_soft_cap * np.tanh(logits / b.logits_soft_cap)
            vis = b.visible(s, h, layout)
            logits = np.where(vis, logits, -np.inf)
            top = np.max(logits, axis=1, keepdims=True, initial=-np.inf)
            if sinks is not None:
                top = np.maximum(top, sinks[h])
            top = np.where(np.isfinite(top), top, 0.0)
            p = np.exp(logits - top)
            denominator = p.sum(axis=1, keepdims=True)
            if sinks is not None:
                denominator = denominator + np.exp(sinks[h] - top)
            with np.errstate(invalid="ignore", divide="ignore"):
                o = (p @ v[:, h // group]) / denominator
            out[rows, h] = np.where(denominator > 0, o, 0.0)
    return out
