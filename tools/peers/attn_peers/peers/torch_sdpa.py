"""torch.nn.functional.scaled_dot_product_attention, one peer per backend:
peer.torch.sdpa_flash, peer.torch.sdpa_cudnn, peer.torch.sdpa_efficient (torch.nn.attention's
sdpa_kernel restricts the call to that backend; a backend that refuses the shape fails the case).

What it measures: attention over contiguous K/V. Each sequence's keys and values are gathered from
the pages once, outside the timing: the paging-free upper bound of what a paged kernel could do.
Variable lengths: sequences with the same (query_len, kv_len) form one group and one batched call
[group, heads, len, head_dim]; a sample times every group's call, back to back (a uniform batch is
one call). Causality is bottom-right aligned as ours: query i of a sequence with kv_len L and
query_len Q sees keys <= L - Q + i (is_causal when Q == L, no mask when Q == 1, else
torch.nn.attention.bias.causal_lower_right, or the same as a boolean mask where the backend takes
no causal bias). GQA: enable_gqa=True, or K/V repeated per q head outside the timing when the
backend refuses it (config 'gqa': 'native' or 'expanded').
Declines what SDPA has no argument for: soft-cap, sinks, sliding window, block-sparse and
explicit masks, fp8 KV (FlexAttention serves the masks and the soft-cap).
A V head dim narrower than Q/K's (DeepSeek's 192/128): SDPA's signature allows it (value
[..., S, Ev], output [..., L, Ev]) and the efficient backend takes it (torch checks that Q and K
agree and that each width is a multiple of 8 for bf16/fp16); the flash backend requires one head
dim for Q, K and V and declines it; the cuDNN backend declines it too, since whether torch's cuDNN
path takes V narrower than Q/K at these widths depends on the torch and cuDNN versions.
"""
import numpy as np

from . import torch_batch
from .base import Case, Peer


class SdpaPeer(Peer):
    library = "torch"

    def __init__(self, backend):
        self.backend = backend  # "flash", "cudnn", "efficient"
        self.name = f"peer.torch.sdpa_{backend}"
        self.summary = f"torch SDPA, {backend} backend, contiguous K/V gathered from the pages"

    def unavailable(self, env):
        reason = env.torch_unavailable()
        if reason:
            return reason
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: F401
        except ImportError as e:
            return f"torch {env.torch.__version__} has no torch.nn.attention.sdpa_kernel ({e})"
        return None

    def declines(self, batch):
        if batch.kv_dtype == "fp8_e4m3":
            return "fp8 KV: SDPA takes no fp8 K/V with scales"
        if batch.dtype not in ("bf16", "fp16"):
            return f"dtype {batch.dtype}: the fused backends take bf16 or fp16"
        for word, present in (("soft-cap", batch.logits_soft_cap > 0), ("sinks", batch.has_sinks),
                              ("sliding window", batch.sliding_window > 0),
                              ("block-sparse mask", batch.block_sparse),
                              ("explicit mask", batch.explicit_mask)):
            if present:
                return f"{word}: not an SDPA feature (peer.torch.flex serves it)"
        if batch.total_q == 0:
            return "no query tokens"
        if batch.narrow_v and self.backend != "efficient":
            return self._narrow_v_reason(batch)
        return None

    def _narrow_v_reason(self, batch):
        widths = f"V head dim {batch.v_head_dim} narrower than Q/K's {batch.head_dim}"
        if self.backend == "flash":
            return (f"{widths}: the flash backend needs one head dim for Q, K and V "
                    "(peer.torch.sdpa_efficient serves it)")
        return (f"{widths}: not attempted with the cuDNN backend, whose support for a V head dim "
                "different from Q/K's depends on the torch and cuDNN versions "
                "(peer.torch.sdpa_efficient serves it)")

    def prepare(self, batch, env):
        torch = env.torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                   "efficient": SDPBackend.EFFICIENT_ATTENTION}[self.backend]
        q_all = torch_batch.q(batch, env)
        k_all = torch_batch.gathered(batch, env, "k")
        v_all = torch_batch.gathered(batch, env, "v")
        group_size = batch.num_q_heads // batch.num_kv_heads

        # Groups of sequences with equal lengths, in batch order of their first member.
        groups = {}
        for s in range(batch.num_seqs):
            key = (int(batch.query_lens[s]), int(batch.kv_lens[s]))
            if key[0] > 0:
                groups.setdefault(key, []).append(s)

        def stack(tensor, cu, seqs, length):
            rows = torch.cat([tensor[int(cu[s]):int(cu[s]) + length] for s in seqs], 0)
            return rows.view(len(seqs), length, tensor.shape[1], tensor.shape[2]).transpose(1, 2)

        def mask_for(q_len, kv_len, kind):
            if not batch.causal or q_len == 1:
                return None, False, "none"
            if q_len == kv_len:
                return None, True, "is_causal"
            if kind == "bias":
                from torch.nn.attention.bias import causal_lower_right
                return causal_lower_right(q_len, kv_len), False, "causal_lower_right"
            rows = torch.arange(q_len, device="cuda")[:, None]
            cols = torch.arange(kv_len, device="cuda")[None, :]
            return cols <= rows + (kv_len - q_len), False, "bool mask"

        def build(gqa, mask_kind):
            calls = []
            for (q_len, kv_len), seqs in groups.items():
                qg = stack(q_all, batch.cu_seqlens_q, seqs, q_len).contiguous()
                kg = stack(k_all, batch.cu_seqlens_kv, seqs, kv_len).contiguous()
                vg = stack(v_all, batch.cu_seqlens_kv, seqs, kv_len).contiguous()
                if gqa == "expanded" and group_size > 1:
                    kg = kg.repeat_interleave(group_size, dim=1)
                    vg = vg.repeat_interleave(group_size, dim=1)
                mask, is_causal, mask_name = mask_for(q_len, kv_len, mask_kind)
                calls.append((seqs, q_len, qg, kg, vg, mask, is_causal, mask_name))
            return calls

        outputs = [None] * 0
        attempts = [("native", "bias"), ("expanded", "bias"), ("expanded", "bool")]
        if group_size == 1:
            attempts = [("native", "bias"), ("native", "bool")]
        errors = []
        for gqa, mask_kind in attempts:
            calls = build(gqa, mask_kind)
            native = gqa == "native" and group_size > 1

            def call(calls=calls, native=native):
                results = []
                with sdpa_kernel([backend]):
                    for seqs, q_len, qg, kg, vg, mask, is_causal, _ in calls:
                        kwargs = {"enable_gqa": True} if native else {}
                        results.append(F.scaled_dot_product_attention(
                            qg, kg, vg, attn_mask=mask, is_causal=is_causal,
                            scale=batch.softmax_scale, **kwargs))
                outputs[:] = results

            try:
                call()
                torch.cuda.synchronize()
            except Exception as e:  # this form refused (no kernel for it): try the next
                errors.append(f"gqa {gqa}, mask {mask_kind}: {str(e).splitlines()[0][:200]}")
                continue

            def output(calls=calls):
                out = torch_batch.poisoned_output(batch, env)
                for (seqs, q_len, *_), o in zip(calls, outputs):
                    rows = o.transpose(1, 2)  # [group, q_len, heads, v_head_dim]
                    for i, s in enumerate(seqs):
                        start = int(batch.cu_seqlens_q[s])
                        out[start:start + q_len] = rows[i]
                return torch_batch.to_numpy(out)

            masks = sorted({c[7] for c in calls})
            config = {"library": f"torch {torch.__version__}", "backend": self.backend,
                      "calls_per_sample": len(calls), "gqa": gqa if group_size > 1 else "none",
                      "causal": ", ".join(masks),
                      "kv": "gathered into contiguous [batch, kv_heads, len, head_dim] outside "
                            "the timing (paging-free upper bound)"}
            if batch.narrow_v:
                config["v_head_dim"] = batch.v_head_dim
            return Case(call, output, config)
        raise RuntimeError(f"the {self.backend} backend ran no form of this batch: "
                           + "; ".join(errors))


def peers():
    return [SdpaPeer("flash"), SdpaPeer("cudnn"), SdpaPeer("efficient")]
