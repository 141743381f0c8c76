"""FlashInfer's paged-KV wrappers, reading our pool and our page table (the dump's CSR
page_indptr / page_indices / last_page_len are FlashInfer's paged_kv_indptr / indices /
last_page_len):

peer.flashinfer.decode   BatchDecodeWithPagedKVCacheWrapper (decode batches: one query token per
                         sequence); use_tensor_cores when the GQA group is 4 or more, as
                         FlashInfer advises, or where its CUDA-core module fails to build
peer.flashinfer.prefill  BatchPrefillWithPagedKVCacheWrapper (batches with more query tokens):
                         causal (FlashInfer aligns it bottom-right, as ours), sliding window
                         (window_left = w - 1), soft-cap, and explicit masks (our per-sequence
                         (query_len, kv_len) grids, flattened, are its custom_mask)

The pool is used in place: NHD and HND are FlashInfer's own layouts; vLLM's is declined. fp8 KV is
passed as float8_e4m3fn with the per-tensor k_scale / v_scale (per-head scales are declined).
plan() runs once, outside the timing; a sample is one run() into a preallocated output that was
poisoned with NaN before the verified call. Declined: sinks, block-sparse layouts (FlashInfer's
block-sparse wrappers take one pattern per KV head, ours are per q head with a token-level causal
diagonal), zero-length sequences.
FlashInfer is optional: without it both are skipped. It compiles its kernels at first use
(nvcc and ninja on the machine), which happens in prepare, not in a sample.
A V head dim narrower than Q/K's (DeepSeek's 192/128) is planned with head_dim_vo, which newer
FlashInfer versions take in plan(); a wrapper whose installed plan() has no head_dim_vo
parameter declines such a batch, naming it.
"""
import importlib
import inspect

import numpy as np

from . import torch_batch
from .base import Case, Peer

WORKSPACE_BYTES = 256 * 1024 * 1024


def plan_parameters(wrapper_name):
    """The parameter names of the installed flashinfer.<wrapper_name>.plan, or None when
    flashinfer does not import here or has no such wrapper."""
    try:
        flashinfer = importlib.import_module("flashinfer")
    except Exception:
        return None
    wrapper = getattr(flashinfer, wrapper_name, None)
    plan = getattr(wrapper, "plan", None)
    if plan is None:
        return None
    try:
        return set(inspect.signature(plan).parameters)
    except (TypeError, ValueError):  # a signature Python cannot read (a compiled function)
        return None


def narrow_v_declined(wrapper_name, batch):
    """None when the installed wrapper's plan() takes head_dim_vo, else why the narrower V is
    declined."""
    widths = f"V head dim {batch.v_head_dim} narrower than Q/K's {batch.head_dim}"
    parameters = plan_parameters(wrapper_name)
    if parameters is None:
        return (f"{widths}: cannot tell whether this FlashInfer's {wrapper_name}.plan takes "
                "head_dim_vo (flashinfer does not import, or its plan has no readable signature)")
    if "head_dim_vo" not in parameters:
        return (f"{widths}: this FlashInfer's {wrapper_name}.plan takes no head_dim_vo "
                "(one head dim for Q, K and V)")
    return None


class _FlashInferPeer(Peer):
    library = "flashinfer"
    wrapper_name = ""

    def unavailable(self, env):
        reason = env.torch_unavailable()
        if reason:
            return reason
        try:
            importlib.import_module("flashinfer")
        except Exception as e:
            return f"flashinfer is not installed ({type(e).__name__}: {str(e).splitlines()[0][:160]})"
        return None

    def declines(self, batch):
        if batch.layout == "vllm":
            return "layout vllm: FlashInfer reads NHD or HND pages"
        if batch.has_sinks:
            return "sinks: not part of these wrappers"
        if batch.block_sparse:
            return ("block-sparse: FlashInfer's block-sparse wrappers take one pattern per KV head; "
                    "our layouts are per q head with a token-level causal diagonal")
        if np.any(batch.kv_lens == 0):
            return "a zero-length sequence (FlashInfer's last_page_len must be >= 1)"
        if batch.dtype not in ("bf16", "fp16"):
            return f"dtype {batch.dtype}"
        if batch.kv_dtype == "fp8_e4m3" and batch.array("k_scales").size != 1:
            return "fp8 KV with per-head scales: FlashInfer takes one k_scale and one v_scale"
        if batch.narrow_v:
            return narrow_v_declined(self.wrapper_name, batch)
        return None

    @staticmethod
    def _head_dim_vo(batch):
        # Passed only when V is narrower, so that a batch of one head dim plans as before.
        return {"head_dim_vo": batch.v_head_dim} if batch.narrow_v else {}

    def _common(self, batch, env):
        torch = env.torch
        flashinfer = importlib.import_module("flashinfer")
        workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device="cuda")
        i32 = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.int32)).cuda()
        tables = (i32(batch.page_indptr), i32(batch.page_indices), i32(batch.last_page_len))
        kv = (torch_batch.pool(batch, env, "k"), torch_batch.pool(batch, env, "v"))
        scales = {}
        if batch.kv_dtype == "fp8_e4m3":
            scales = {"k_scale": float(batch.array("k_scales")[0]),
                      "v_scale": float(batch.array("v_scales")[0])}
        return torch, flashinfer, workspace, tables, kv, scales

    def _case(self, batch, env, wrapper, kv, scales, config):
        torch = env.torch
        q = torch_batch.q(batch, env)
        out = torch_batch.poisoned_output(batch, env)

        def call():
            wrapper.run(q, kv, out=out, **scales)

        config = dict(config)
        if batch.narrow_v:
            config["head_dim_vo"] = batch.v_head_dim
        config.update({"library": f"flashinfer {getattr(importlib.import_module('flashinfer'), '__version__', '')}",
                       "torch": torch.__version__, "calls_per_sample": 1,
                       "kv": f"paged: our {batch.layout} pool in place, our CSR page table"})
        return Case(call, lambda: torch_batch.to_numpy(out), config)


def planned_decode_wrapper(flashinfer, workspace, layout, tensor_cores, plan):
    """A BatchDecodeWithPagedKVCacheWrapper planned by plan(wrapper), with tensor cores as asked,
    and the config entries that say how it runs. Where the CUDA-core decode module (groups under
    4) fails to build or load (FlashInfer compiles it at plan time; some FlashInfer releases fail
    to link it with newer CUDA toolkits), the wrapper is planned again with use_tensor_cores,
    which serves every group, and the config records why."""
    wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
        workspace, kv_layout=layout, use_tensor_cores=tensor_cores)
    try:
        plan(wrapper)
        return wrapper, {"use_tensor_cores": tensor_cores}
    except RuntimeError as error:
        if tensor_cores:
            raise
        reason = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
    wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
        workspace, kv_layout=layout, use_tensor_cores=True)
    plan(wrapper)
    return wrapper, {"use_tensor_cores": True,
                     "fallback": f"the CUDA-core decode module failed ({reason}): tensor cores"}


class FlashInferDecode(_FlashInferPeer):
    name = "peer.flashinfer.decode"
    wrapper_name = "BatchDecodeWithPagedKVCacheWrapper"
    summary = "FlashInfer BatchDecodeWithPagedKVCacheWrapper over our pool and page table"

    def declines(self, batch):
        if not batch.decode_only:
            return "not a decode batch (peer.flashinfer.prefill serves it)"
        if batch.explicit_mask:
            return "explicit mask: the decode wrapper takes none (peer.flashinfer.prefill does)"
        return super().declines(batch)

    def prepare(self, batch, env):
        torch, flashinfer, workspace, (indptr, indices, last), kv, scales = self._common(batch, env)
        group = batch.num_q_heads // batch.num_kv_heads

        def plan(wrapper):
            wrapper.plan(indptr, indices, last, batch.num_q_heads, batch.num_kv_heads,
                         batch.head_dim, batch.page_size, pos_encoding_mode="NONE",
                         window_left=batch.sliding_window - 1 if batch.sliding_window > 0 else -1,
                         logits_soft_cap=batch.logits_soft_cap if batch.logits_soft_cap > 0 else None,
                         q_data_type=torch_batch.torch_dtype(torch, batch.dtype),
                         kv_data_type=torch_batch.torch_dtype(torch, batch.kv_dtype),
                         sm_scale=batch.softmax_scale, **self._head_dim_vo(batch))

        wrapper, config = planned_decode_wrapper(flashinfer, workspace, batch.layout, group >= 4,
                                                 plan)
        return self._case(batch, env, wrapper, kv, scales,
                          {"wrapper": "BatchDecodeWithPagedKVCacheWrapper", **config})


class FlashInferPrefill(_FlashInferPeer):
    name = "peer.flashinfer.prefill"
    wrapper_name = "BatchPrefillWithPagedKVCacheWrapper"
    summary = "FlashInfer BatchPrefillWithPagedKVCacheWrapper over our pool and page table"

    def declines(self, batch):
        if batch.decode_only and not batch.explicit_mask:
            return "a decode batch (peer.flashinfer.decode serves it)"
        return super().declines(batch)

    def prepare(self, batch, env):
        torch, flashinfer, workspace, (indptr, indices, last), kv, scales = self._common(batch, env)
        qo_indptr = torch.from_numpy(batch.cu_seqlens_q.astype(np.int32)).cuda()
        custom_mask = None
        if batch.explicit_mask:
            custom_mask = torch.from_numpy(batch.array("explicit_mask").astype(np.bool_)).cuda()
        wrapper = flashinfer.BatchPrefillWithPagedKVCacheWrapper(workspace, kv_layout=batch.layout)
        wrapper.plan(qo_indptr, indptr, indices, last, batch.num_q_heads, batch.num_kv_heads,
                     batch.head_dim, batch.page_size, custom_mask=custom_mask,
                     causal=batch.causal and custom_mask is None, pos_encoding_mode="NONE",
                     sm_scale=batch.softmax_scale,
                     window_left=batch.sliding_window - 1 if batch.sliding_window > 0 else -1,
                     logits_soft_cap=batch.logits_soft_cap if batch.logits_soft_cap > 0 else None,
                     q_data_type=torch_batch.torch_dtype(torch, batch.dtype),
                     kv_data_type=torch_batch.torch_dtype(torch, batch.kv_dtype),
                     **self._head_dim_vo(batch))
        mask = "explicit (custom_mask)" if custom_mask is not None else (
            "causal (bottom-right)" if batch.causal else "none")
        return self._case(batch, env, wrapper, kv, scales,
                          {"wrapper": "BatchPrefillWithPagedKVCacheWrapper", "mask": mask})


def peers():
    return [FlashInferDecode(), FlashInferPrefill()]
