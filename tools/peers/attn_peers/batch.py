"""A batch written by `attn-bench workload dump` (docs/batch-dump.md), read back as numpy arrays.

load(dir) reads DIR/batch.json and DIR/batch.safetensors, checks that the two agree (the same
tensors with the same dtypes, shapes and byte counts) and that every tensor's SHA-256 is the one the
index records, and refuses anything else with a BatchError naming what differs. The result gives
the scalars of the batch, each tensor as numpy (BF16 decoded to float32 on request, fp8 codes times
their scales), the K/V pools in one canonical layout whatever the dump's layout, and the keys and
values of one sequence gathered from its pages into contiguous rows.

Q and K rows are head_dim wide; V rows and the output are v_head_dim wide (the index's v_head_dim:
narrower than head_dim when the workload sets model.v_head_dim, DeepSeek's Q/K 192 with V 128; a
dump without the key, written before it existed, has v_head_dim = head_dim).
"""
import hashlib
import json
import math
import os

import numpy as np

from . import safetensors_file

INDEX_FILE = "batch.json"
TENSORS_FILE = "batch.safetensors"
FORMAT = "attn-bench batch dump"


class BatchError(ValueError):
    """The dump is missing, malformed, or its bytes are not the ones its index describes."""


def bf16_to_float32(bits):
    """uint16 bfloat16 bit patterns -> float32 (exact: bf16 is the top half of a float32)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16(values):
    """float32 -> uint16 bfloat16 bits, rounding to nearest even (NaN stays NaN)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(values, dtype=np.float32))
    return np.where(nan, np.uint16(0x7FC0), rounded)


def _fp8_e4m3_table():
    # The e4m3fn decoding of base/dtype.cpp: bias 7, no infinities, S.1111.111 is NaN.
    table = np.empty(256, dtype=np.float32)
    for b in range(256):
        exponent, mantissa = (b >> 3) & 0xF, b & 0x7
        if exponent == 0xF and mantissa == 0x7:
            magnitude = math.nan
        elif exponent == 0:
            magnitude = math.ldexp(mantissa, -9)
        else:
            magnitude = math.ldexp(8 + mantissa, exponent - 10)
        table[b] = -magnitude if b & 0x80 else magnitude
    return table


FP8_E4M3_TABLE = _fp8_e4m3_table()


def fp8_e4m3_to_float32(codes):
    return FP8_E4M3_TABLE[np.asarray(codes, dtype=np.uint8)]


def to_float32(array, dtype):
    """Raw elements of a safetensors dtype (as Tensor.array() gives them) -> float32."""
    if dtype == "BF16":
        return bf16_to_float32(array)
    if dtype == "F8_E4M3":
        return fp8_e4m3_to_float32(array)
    return np.asarray(array).astype(np.float32)


# The index's batch.dtype names (base/dtype.cpp) -> the safetensors names of the tensors.
DTYPE_TENSOR_NAME = {"bf16": "BF16", "fp16": "F16", "fp32": "F32", "fp8_e4m3": "F8_E4M3"}
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8_e4m3": 1}


class DumpedBatch:
    def __init__(self, directory, index, metadata, tensors):
        self.directory = str(directory)
        self.index = index
        self.metadata = metadata
        self.tensors = tensors
        b = index["batch"]
        self.spec = index["spec"]
        self.spec_hash = index["spec_hash"]
        self.name = self.spec.get("name", "")
        self.num_seqs = int(b["num_seqs"])
        self.total_q = int(b["total_q"])
        self.total_kv = int(b["total_kv"])
        self.num_q_heads = int(b["num_q_heads"])
        self.num_kv_heads = int(b["num_kv_heads"])
        self.head_dim = int(b["head_dim"])
        self.v_head_dim = int(b.get("v_head_dim", b["head_dim"]))
        self.dtype = b["dtype"]
        self.kv_dtype = b["kv_dtype"]
        self.layout = b["layout"]
        self.page_size = int(b["page_size"])
        self.num_pages = int(b["num_pages"])
        self.softmax_scale = float(b["softmax_scale"])
        self.logits_soft_cap = float(b["logits_soft_cap"])
        self.sliding_window = int(b["sliding_window"])
        self.causal = bool(b["causal"])
        self.block_size = int(b.get("block_sparse_block_size", 0))
        # Multi-head latent attention (docs/mla-decode.md): one latent pool [pages, page_size,
        # kv_lora_rank + qk_rope_head_dim] read as K (all of a row) and V (its first kv_lora_rank
        # elements); head_dim is the row's width and v_head_dim kv_lora_rank.
        self.latent = b.get("attention", "mha") == "mla"
        self.kv_lora_rank = int(b.get("kv_lora_rank", 0))
        self.qk_rope_head_dim = int(b.get("qk_rope_head_dim", 0))
        self.query_lens = self.array("query_lens").astype(np.int64)
        self.kv_lens = self.array("kv_lens").astype(np.int64)
        self.context_lens = self.array("context_lens").astype(np.int64)
        self.cu_seqlens_q = self.array("cu_seqlens_q").astype(np.int64)
        self.cu_seqlens_kv = self.array("cu_seqlens_kv").astype(np.int64)
        self.page_indptr = self.array("page_indptr").astype(np.int64)
        self.page_indices = self.array("page_indices").astype(np.int64)
        self.last_page_len = self.array("last_page_len").astype(np.int64)
        self._check_consistency()

    # --- what the batch holds ----------------------------------------------------------------
    def has(self, name):
        return name in self.tensors

    def array(self, name):
        """The raw elements of a tensor (BF16 as uint16 bits, F8_E4M3 as uint8 codes)."""
        if name not in self.tensors:
            raise BatchError(f"{self.directory}: the dump has no tensor {name!r}")
        return self.tensors[name].array()

    def float_array(self, name):
        return to_float32(self.array(name), self.tensors[name].dtype)

    @property
    def has_sinks(self):
        return self.has("sink_logits")

    @property
    def block_sparse(self):
        return self.has("block_sparse_crow")

    @property
    def explicit_mask(self):
        return self.has("explicit_mask")

    @property
    def decode_only(self):
        return bool(np.all(self.query_lens == 1))

    @property
    def narrow_v(self):
        """V and the output are narrower than Q and K (v_head_dim < head_dim)."""
        return self.v_head_dim != self.head_dim

    def head_dim_of(self, stream):
        """The row width of stream 'q', 'k' (head_dim) or 'v' (v_head_dim)."""
        return self.v_head_dim if stream == "v" else self.head_dim

    @property
    def output_shape(self):
        """What an implementation's output must be: (total_q, num_q_heads, v_head_dim)."""
        return (self.total_q, self.num_q_heads, self.v_head_dim)

    @property
    def reference(self):
        """reference_out as float32 [total_q, num_q_heads, v_head_dim], or None when not dumped."""
        return self.array("reference_out") if self.has("reference_out") else None

    @property
    def tolerance(self):
        """The row-wise relative L2 limit the dump's index records for the output dtype."""
        v = self.index.get("verification")
        return float(v["tolerance"]) if isinstance(v, dict) and "tolerance" in v else None

    def features(self):
        """The features in force, as words a peer's refusal can name."""
        words = []
        if self.causal:
            words.append("causal")
        if self.sliding_window > 0:
            words.append("sliding window")
        if self.logits_soft_cap > 0:
            words.append("soft-cap")
        if self.has_sinks:
            words.append("sinks")
        if self.block_sparse:
            words.append("block-sparse")
        if self.explicit_mask:
            words.append("explicit mask")
        if self.kv_dtype == "fp8_e4m3":
            words.append("fp8 KV")
        if self.latent:
            words.append("latent attention")
        elif self.narrow_v:
            words.append(f"V head dim {self.v_head_dim} < Q/K {self.head_dim}")
        return words

    # --- Q, K and V ----------------------------------------------------------------------------
    def q_float(self):
        """[total_q, num_q_heads, head_dim] float32."""
        return self.float_array("q")

    def kv_scales(self, stream):
        """fp8 scales of 'k' or 'v' as float32 [num_kv_heads] (a per-tensor scale repeated), or
        None for an unquantised cache."""
        name = f"{stream}_scales"
        if not self.has(name):
            return None
        scales = self.array(name).astype(np.float32)
        if scales.size == 1:
            scales = np.repeat(scales, self.num_kv_heads)
        return scales

    def latent_nhd(self):
        """The latent pool as float32 [pages, page_size, kv_lora_rank + qk_rope_head_dim] (fp8
        codes times latent_scale); slots no sequence owns stay NaN, as dumped."""
        values = to_float32(self.array("latent_cache"), self.tensors["latent_cache"].dtype)
        if self.has("latent_scale"):
            values = values * float(self.array("latent_scale").astype(np.float32)[0])
        return values

    def pool_shape(self, stream):
        """The shape the dump's layout gives the K or V pool (docs/batch-dump.md); D is head_dim
        for K, v_head_dim for V."""
        P, S, H, D = self.num_pages, self.page_size, self.num_kv_heads, self.head_dim_of(stream)
        if self.layout == "NHD":
            return (P, S, H, D)
        if self.layout == "HND":
            return (P, H, S, D)
        if self.layout == "vllm":
            if stream == "k":  # x elements of 16 bytes
                x = 16 // DTYPE_BYTES[self.kv_dtype]
                return (P, H, D // x, S, x)
            return (P, H, D, S)
        raise BatchError(f"{self.directory}: unknown KV layout {self.layout!r}")

    def pool_nhd_raw(self, stream):
        """The raw K or V pool ('k' or 'v') in the NHD order [pages, page_size, kv_heads, D]
        (D: head_dim for K, v_head_dim for V; a view where the layout allows, else a copy);
        elements as stored (codes for fp8)."""
        pool = self.array(f"{stream}_cache")
        P, S, H, D = self.num_pages, self.page_size, self.num_kv_heads, self.head_dim_of(stream)
        if self.layout == "NHD":  # [pages, page_size, kv_heads, D]
            return pool
        if self.layout == "HND":  # [pages, kv_heads, page_size, D]
            return pool.transpose(0, 2, 1, 3)
        if self.layout == "vllm":
            if stream == "k":  # [pages, kv_heads, head_dim / x, page_size, x]
                return np.ascontiguousarray(pool.transpose(0, 3, 1, 2, 4)).reshape(P, S, H, D)
            return pool.transpose(0, 3, 1, 2)  # [pages, kv_heads, v_head_dim, page_size]
        raise BatchError(f"{self.directory}: unknown KV layout {self.layout!r}")

    def pool_nhd(self, stream):
        """The K or V pool as float32 [pages, page_size, kv_heads, D] (D: head_dim for K,
        v_head_dim for V); fp8 codes are multiplied by their scales. Slots no sequence owns stay
        NaN, as dumped."""
        raw = self.pool_nhd_raw(stream)
        values = to_float32(raw, self.tensors[f"{stream}_cache"].dtype)
        scales = self.kv_scales(stream)
        if scales is not None:
            values = values * scales[None, None, :, None]
        return values

    def pages_of(self, seq):
        """Page ids of sequence `seq` in token order (from the CSR page table)."""
        return self.page_indices[self.page_indptr[seq]:self.page_indptr[seq + 1]]

    def gather(self, pool_nhd, seq):
        """Sequence `seq`'s keys (or values) from a pool in NHD order: [kv_len, kv_heads, D], D the
        pool's row width."""
        kv_len = int(self.kv_lens[seq])
        pages = self.pages_of(seq)
        rows = pool_nhd[pages].reshape(-1, pool_nhd.shape[2], pool_nhd.shape[3])
        return rows[:kv_len]

    def gather_all(self, stream):
        """Every sequence's keys (or values), concatenated in batch order:
        [total_kv, kv_heads, D] float32 (D: head_dim for K, v_head_dim for V), sequence s at
        cu_seqlens_kv[s] ..."""
        pool = self.pool_nhd(stream)
        parts = [self.gather(pool, s) for s in range(self.num_seqs)]
        if not parts:
            return np.zeros((0, self.num_kv_heads, self.head_dim_of(stream)), dtype=np.float32)
        return np.concatenate(parts, axis=0)

    # --- masks ---------------------------------------------------------------------------------
    def block_layout_dense(self):
        """The block-sparse layout as bool [layout_heads, num_blocks, num_blocks] (1 = kept)."""
        crow = self.array("block_sparse_crow").astype(np.int64)
        col = self.array("block_sparse_col").astype(np.int64)
        heads, nb = crow.shape[0], crow.shape[1] - 1
        dense = np.zeros((heads, nb, nb), dtype=bool)
        for h in range(heads):
            for i in range(nb):
                cols = col[h, crow[h, i]:crow[h, i + 1]]
                dense[h, i, cols[cols >= 0]] = True
        return dense

    def visible(self, seq, head, layout=None):
        """Which keys each new token of `seq` sees for q head `head`: bool [query_len, kv_len]
        (docs/masks.md: an explicit mask alone decides; else causal bottom-right, window and
        block-sparse combine). `layout`: block_layout_dense(), to avoid rebuilding it."""
        q_len, kv_len = int(self.query_lens[seq]), int(self.kv_lens[seq])
        if self.explicit_mask:
            offsets = self.array("explicit_mask_offsets").astype(np.int64)
            bits = self.array("explicit_mask")[offsets[seq]:offsets[seq + 1]]
            return bits.reshape(q_len, kv_len).astype(bool)
        p = int(self.context_lens[seq]) + np.arange(q_len)[:, None]
        j = np.arange(kv_len)[None, :]
        vis = np.ones((q_len, kv_len), dtype=bool)
        if self.causal:
            vis &= j <= p
        if self.sliding_window > 0:
            vis &= (p - j) < self.sliding_window
        if self.block_sparse:
            if layout is None:
                layout = self.block_layout_dense()
            h = head if layout.shape[0] > 1 else 0
            bs = self.block_size
            vis &= layout[h][p // bs, j // bs]
        return vis

    # --- checks --------------------------------------------------------------------------------
    def _check_consistency(self):
        d = self.directory
        n = self.num_seqs
        if self.cu_seqlens_q.shape != (n + 1,) or self.cu_seqlens_q[-1] != self.total_q:
            raise BatchError(f"{d}: cu_seqlens_q does not match num_seqs {n} and total_q {self.total_q}")
        if np.any(self.kv_lens != self.context_lens + self.query_lens):
            raise BatchError(f"{d}: kv_lens is not context_lens + query_lens")
        pages_needed = -(-self.kv_lens // self.page_size)
        if np.any(np.diff(self.page_indptr) != pages_needed):
            raise BatchError(f"{d}: page_indptr does not give each sequence ceil(kv_len / page_size) pages")
        last = np.where(self.kv_lens > 0, self.kv_lens - (pages_needed - 1) * self.page_size, 0)
        if np.any(last != self.last_page_len):
            raise BatchError(f"{d}: last_page_len disagrees with kv_lens and page_size")
        if self.page_indices.size and (self.page_indices.min() < 0
                                       or self.page_indices.max() >= self.num_pages):
            raise BatchError(f"{d}: a page id is outside the pool of {self.num_pages} pages")
        q = self.tensors["q"]
        if q.shape != (self.total_q, self.num_q_heads, self.head_dim):
            raise BatchError(f"{d}: q has shape {list(q.shape)}")
        if q.dtype != DTYPE_TENSOR_NAME.get(self.dtype):
            raise BatchError(f"{d}: q is {q.dtype}, the index says dtype {self.dtype}")
        if not 0 < self.v_head_dim <= self.head_dim:
            raise BatchError(f"{d}: v_head_dim {self.v_head_dim} is not in 1 .. head_dim "
                             f"{self.head_dim}")
        if self.latent:
            t = self.tensors["latent_cache"]
            if t.dtype != DTYPE_TENSOR_NAME.get(self.kv_dtype):
                raise BatchError(f"{d}: latent_cache is {t.dtype}, the index says kv_dtype {self.kv_dtype}")
            expected = (self.num_pages, self.page_size, self.head_dim)
            if t.shape != expected or self.head_dim != self.kv_lora_rank + self.qk_rope_head_dim:
                raise BatchError(f"{d}: latent_cache has shape {list(t.shape)}; pages of "
                                 f"kv_lora_rank + qk_rope_head_dim give {list(expected)}")
        for stream in () if self.latent else ("k", "v"):
            t = self.tensors[f"{stream}_cache"]
            if t.dtype != DTYPE_TENSOR_NAME.get(self.kv_dtype):
                raise BatchError(f"{d}: {stream}_cache is {t.dtype}, the index says kv_dtype {self.kv_dtype}")
            expected = self.pool_shape(stream)
            if t.shape != expected:
                raise BatchError(f"{d}: {stream}_cache has shape {list(t.shape)}; the {self.layout} "
                                 f"layout with head_dim {self.head_dim} and v_head_dim "
                                 f"{self.v_head_dim} gives {list(expected)}")
        if self.has("reference_out") and self.tensors["reference_out"].shape != self.output_shape:
            raise BatchError(f"{d}: reference_out has shape "
                             f"{list(self.tensors['reference_out'].shape)}, not [total_q, "
                             f"num_q_heads, v_head_dim] = {list(self.output_shape)}")
        if self.latent:
            if self.kv_dtype == "fp8_e4m3" and not self.has("latent_scale"):
                raise BatchError(f"{d}: an fp8 latent cache without latent_scale")
        elif self.kv_dtype == "fp8_e4m3" and not (self.has("k_scales") and self.has("v_scales")):
            raise BatchError(f"{d}: an fp8 cache without k_scales and v_scales")


def load(directory, check_hashes=True):
    """Reads DIR/batch.json and DIR/batch.safetensors. Raises BatchError when either is missing
    or malformed, when the two disagree, or (check_hashes) when a tensor's bytes do not hash to
    the index's sha256."""
    directory = os.fspath(directory)
    index_path = os.path.join(directory, INDEX_FILE)
    try:
        with open(index_path, "rb") as f:
            index = json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        raise BatchError(f"{index_path}: no such file (make one with `attn-bench workload dump "
                         f"WORKLOAD --out {directory}`)") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BatchError(f"{index_path}: not JSON: {e}") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise BatchError(f"{index_path}: not an attn-bench batch dump index (format is not {FORMAT!r})")
    if index.get("format_version") != 1:
        raise BatchError(f"{index_path}: format_version {index.get('format_version')!r}; this reader knows 1")
    for key in ("spec", "spec_hash", "batch", "tensors"):
        if key not in index:
            raise BatchError(f"{index_path}: no {key!r}")
    tensors_path = os.path.join(directory, index.get("tensors_file", TENSORS_FILE))
    try:
        metadata, tensors = safetensors_file.read(tensors_path)
    except FileNotFoundError:
        raise BatchError(f"{tensors_path}: no such file") from None
    except safetensors_file.SafetensorsError as e:
        raise BatchError(str(e)) from None
    if metadata.get("spec_hash") != index["spec_hash"]:
        raise BatchError(f"{tensors_path}: spec_hash {metadata.get('spec_hash')!r} is not the index's "
                         f"{index['spec_hash']!r}: the two files are of different batches")
    listed = {}
    for entry in index["tensors"]:
        listed[entry["name"]] = entry
    if set(listed) != set(tensors):
        missing = sorted(set(listed) - set(tensors))
        extra = sorted(set(tensors) - set(listed))
        raise BatchError(f"{tensors_path}: tensors differ from the index (missing {missing}, "
                         f"not in the index {extra})")
    for name, entry in listed.items():
        t = tensors[name]
        if t.dtype != entry["dtype"] or list(t.shape) != list(entry["shape"]) or len(t.raw) != entry["bytes"]:
            raise BatchError(f"{tensors_path}: tensor {name!r} is {t.dtype} {list(t.shape)} "
                             f"({len(t.raw)} bytes); the index says {entry['dtype']} "
                             f"{entry['shape']} ({entry['bytes']} bytes)")
        if check_hashes:
            digest = hashlib.sha256(t.raw).hexdigest()
            if digest != entry["sha256"]:
                raise BatchError(f"{tensors_path}: tensor {name!r} has sha256 {digest[:16]}..., the "
                                 f"index says {entry['sha256'][:16]}...: the bytes changed since the dump")
    pools = ("latent_cache",) if index["batch"].get("attention", "mha") == "mla" else (
        "k_cache", "v_cache")
    for required in ("q",) + pools + ("query_lens", "kv_lens", "context_lens", "cu_seqlens_q",
                                      "cu_seqlens_kv", "page_indptr", "page_indices",
                                      "last_page_len"):
        if required not in tensors:
            raise BatchError(f"{tensors_path}: no tensor {required!r}")
    return DumpedBatch(directory, index, metadata, tensors)
