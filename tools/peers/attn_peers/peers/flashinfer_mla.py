"""FlashInfer's multi-head latent attention decode: peer.flashinfer.mla.

flashinfer.mla.BatchMLAPagedAttentionWrapper computes the absorbed form (docs/mla-decode.md) from
two paged caches: the compressed rows c [pages, page_size, kv_lora_rank] and the rotary keys
k_rope [pages, page_size, qk_rope_head_dim], with Q split the same way (q_nope, q_pe). Our latent
pool holds both in one row [c | k_rope]; the two caches are made from it (copies, outside the
timing), with our page table as its kv_indptr / kv_indices and our kv_lens as its kv_len_arr. Q is
split likewise. Several query tokens per sequence (speculative decoding) go through qo_indptr with
causal=True (bottom-right aligned, as ours). plan() runs once, outside the timing; a sample is one
run() into a preallocated output that was poisoned with NaN before the verified call.

Declined: an fp8 latent cache (this peer plans 16-bit caches only), zero-length sequences,
soft-cap, sliding windows and sinks (not part of the wrapper). FlashInfer is optional: without it
(or without its MLA wrapper) the peer is skipped; it compiles its kernels at first use (nvcc and
ninja on the machine), in prepare, not in a sample.
"""
import importlib

import numpy as np

from . import torch_batch
from .base import Case, Peer

WORKSPACE_BYTES = 128 * 1024 * 1024


def mla_wrapper_class():
    """flashinfer.mla.BatchMLAPagedAttentionWrapper, or None where it does not import."""
    try:
        module = importlib.import_module("flashinfer.mla")
    except Exception:
        return None
    return getattr(module, "BatchMLAPagedAttentionWrapper", None)


class FlashInferMla(Peer):
    name = "peer.flashinfer.mla"
    library = "flashinfer"
    latent = True
    summary = ("FlashInfer BatchMLAPagedAttentionWrapper (absorbed MLA) over our page table, the "
               "latent pool split into its compressed and rotary caches")

    def unavailable(self, env):
        reason = env.torch_unavailable()
        if reason:
            return reason
        try:
            importlib.import_module("flashinfer")
        except Exception as e:
            return f"flashinfer is not installed ({type(e).__name__}: {str(e).splitlines()[0][:160]})"
        if mla_wrapper_class() is None:
            return "this flashinfer has no flashinfer.mla.BatchMLAPagedAttentionWrapper"
        return None

    def declines(self, batch):
        if not batch.latent:
            return "standard attention: this peer runs multi-head latent attention only"
        if batch.dtype not in ("bf16", "fp16"):
            return f"dtype {batch.dtype}: bf16 or fp16 queries only"
        if batch.kv_dtype != batch.dtype:
            return (f"latent cache {batch.kv_dtype}: this peer plans a cache of Q's dtype "
                    f"({batch.dtype}) only")
        if np.any(batch.kv_lens == 0):
            return "a zero-length sequence"
        if batch.logits_soft_cap > 0:
            return "soft-cap: not part of the MLA wrapper"
        if batch.sliding_window > 0:
            return "sliding window: not part of the MLA wrapper"
        if batch.has_sinks:
            return "sinks: not part of the MLA wrapper"
        if batch.total_q == 0:
            return "no query tokens"
        return None

    def prepare(self, batch, env):
        torch = env.torch
        rank, rope = batch.kv_lora_rank, batch.qk_rope_head_dim
        dtype = torch_batch.torch_dtype(torch, batch.dtype)
        q = torch_batch.q(batch, env)  # [total_q, heads, rank + rope]
        q_nope, q_pe = q[..., :rank].contiguous(), q[..., rank:].contiguous()
        pool = torch_batch.latent_pool(batch, env)  # [pages, page_size, rank + rope]
        ckv, kpe = pool[..., :rank].contiguous(), pool[..., rank:].contiguous()
        i32 = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.int32)).cuda()
        qo_indptr, kv_indptr = i32(batch.cu_seqlens_q), i32(batch.page_indptr)
        kv_indices, kv_lens = i32(batch.page_indices), i32(batch.kv_lens)

        workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device="cuda")
        wrapper = mla_wrapper_class()(workspace)
        wrapper.plan(qo_indptr, kv_indptr, kv_indices, kv_lens, batch.num_q_heads, rank, rope,
                     batch.page_size, bool(batch.causal), batch.softmax_scale, dtype, dtype)
        out = torch_batch.poisoned_output(batch, env)

        def call():
            wrapper.run(q_nope, q_pe, ckv, kpe, out=out)

        flashinfer = importlib.import_module("flashinfer")
        config = {"library": f"flashinfer {getattr(flashinfer, '__version__', '')}",
                  "torch": torch.__version__, "calls_per_sample": 1,
                  "wrapper": "flashinfer.mla.BatchMLAPagedAttentionWrapper",
                  "causal": bool(batch.causal),
                  "kv": ("paged: our page table; the latent pool split into ckv [pages, page, "
                         f"{rank}] and kpe [pages, page, {rope}] outside the timing")}
        return Case(call, lambda: torch_batch.to_numpy(out), config)


def peers():
    return [FlashInferMla()]
