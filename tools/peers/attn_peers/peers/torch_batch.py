"""The dumped batch as torch tensors on the GPU, shared by the torch-based peers (through
Environment.cached, so each is uploaded once).

  q(batch, env)              [total_q, num_q_heads, head_dim], the batch's dtype
  pool(batch, env, 'k'|'v')  the raw pool in the dump's layout and dtype (fp8: float8_e4m3fn codes),
                             NaN in unowned slots replaced by zero (docs/peers.md says why)
  pool_nhd(batch, env, s)    the same pool as [pages, page_size, kv_heads, D] (a view for
                             NHD and HND, a copy for vLLM's K); not dequantised
  gathered(batch, env, s)    every sequence's keys (values) from its pages, contiguous:
                             [total_kv, kv_heads, D], sequence s at cu_seqlens_kv[s]
  latent_pool(batch, env)    a latent batch's raw pool [pages, page_size, kv_lora_rank + rope]
  latent_gathered(batch, env) a latent batch's rows [total_kv, kv_lora_rank + qk_rope_head_dim]
  poisoned_output(batch, env) [total_q, num_q_heads, v_head_dim] of NaN
D is head_dim for K and v_head_dim for V (narrower than Q/K's when the workload sets it).
"""
import numpy as np


def torch_dtype(torch, name):
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32,
            "fp8_e4m3": torch.float8_e4m3fn}[name]


def from_raw(torch, array, dtype_name):
    """A numpy array of raw elements (BF16 bits as uint16, fp8 codes as uint8) -> torch tensor of
    the real dtype on the GPU, bytes unchanged."""
    a = np.ascontiguousarray(array)
    if dtype_name in ("bf16", "fp16"):
        t = torch.from_numpy(a.view(np.int16).copy()).cuda()
        return t.view(torch_dtype(torch, dtype_name))
    if dtype_name == "fp8_e4m3":
        return torch.from_numpy(a.view(np.uint8).copy()).cuda().view(torch.float8_e4m3fn)
    return torch.from_numpy(a.astype(np.float32)).cuda()


def q(batch, env):
    torch = env.torch
    return env.cached("q", lambda: from_raw(torch, batch.array("q"), batch.dtype))


def _nan_zeroed(batch, name):
    """A writable copy of a pool tensor's raw elements with NaN (unowned slots) replaced by 0."""
    raw = np.array(batch.array(name))
    if batch.kv_dtype == "fp8_e4m3":
        raw[(raw & 0x7F) == 0x7F] = 0  # the NaN codes of e4m3fn
    elif batch.kv_dtype in ("bf16", "fp16"):
        bits = raw.view(np.uint16)
        exponent = (0x7F80 if batch.kv_dtype == "bf16" else 0x7C00)
        nan = (bits & exponent) == exponent
        bits[nan] = 0
    return raw


def pool(batch, env, stream):
    torch = env.torch
    return env.cached(f"pool_{stream}", lambda: from_raw(
        torch, _nan_zeroed(batch, f"{stream}_cache"), batch.kv_dtype))


def latent_pool(batch, env):
    """A latent batch's raw pool [pages, page_size, kv_lora_rank + qk_rope_head_dim] in its dtype
    (fp8: float8_e4m3fn codes), NaN in unowned slots replaced by zero."""
    torch = env.torch
    return env.cached("latent_pool", lambda: from_raw(
        torch, _nan_zeroed(batch, "latent_cache"), batch.kv_dtype))


def latent_gathered(batch, env):
    """A latent batch's rows, every sequence's from its pages, contiguous: [total_kv,
    kv_lora_rank + qk_rope_head_dim] in Q's dtype (an fp8 cache is dequantised, a copy),
    sequence s at cu_seqlens_kv[s]."""
    torch = env.torch

    def make():
        pool_rows = latent_pool(batch, env)
        rows = pool_rows.index_select(0, page_table(batch, env)).reshape(-1, batch.head_dim)
        keep = np.concatenate([np.arange(batch.kv_lens[s]) + batch.page_indptr[s] * batch.page_size
                               for s in range(batch.num_seqs)]) if batch.num_seqs else np.zeros(0)
        rows = rows.index_select(0, torch.from_numpy(keep.astype(np.int64)).cuda())
        if batch.kv_dtype == "fp8_e4m3":
            scale = float(batch.array("latent_scale").astype(np.float32)[0])
            rows = (rows.float() * scale).to(torch_dtype(torch, batch.dtype))
        return rows.contiguous()

    return env.cached("latent_gathered", make)


def pool_nhd(batch, env, stream):
    def make():
        p = pool(batch, env, stream)
        P, S, H = batch.num_pages, batch.page_size, batch.num_kv_heads
        D = batch.head_dim_of(stream)
        if batch.layout == "NHD":
            return p
        if batch.layout == "HND":
            return p.permute(0, 2, 1, 3)
        if stream == "k":  # vllm [pages, kv_heads, head_dim / x, page_size, x]
            return p.permute(0, 3, 1, 2, 4).contiguous().view(P, S, H, D)
        return p.permute(0, 3, 1, 2)  # vllm V [pages, kv_heads, v_head_dim, page_size]

    return env.cached(f"pool_nhd_{stream}", make)


def page_table(batch, env):
    torch = env.torch
    return env.cached("page_indices", lambda: torch.from_numpy(
        batch.page_indices.astype(np.int64)).cuda())


def gathered(batch, env, stream):
    """[total_kv, kv_heads, D] in the pool's dtype (D: head_dim for K, v_head_dim for V),
    gathered page by page (a copy)."""
    torch = env.torch

    def make():
        p = pool_nhd(batch, env, stream)
        S = batch.page_size
        rows = p.index_select(0, page_table(batch, env))  # [sum pages, S, H, D]
        rows = rows.reshape(-1, batch.num_kv_heads, batch.head_dim_of(stream))
        keep = np.concatenate([np.arange(batch.kv_lens[s]) + batch.page_indptr[s] * S
                               for s in range(batch.num_seqs)]) if batch.num_seqs else np.zeros(0)
        return rows.index_select(0, torch.from_numpy(keep.astype(np.int64)).cuda()).contiguous()

    return env.cached(f"gathered_{stream}", make)


def poisoned_output(batch, env):
    """A fresh [total_q, num_q_heads, v_head_dim] output buffer of the batch's dtype, all NaN."""
    torch = env.torch
    return torch.full(batch.output_shape, float("nan"),
                      dtype=torch_dtype(torch, batch.dtype), device="cuda")


def to_numpy(tensor):
    return tensor.float().cpu().numpy()
