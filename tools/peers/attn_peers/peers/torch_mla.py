"""Multi-head latent attention in plain torch: peer.torch.mla_sdpa.

The absorbed form (docs/mla-decode.md) is standard attention with one KV head whose keys are the
latent rows [c | k_rope] (kv_lora_rank + qk_rope_head_dim wide) and whose values are their first
kv_lora_rank elements c: torch.nn.functional.scaled_dot_product_attention takes it as such, with
every q head over the one latent head (enable_gqa=True, or the latent expanded per head outside the
timing where a backend refuses it). torch picks the backend (the flash backend takes no head dim
above 256, so it is usually the math or the memory-efficient one). The rows are gathered from the
pages into contiguous [batch, 1, len, width] outside the timing, an fp8 cache dequantised to Q's
dtype there too. Sequences with the same (query_len, kv_len) form one batched call; causality is
bottom-right aligned as ours (a boolean mask for speculative tokens).

It is there so that a latent batch always has a peer: the paging-free upper bound of what plain
torch does, not a tuned kernel.
"""
from . import torch_batch
from .base import Case, Peer


class MlaSdpaPeer(Peer):
    name = "peer.torch.mla_sdpa"
    library = "torch"
    latent = True
    summary = ("absorbed multi-head latent attention in plain torch: SDPA over the latent rows "
               "(K) and their first kv_lora_rank elements (V), gathered from the pages")

    def unavailable(self, env):
        return env.torch_unavailable()

    def declines(self, batch):
        if not batch.latent:
            return "standard attention: this peer runs multi-head latent attention only"
        if batch.dtype not in ("bf16", "fp16"):
            return f"dtype {batch.dtype}: bf16 or fp16 queries only"
        if batch.total_q == 0:
            return "no query tokens"
        return None

    def prepare(self, batch, env):
        torch = env.torch
        import torch.nn.functional as F
        q_all = torch_batch.q(batch, env)  # [total_q, heads, width]
        rows = torch_batch.latent_gathered(batch, env)  # [total_kv, width]
        rank = batch.kv_lora_rank

        groups = {}
        for s in range(batch.num_seqs):
            key = (int(batch.query_lens[s]), int(batch.kv_lens[s]))
            if key[0] > 0:
                groups.setdefault(key, []).append(s)

        def build(expanded):
            calls = []
            for (q_len, kv_len), seqs in groups.items():
                qg = torch.stack([q_all[int(batch.cu_seqlens_q[s]):int(batch.cu_seqlens_q[s]) + q_len]
                                  for s in seqs]).transpose(1, 2).contiguous()  # [n, H, q_len, W]
                kg = torch.stack([rows[int(batch.cu_seqlens_kv[s]):int(batch.cu_seqlens_kv[s]) + kv_len]
                                  for s in seqs]).unsqueeze(1)  # [n, 1, kv_len, W]
                vg = kg[..., :rank].contiguous()
                kg = kg.contiguous()
                if expanded:
                    kg = kg.expand(-1, batch.num_q_heads, -1, -1).contiguous()
                    vg = vg.expand(-1, batch.num_q_heads, -1, -1).contiguous()
                mask = None
                if batch.causal and q_len > 1:
                    i = torch.arange(q_len, device="cuda")[:, None]
                    j = torch.arange(kv_len, device="cuda")[None, :]
                    mask = j <= i + (kv_len - q_len)
                calls.append((seqs, q_len, qg, kg, vg, mask))
            return calls

        outputs = []
        errors = []
        for expanded in (False, True):
            calls = build(expanded)

            def call(calls=calls, expanded=expanded):
                kwargs = {} if expanded else {"enable_gqa": True}
                outputs[:] = [F.scaled_dot_product_attention(qg, kg, vg, attn_mask=mask,
                                                             scale=batch.softmax_scale, **kwargs)
                              for _, _, qg, kg, vg, mask in calls]

            try:
                call()
                torch.cuda.synchronize()
            except Exception as e:  # this form refused: try the latent expanded per head
                errors.append(f"{'expanded' if expanded else 'enable_gqa'}: "
                              f"{str(e).splitlines()[0][:200] if str(e) else type(e).__name__}")
                continue

            def output(calls=calls):
                out = torch_batch.poisoned_output(batch, env)
                for (seqs, q_len, *_), o in zip(calls, outputs):
                    per_token = o.transpose(1, 2)  # [n, q_len, heads, rank]
                    for i, s in enumerate(seqs):
                        start = int(batch.cu_seqlens_q[s])
                        out[start:start + q_len] = per_token[i]
                return torch_batch.to_numpy(out)

            config = {"library": f"torch {torch.__version__}", "backend": "torch's choice",
                      "calls_per_sample": len(calls),
                      "heads": "latent expanded per q head" if expanded else "enable_gqa",
                      "kv": "latent rows gathered into contiguous [batch, 1, len, width] outside "
                            "the timing (paging-free)"
                            + ("; fp8 dequantised there" if batch.kv_dtype == "fp8_e4m3" else "")}
            return Case(call, output, config)
        raise RuntimeError("SDPA ran no form of this latent batch: " + "; ".join(errors))


def peers():
    return [MlaSdpaPeer()]
