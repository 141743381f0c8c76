"""A paged-decode attention kernel in Triton, as a peer module for attn-bench.

    attn-bench run decode-llama3-8b-64x4096 --peer-module examples/user_kernels/triton_decode.py
    attn-tune tune decode-llama3-8b-64x4096 \
        --peer-module examples/user_kernels/triton_decode.py --strategy exhaustive
    attn-tune export --variant 'peer.user.triton_decode.*'

It is recorded as peer.user.triton_decode.paged_decode (docs/user-kernels.md, "Python kernels").

What it computes: one query token per sequence (decode) against that sequence's keys, read page
by page through the page table, with GQA (several q heads per kv head):

    out[s, h, :] = softmax(scale * q[s, h, :] . K[s, :, h / group, :]) @ V[s, :, h / group, :]

Layout: q and out are [num_seqs, num_q_heads, head_dim] bf16; the K and V pools are
[pages, page_size, kv_heads, head_dim] (NHD) or [pages, kv_heads, page_size, head_dim] (HND), bf16.
The kernel takes the pool's strides, so one body serves both layouts.

One program per (sequence, kv head): it loads the `group` q heads that share the kv head once,
then walks the sequence's keys `block_n` at a time with an online softmax (running max and sum,
the accumulator rescaled when the max grows), so K and V are read once for the whole group.
The q heads are padded to 16 rows because tl.dot needs at least 16 rows.

The tunables, declared in `space` and swept by `attn-tune tune`:
  block_n     keys per step: larger steps mean fewer rescales and more bytes in flight, smaller
              ones fewer wasted lanes on short sequences
  num_warps   warps per program: more hide memory latency, fewer leave registers for block_n
  num_stages  software pipelining depth of the key loop (Triton prefetches the next blocks)

Everything that does not need Triton (the space, what is accepted) works without it, so that
`attn-bench` can list the module on a machine without Triton; prepare() says Triton is missing.
"""
import numpy as np

from attn_peers.peers import torch_batch
from attn_peers.peers.base import Case

try:
    import triton
    import triton.language as tl
except ImportError as e:  # listing and declines() work without Triton; prepare() says why not
    triton = None
    _TRITON_MISSING = f"{type(e).__name__}: {e}"

# tl.dot's smallest M: the q heads of one kv head are padded to this many rows.
_MIN_DOT_ROWS = 16

if triton is not None:

    @triton.jit
    def _paged_decode_kernel(q_ptr, k_ptr, v_ptr, out_ptr, block_table_ptr, kv_lens_ptr,
                             q_token_stride, q_head_stride, out_token_stride, out_head_stride,
                             page_stride, slot_stride, kv_head_stride, block_table_stride,
                             scale_log2,
                             HEAD_DIM: tl.constexpr, PAGE_SIZE: tl.constexpr,
                             GROUP: tl.constexpr, GROUP_ROWS: tl.constexpr,
                             BLOCK_N: tl.constexpr):
        seq = tl.program_id(0)
        kv_head = tl.program_id(1)
        kv_len = tl.load(kv_lens_ptr + seq)

        rows = tl.arange(0, GROUP_ROWS)  # q heads of this kv head, padded
        dims = tl.arange(0, HEAD_DIM)
        row_ok = rows < GROUP
        q_heads = kv_head * GROUP + rows
        # q: [GROUP_ROWS, HEAD_DIM], the padding rows zero
        q = tl.load(q_ptr + seq * q_token_stride + q_heads[:, None] * q_head_stride + dims[None, :],
                    mask=row_ok[:, None], other=0.0)

        running_max = tl.full([GROUP_ROWS], float("-inf"), tl.float32)
        running_sum = tl.zeros([GROUP_ROWS], tl.float32)
        acc = tl.zeros([GROUP_ROWS, HEAD_DIM], tl.float32)
        for start in range(0, kv_len, BLOCK_N):
            keys = start + tl.arange(0, BLOCK_N)
            key_ok = keys < kv_len
            # The page of each key from the padded page table, then its row in the pool: the
            # strides make this the same for NHD and HND. 64-bit: a pool passes 2^31 elements.
            page = tl.load(block_table_ptr + seq * block_table_stride + keys // PAGE_SIZE,
                           mask=key_ok, other=0).to(tl.int64)
            row = page * page_stride + (keys % PAGE_SIZE) * slot_stride + kv_head * kv_head_stride
            # k, v: [BLOCK_N, HEAD_DIM]; keys past the end are not read
            k = tl.load(k_ptr + row[:, None] + dims[None, :], mask=key_ok[:, None], other=0.0)
            # scores in base 2 (exp2 is one instruction): [GROUP_ROWS, BLOCK_N]
            scores = tl.dot(q, tl.trans(k)) * scale_log2
            scores = tl.where(key_ok[None, :], scores, float("-inf"))
            new_max = tl.maximum(running_max, tl.max(scores, 1))
            p = tl.exp2(scores - new_max[:, None])
            rescale = tl.exp2(running_max - new_max)
            running_sum = running_sum * rescale + tl.sum(p, 1)
            v = tl.load(v_ptr + row[:, None] + dims[None, :], mask=key_ok[:, None], other=0.0)
            acc = acc * rescale[:, None] + tl.dot(p.to(v.dtype), v)
            running_max = new_max

        out = acc / tl.where(running_sum > 0, running_sum, 1.0)[:, None]
        tl.store(out_ptr + seq * out_token_stride + q_heads[:, None] * out_head_stride
                 + dims[None, :], out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])


class TritonPagedDecode:
    name = "paged_decode"
    device = "cuda"
    summary = "a Triton paged-decode kernel (bf16, NHD/HND pages, GQA), online softmax"
    space = {"block_n": [16, 32, 64, 128], "num_warps": [2, 4, 8], "num_stages": [1, 2, 3]}

    def declines(self, batch, config):
        """What this kernel implements, as an allow-list: anything else is declined with why."""
        if not batch.decode_only:
            return "decode only: one query token per sequence"
        if batch.dtype != "bf16" or batch.kv_dtype != "bf16":
            return f"bf16 only (q {batch.dtype}, K/V {batch.kv_dtype})"
        if batch.layout not in ("NHD", "HND"):
            return f"NHD or HND pages only (the batch's are {batch.layout})"
        if batch.head_dim not in (64, 128, 256):
            return (f"head_dim 64, 128 or 256 only (a power of two for tl.arange), "
                    f"not {batch.head_dim}")
        if batch.num_q_heads % batch.num_kv_heads != 0:
            return "q heads must be a multiple of kv heads"
        unsupported = [f for f in batch.features() if f != "causal"]
        if unsupported:  # a decode token sees every key, so causal or not is the same here
            return "no masks or logit modifiers: not " + ", ".join(unsupported)
        if config["block_n"] * batch.head_dim > 128 * 128 and config["num_warps"] < 4:
            return (f"block_n {config['block_n']} x head_dim {batch.head_dim} needs at least 4 "
                    "warps (the tiles would spill)")
        return None

    def prepare(self, batch, env, config):
        if triton is None:
            raise RuntimeError("triton is not installed (" + _TRITON_MISSING + "): "
                               "pip install triton, or use a torch build that ships it")
        torch = env.torch
        q = torch_batch.q(batch, env)  # [num_seqs, num_q_heads, head_dim]
        k_pool = torch_batch.pool(batch, env, "k")  # the dump's layout, NaN slots zeroed
        v_pool = torch_batch.pool(batch, env, "v")
        block_table = env.cached("triton_decode.block_table", lambda: _block_table(batch, torch))
        kv_lens = env.cached("triton_decode.kv_lens", lambda: torch.from_numpy(
            batch.kv_lens.astype("int32")).cuda())
        out = torch.full_like(q, float("nan"))
        # (page, slot, kv head) strides of the pool, in elements
        if batch.layout == "NHD":  # [pages, page_size, kv_heads, head_dim]
            strides = (k_pool.stride(0), k_pool.stride(1), k_pool.stride(2))
        else:  # HND: [pages, kv_heads, page_size, head_dim]
            strides = (k_pool.stride(0), k_pool.stride(2), k_pool.stride(1))
        group = batch.num_q_heads // batch.num_kv_heads
        grid = (batch.num_seqs, batch.num_kv_heads)
        log2e = 1.4426950408889634

        def call():
            _paged_decode_kernel[grid](
                q, k_pool, v_pool, out, block_table, kv_lens,
                q.stride(0), q.stride(1), out.stride(0), out.stride(1),
                *strides, block_table.stride(0),
                batch.softmax_scale * log2e,
                HEAD_DIM=batch.head_dim, PAGE_SIZE=batch.page_size, GROUP=group,
                GROUP_ROWS=max(_MIN_DOT_ROWS, triton.next_power_of_2(group)),
                BLOCK_N=config["block_n"], num_warps=config["num_warps"],
                num_stages=config["num_stages"])

        return Case(call, lambda: out, {"library": "triton", "triton": triton.__version__,
                                        "kernel": "_paged_decode_kernel"})


def _block_table(batch, torch):
    """The CSR page table padded to [num_seqs, max_pages] int32 (padding: page 0, never read)."""
    counts = batch.page_indptr[1:] - batch.page_indptr[:-1]
    table = np.zeros((batch.num_seqs, max(1, int(counts.max(initial=0)))), dtype=np.int32)
    for s in range(batch.num_seqs):
        pages = batch.pages_of(s)
        table[s, :len(pages)] = pages
    return torch.from_numpy(table).cuda()


def peers():
    return [TritonPagedDecode()]
