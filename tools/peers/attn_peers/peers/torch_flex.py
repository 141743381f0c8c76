"""torch FlexAttention (torch.nn.attention.flex_attention, compiled with torch.compile):

peer.torch.flex        contiguous K/V gathered from the pages outside the timing (as the SDPA
                       peers), every sequence packed into one row of total_q queries over
                       total_kv keys, with a document mask (each query sees its own sequence's
                       keys only) and our rules as the mask_mod: causal bottom-right, sliding
                       window, the block-sparse layout per q head, or the explicit mask.
peer.torch.flex_paged  reads the pool through our page table, without gathering: the batch as B =
                       num_seqs rows of max query_len (padded) over the pool seen as one sequence
                       of num_pages * page_size slots; a logical block mask (KV blocks of one page)
                       from create_block_mask is mapped onto physical pages with the dump's
                       block_table, and the mask_mod maps a physical slot back to its position in
                       the sequence (the way torch.nn.attention.experimental's PagedAttention does;
                       written here so as not to depend on that private module). The pool is used
                       in place for the NHD layout, converted to NHD once (outside the timing) for
                       HND and vLLM.
Both: soft-cap as a score_mod; GQA with enable_gqa; the block mask is built outside the timing;
a sample is one call of the compiled flex_attention. Declined: sinks (no FlexAttention feature),
fp8 KV (no fp8 inputs).
A V head dim narrower than Q/K's is passed as it is: flex_attention documents value as
(B, Hkv, S, Ev) and its output as (B, Hq, L, Ev). A torch that refuses it records the case as
launch_failed with its own message (and a wrong width fails the runner's output-shape check).
"""
import numpy as np

from . import torch_batch
from .base import Case, Peer


def _flex_api(torch):
    from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention
    return BlockMask, create_block_mask, flex_attention


class _FlexPeer(Peer):
    library = "torch"

    def unavailable(self, env):
        reason = env.torch_unavailable()
        if reason:
            return reason
        try:
            _flex_api(env.torch)
        except ImportError as e:
            return f"torch {env.torch.__version__} has no FlexAttention ({e})"
        try:
            import triton  # noqa: F401  (torch.compile generates Triton kernels)
        except ImportError:
            return "Triton is not installed (torch.compile of flex_attention needs it)"
        return None

    def declines(self, batch):
        if batch.has_sinks:
            return "sinks: FlexAttention has no sink term in its softmax"
        if batch.kv_dtype == "fp8_e4m3":
            return "fp8 KV: FlexAttention takes no fp8 K/V with scales"
        if batch.dtype not in ("bf16", "fp16"):
            return f"dtype {batch.dtype}"
        if batch.total_q == 0:
            return "no query tokens"
        return None


def _rules(torch, batch):
    """The visibility rule of docs/masks.md as a function of tensors (seq, head, qi, kpos), where
    qi is the index among the sequence's new tokens and kpos the key position; qi and kpos may
    lie outside the sequence (padding), where it is False."""
    dev = "cuda"
    q_lens = torch.from_numpy(batch.query_lens).to(dev)
    kv_lens = torch.from_numpy(batch.kv_lens).to(dev)
    ctx = torch.from_numpy(batch.context_lens).to(dev)
    window = batch.sliding_window
    causal = batch.causal
    layout = None
    if batch.block_sparse:
        dense = batch.block_layout_dense()
        layout = torch.from_numpy(dense).to(dev)
        layout_heads, nb = dense.shape[0], dense.shape[1]
        bs = batch.block_size
    bits = offsets = None
    if batch.explicit_mask:
        bits = torch.from_numpy(batch.array("explicit_mask").astype(np.bool_)).to(dev)
        offsets = torch.from_numpy(batch.array("explicit_mask_offsets").astype(np.int64)).to(dev)

    def visible(seq, h, qi, kpos):
        inside = (qi >= 0) & (qi < q_lens[seq]) & (kpos >= 0) & (kpos < kv_lens[seq])
        if bits is not None:
            index = offsets[seq] + qi * kv_lens[seq] + kpos
            index = torch.where(inside, index, torch.zeros_like(index))
            return inside & bits[index]
        p = ctx[seq] + qi
        ok = inside
        if causal:
            ok = ok & (kpos <= p)
        if window > 0:
            ok = ok & (p - kpos < window)
        if layout is not None:
            head = h if layout_heads > 1 else torch.zeros_like(h)
            row = torch.clamp(p // bs, 0, nb - 1)
            col = torch.clamp(kpos // bs, 0, nb - 1)
            ok = ok & layout[head, row, col]
        return ok

    return visible


def _score_mod(batch):
    cap = batch.logits_soft_cap
    if not cap > 0:
        return None, "none"

    def soft_cap(score, b, h, q_idx, kv_idx):
        return cap * (score / cap).tanh()

    return soft_cap, f"soft-cap {cap:g} as score_mod"


def _block_mask_heads(batch):
    # One mask for every head unless the block-sparse layout differs per head.
    if batch.block_sparse and batch.array("block_sparse_crow").shape[0] > 1:
        return batch.num_q_heads
    return None


class FlexPeer(_FlexPeer):
    name = "peer.torch.flex"
    summary = "torch FlexAttention over contiguous K/V gathered from the pages, sequences packed"

    def prepare(self, batch, env):
        torch = env.torch
        BlockMask, create_block_mask, flex_attention = _flex_api(torch)
        # [1, heads, tokens, head_dim], contiguous
        q = torch_batch.q(batch, env).permute(1, 0, 2).unsqueeze(0).contiguous()
        k = torch_batch.gathered(batch, env, "k").permute(1, 0, 2).unsqueeze(0).contiguous()
        v = torch_batch.gathered(batch, env, "v").permute(1, 0, 2).unsqueeze(0).contiguous()
        seq_of_q = torch.from_numpy(np.repeat(np.arange(batch.num_seqs), batch.query_lens)).cuda()
        seq_of_kv = torch.from_numpy(np.repeat(np.arange(batch.num_seqs), batch.kv_lens)).cuda()
        cu_q = torch.from_numpy(batch.cu_seqlens_q).cuda()
        cu_kv = torch.from_numpy(batch.cu_seqlens_kv).cuda()
        visible = _rules(torch, batch)

        def mask_mod(b, h, q_idx, kv_idx):
            seq = seq_of_q[q_idx]
            same = seq == seq_of_kv[kv_idx]
            return same & visible(seq, h, q_idx - cu_q[seq], kv_idx - cu_kv[seq])

        block_mask = create_block_mask(mask_mod, 1, _block_mask_heads(batch), batch.total_q,
                                       batch.total_kv, device="cuda", _compile=True)
        score_mod, score_name = _score_mod(batch)
        compiled = torch.compile(flex_attention, dynamic=False)
        gqa = batch.num_q_heads != batch.num_kv_heads
        result = []
        # Under 128 packed queries (decode) torch picks its flex-decoding kernel, which some torch
        # versions cannot lower for a document mask ("NoValidChoicesError"): then the flex
        # attention kernel is forced.
        errors = []
        for options in (None, {"FORCE_USE_FLEX_ATTENTION": True}):
            def call(options=options):
                result[:] = [compiled(q, k, v, score_mod=score_mod, block_mask=block_mask,
                                      scale=batch.softmax_scale, enable_gqa=gqa,
                                      kernel_options=options)]
            try:
                call()
                torch.cuda.synchronize()
            except Exception as e:  # this kernel choice fails here: try the next
                errors.append(f"kernel_options {options}: {str(e).splitlines()[0][:200]}")
                continue
            break
        else:
            raise RuntimeError("flex_attention ran no kernel for the batch: " + "; ".join(errors))

        def output():
            return torch_batch.to_numpy(result[0][0].permute(1, 0, 2))

        config = {"library": f"torch {torch.__version__}", "compiled": "torch.compile(dynamic=False)",
                  "kernel_options": options or {},
                  "calls_per_sample": 1, "packing": "one row of total_q queries, document mask",
                  "block_size": list(block_mask.BLOCK_SIZE), "score_mod": score_name,
                  "block_mask_density": _density(block_mask),
                  "kv": "gathered into contiguous rows outside the timing (paging-free)"}
        if batch.narrow_v:
            config["v_head_dim"] = batch.v_head_dim
        return Case(call, output, config)


class FlexPagedPeer(_FlexPeer):
    name = "peer.torch.flex_paged"
    summary = "torch FlexAttention reading the paged pool through the page table"

    def prepare(self, batch, env):
        torch = env.torch
        BlockMask, create_block_mask, flex_attention = _flex_api(torch)
        B, S = batch.num_seqs, batch.page_size
        max_q = int(batch.query_lens.max())
        max_pages = int(batch.array("block_table").shape[1])
        # Q padded per sequence: [B, Hq, max_q, D]; padding rows see nothing and are dropped.
        q_flat = torch_batch.q(batch, env)
        q = torch.zeros((B, max_q, batch.num_q_heads, batch.head_dim), dtype=q_flat.dtype,
                        device="cuda")
        for s in range(B):
            n = int(batch.query_lens[s])
            start = int(batch.cu_seqlens_q[s])
            q[s, :n] = q_flat[start:start + n]
        q = q.transpose(1, 2).contiguous()
        # K/V as [1, kv_heads, num_pages * page_size, D] (D: head_dim for K, v_head_dim for V): a
        # strided view of an NHD pool (no copy), or, if flex_attention refuses that view, a
        # contiguous copy made once.
        pools = [torch_batch.pool_nhd(batch, env, stream) for stream in ("k", "v")]
        converted = any(not p.is_contiguous() for p in pools)
        pools = [p.contiguous() for p in pools]
        slots = batch.num_pages * S

        def kv_view(p):
            return p.view(slots, batch.num_kv_heads, p.shape[-1]).permute(1, 0, 2).unsqueeze(0)

        kv_forms = [("view", [kv_view(p) for p in pools]), ("copy", None)]  # copy: made if needed
        block_table = torch.from_numpy(batch.array("block_table").astype(np.int64)).cuda()
        p2l = np.full((B, batch.num_pages), -1, dtype=np.int64)
        for s in range(B):
            pages = batch.pages_of(s)
            p2l[s, pages] = np.arange(len(pages))
        physical_to_logical = torch.from_numpy(p2l).cuda()
        visible = _rules(torch, batch)

        def logical_mask(b, h, q_idx, kv_idx):
            return visible(b, h, q_idx, kv_idx)

        q_block = 128
        logical = create_block_mask(logical_mask, B, _block_mask_heads(batch), max_q,
                                    max_pages * S, device="cuda", BLOCK_SIZE=(q_block, S),
                                    _compile=True)

        def physical(indices):
            # Logical page j of row b -> our page id. The result is as wide as the pool (as
            # PagedAttention's conversion makes it): BlockMask lays the indices out densely by
            # value when it transposes them, so every page id must be a valid column.
            shape = indices.shape
            flat = indices.reshape(shape[0], -1).to(torch.int64)
            pages = torch.gather(block_table, 1, flat).view(shape).to(torch.int32)
            wide = torch.zeros(shape[:-1] + (batch.num_pages,), dtype=torch.int32, device="cuda")
            wide[..., :shape[-1]] = pages
            return wide

        def physical_mask(b, h, q_idx, kv_idx):
            logical_page = physical_to_logical[b, kv_idx // S]
            position = logical_page * S + kv_idx % S
            return (logical_page >= 0) & logical_mask(b, h, q_idx, position)

        full_num = full_idx = None
        if logical.full_kv_num_blocks is not None:
            full_num, full_idx = logical.full_kv_num_blocks, physical(logical.full_kv_indices)
        block_mask = BlockMask.from_kv_blocks(
            logical.kv_num_blocks, physical(logical.kv_indices), full_num, full_idx,
            BLOCK_SIZE=(q_block, S), mask_mod=physical_mask,
            seq_lengths=(max_q, batch.num_pages * S))
        score_mod, score_name = _score_mod(batch)
        compiled = torch.compile(flex_attention, dynamic=False)
        gqa = batch.num_q_heads != batch.num_kv_heads
        result = []
        options_tried = [None] if S >= 128 else [{"BLOCK_N": S}, None]
        errors = []
        attempts = [(form, options) for form, _ in kv_forms for options in options_tried]
        chosen = None
        for form, options in attempts:
            if form == "view":
                k, v = kv_forms[0][1]
            else:
                k, v = [kv_view(p).contiguous() for p in pools]

            def call(options=options, k=k, v=v):
                result[:] = [compiled(q, k, v, score_mod=score_mod, block_mask=block_mask,
                                      scale=batch.softmax_scale, enable_gqa=gqa,
                                      kernel_options=options)]
            try:
                call()
                torch.cuda.synchronize()
            except Exception as e:  # a form or kernel option this torch refuses: try the next
                errors.append(f"{form}, kernel_options {options}: {str(e).splitlines()[0][:200]}")
                continue
            chosen = (form, options, call)
            break
        if chosen is None:
            raise RuntimeError("flex_attention ran no form of the paged batch: " + "; ".join(errors))
        form, options, call = chosen
        layout_note = (f"the pool converted from {batch.layout} to NHD once, outside the timing"
                       if converted else "the NHD pool")
        layout_note += (", read in place (a strided view)" if form == "view" else
                        ", copied to [1, kv_heads, slots, head_dim] once (the view was refused)")

        def output():
            out = torch_batch.poisoned_output(batch, env)
            o = result[0]  # [B, Hq, max_q, v_head_dim]
            for s in range(B):
                n = int(batch.query_lens[s])
                start = int(batch.cu_seqlens_q[s])
                out[start:start + n] = o[s, :, :n].transpose(0, 1)
            return torch_batch.to_numpy(out)

        config = {"library": f"torch {torch.__version__}",
                  "compiled": "torch.compile(dynamic=False)", "calls_per_sample": 1,
                  "batching": f"{B} rows of {max_q} queries (padded)",
                  "block_size": [q_block, S], "kernel_options": options or {},
                  "score_mod": score_name, "block_mask_density": _density(block_mask),
                  "kv": f"paged: {layout_note}, pages through the dump's block_table"}
        if batch.narrow_v:
            config["v_head_dim"] = batch.v_head_dim
        return Case(call, output, config)


def _density(block_mask):
    try:
        return round(1.0 - float(block_mask.sparsity()) / 100.0, 4)
    except Exception:
        return None


def peers():
    return [FlexPeer(), FlexPagedPeer()]
