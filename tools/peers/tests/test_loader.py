"""The dump loader (attn_peers.batch) on real dumps of `attn-bench workload dump`: tensors and
shapes, refusals (changed bytes, an index that disagrees, missing files), every KV layout and fp8,
page gathering, and masks: numpy attention over the gathered keys with the loader's visibility
must reproduce the dump's reference_out, which checks gather, layouts, scales and the bottom-right
causal alignment at once."""
import hashlib
import json
import os
import shutil
import unittest

import numpy as np

import support
from attn_peers import batch as batch_module
from attn_peers import safetensors_file, verify


class LoaderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        support.require_binary(cls)
        cls.dumps = support.Dumps()
        w = support.workload
        cls.specs = {
            "nhd": w("decode-nhd"),
            "hnd": w("decode-hnd", layout="HND"),
            "vllm": w("decode-vllm", layout="vllm"),
            "sequential": w("decode-sequential", allocation="sequential"),
            "fp8": w("decode-fp8", layout="vllm", kv_dtype="fp8_e4m3", kv_scale="per_head"),
            "fp8_tensor": w("decode-fp8-tensor", layout="HND", kv_dtype="fp8_e4m3"),
            "prefix": w("prefix", sequences=[{"context_len": 9, "query_len": 6, "count": 2},
                                             {"context_len": 0, "query_len": 7, "count": 1}]),
            "window": w("window", sliding_window=5, soft_cap=20.0,
                        sequences=[{"context_len": 12, "query_len": 4, "count": 2}]),
            "sinks": w("sinks", sequences=[{"context_len": 30, "query_len": 1, "count": 2}]),
            "block_sparse": w("block-sparse", sequences=[{"context_len": 0, "query_len": 40,
                                                          "count": 2}],
                              mask={"causal": True, "block_sparse": {
                                  "block_size": 8, "local_blocks": 2, "vertical_stride": 3}}),
            "tree": w("tree", sequences=[{"context_len": 10, "query_len": 3, "count": 2}],
                      mask={"explicit": {"kind": "tree", "parents": [-1, 0, 0]}}),
        }
        cls.specs["sinks"]["model"]["attention_sinks"] = True
        cls.dirs = {key: cls.dumps.dump(spec) for key, spec in cls.specs.items()}
        cls.batches = {key: batch_module.load(d) for key, d in cls.dirs.items()}

    @classmethod
    def tearDownClass(cls):
        cls.dumps.close()

    def copy_dump(self, key):
        target = os.path.join(self.dumps.root, f"copy-{key}-{self.id().split('.')[-1]}")
        shutil.copytree(self.dirs[key], target)
        return target

    # --- what the loader gives ----------------------------------------------------------------
    def test_scalars_tensors_and_shapes(self):
        b = self.batches["nhd"]
        self.assertEqual(b.num_seqs, 3)
        self.assertEqual(list(b.query_lens), [1, 1, 1])
        self.assertEqual(list(b.kv_lens), [6, 21, 34])
        self.assertEqual(b.total_q, 3)
        self.assertEqual(b.total_kv, 61)
        self.assertEqual(b.q_float().shape, (3, 4, 64))
        self.assertEqual(b.tensors["k_cache"].shape, (b.num_pages, 8, 2, 64))
        self.assertEqual(self.batches["hnd"].tensors["k_cache"].shape, (b.num_pages, 2, 8, 64))
        self.assertEqual(self.batches["vllm"].tensors["k_cache"].shape, (b.num_pages, 2, 8, 8, 8))
        self.assertEqual(self.batches["vllm"].tensors["v_cache"].shape, (b.num_pages, 2, 64, 8))
        self.assertEqual(b.reference.shape, (3, 4, 64))
        self.assertEqual(b.tolerance, 5e-3)
        self.assertEqual(b.index["reference_oracle"], "cpu_reference")
        self.assertTrue(b.decode_only)
        self.assertEqual(b.features(), ["causal"])
        # Q is bf16 uniform in [-3, 3): finite, not all equal.
        q = b.q_float()
        self.assertTrue(np.all(np.isfinite(q)) and np.all(np.abs(q) <= 3) and q.std() > 0.5)

    def test_bf16_conversion_round_trips(self):
        values = np.array([0.0, 1.0, -2.5, 3.140625, 1e-3, np.nan], dtype=np.float32)
        bits = batch_module.float32_to_bf16(values)
        back = batch_module.bf16_to_float32(bits)
        self.assertTrue(np.array_equal(back[:4], values[:4]))
        self.assertAlmostEqual(float(back[4]), 1e-3, delta=1e-5)
        self.assertTrue(np.isnan(back[5]))

    def test_fp8_table_matches_the_format(self):
        t = batch_module.FP8_E4M3_TABLE
        self.assertEqual(t[0x00], 0.0)
        self.assertEqual(t[0x38], 1.0)       # exponent 7 = bias, mantissa 0
        self.assertEqual(t[0x7E], 448.0)     # the largest finite
        self.assertEqual(t[0x01], 2.0 ** -9)  # the smallest subnormal
        self.assertEqual(t[0xB8], -1.0)
        self.assertTrue(np.isnan(t[0x7F]) and np.isnan(t[0xFF]))

    # --- refusals -------------------------------------------------------------------------------
    def test_changed_bytes_are_refused_by_their_hash(self):
        d = self.copy_dump("nhd")
        path = os.path.join(d, "batch.safetensors")
        with open(path, "r+b") as f:
            (n,) = np.frombuffer(f.read(8), dtype="<u8")
            f.seek(8 + int(n) + 3)  # a byte of the first tensor's data
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0x40]))
        with self.assertRaisesRegex(batch_module.BatchError, "sha256"):
            batch_module.load(d)
        batch_module.load(d, check_hashes=False)  # the format itself is still fine

    def test_an_index_that_disagrees_is_refused(self):
        d = self.copy_dump("nhd")
        index_path = os.path.join(d, "batch.json")
        with open(index_path) as f:
            index = json.load(f)
        index["tensors"][0]["shape"] = [1, 2, 3]
        with open(index_path, "w") as f:
            json.dump(index, f)
        with self.assertRaisesRegex(batch_module.BatchError, "the index says"):
            batch_module.load(d)

    def test_another_batch_s_index_is_refused(self):
        d = self.copy_dump("nhd")
        shutil.copy(os.path.join(self.dirs["hnd"], "batch.json"), os.path.join(d, "batch.json"))
        with self.assertRaisesRegex(batch_module.BatchError, "different batches"):
            batch_module.load(d)

    def test_missing_and_truncated_files_are_refused(self):
        with self.assertRaisesRegex(batch_module.BatchError, "no such file"):
            batch_module.load(os.path.join(self.dumps.root, "nowhere"))
        d = self.copy_dump("nhd")
        path = os.path.join(d, "batch.safetensors")
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - 10)
        with self.assertRaisesRegex(batch_module.BatchError, "cover"):
            batch_module.load(d)

    def test_safetensors_reader_checks_the_format(self):
        header = json.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
        good = len(header).to_bytes(8, "little") + header + np.arange(2, dtype="<f4").tobytes()
        _, tensors = safetensors_file.parse(good)
        self.assertEqual(list(tensors["a"].array()), [0.0, 1.0])
        with self.assertRaisesRegex(safetensors_file.SafetensorsError, "needs 8"):
            bad = header.replace(b"[0, 8]", b"[0, 4]")
            safetensors_file.parse(len(bad).to_bytes(8, "little") + bad + b"\0" * 4)
        with self.assertRaisesRegex(safetensors_file.SafetensorsError, "does not fit"):
            safetensors_file.parse((1 << 40).to_bytes(8, "little") + header)
        with self.assertRaisesRegex(safetensors_file.SafetensorsError, "unknown dtype"):
            odd = header.replace(b"F32", b"Q32")
            safetensors_file.parse(len(odd).to_bytes(8, "little") + odd + b"\0" * 8)

    def test_hashes_are_those_of_the_index(self):
        b = self.batches["fp8"]
        for entry in b.index["tensors"]:
            self.assertEqual(hashlib.sha256(b.tensors[entry["name"]].raw).hexdigest(),
                             entry["sha256"])

    # --- layouts, pages, fp8 ------------------------------------------------------------------
    def test_gathered_kv_is_the_same_in_every_layout_and_allocation(self):
        # An element's value depends only on its logical index (workloads/data_rule.hpp): the
        # same spec in another layout or page order must gather to the same keys and values.
        base = self.batches["nhd"]
        for key in ("hnd", "vllm", "sequential"):
            other = self.batches[key]
            for stream in ("k", "v"):
                a, b = base.gather_all(stream), other.gather_all(stream)
                self.assertEqual(a.shape, (61, 2, 64))
                self.assertTrue(np.array_equal(a, b), f"{key} {stream} differs from NHD")
                self.assertTrue(np.all(np.isfinite(a)), "a gathered slot is unowned (NaN)")

    def test_gather_follows_the_page_table(self):
        b = self.batches["nhd"]
        pool = b.pool_nhd("k")
        for s in range(b.num_seqs):
            pages = b.pages_of(s)
            rows = b.gather(pool, s)
            for position in (0, b.kv_lens[s] - 1):
                page, offset = pages[position // b.page_size], position % b.page_size
                self.assertTrue(np.array_equal(rows[position], pool[page, offset]))
        # The pool holds NaN where no sequence owns a slot: a wrong page would bring it in.
        self.assertTrue(np.isnan(pool).any())

    def test_fp8_codes_times_scales(self):
        for key in ("fp8", "fp8_tensor"):
            b = self.batches[key]
            self.assertEqual(b.tensors["k_cache"].dtype, "F8_E4M3")
            scales = b.kv_scales("k")
            self.assertEqual(scales.shape, (2,))
            raw = b.pool_nhd_raw("k")
            values = b.pool_nhd("k")
            owned = np.isfinite(values)
            expected = batch_module.fp8_e4m3_to_float32(raw) * scales[None, None, :, None]
            self.assertTrue(np.array_equal(values[owned], expected[owned]))
        self.assertEqual(self.batches["fp8_tensor"].array("k_scales").size, 1)

    # --- masks and the reference -----------------------------------------------------------------
    def test_numpy_attention_over_gathered_kv_reproduces_the_reference(self):
        for key, b in self.batches.items():
            with self.subTest(workload=key):
                v = verify.verify(support.numpy_attention(b), b.reference, 1e-5)
                self.assertTrue(verify.passed(v), f"{key}: {verify.describe(v)}")

    def test_causal_is_bottom_right_aligned(self):
        b = self.batches["prefix"]
        vis = b.visible(0, 0)  # context 9, 6 new tokens: token i sees keys 0 .. 9 + i
        self.assertEqual(vis.shape, (6, 15))
        for i in range(6):
            self.assertEqual(int(vis[i].sum()), 10 + i)
            self.assertTrue(vis[i, 9 + i] and (i == 5 or not vis[i, 10 + i]))
        # A wrong (top-left) alignment must fail the reference check.
        wrong = support.numpy_attention(b)
        rows = slice(0, 6)
        q, k, v = b.q_float()[rows, 0], b.gather(b.pool_nhd("k"), 0)[:, 0], b.gather(b.pool_nhd("v"), 0)[:, 0]
        logits = b.softmax_scale * q.astype(np.float64) @ k.T.astype(np.float64)
        logits = np.where(np.tril(np.ones((6, 15), dtype=bool)), logits, -np.inf)
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        wrong[rows, 0] = (p @ v) / p.sum(axis=1, keepdims=True)
        self.assertFalse(verify.passed(verify.verify(wrong, b.reference, 5e-3)))

    def test_block_sparse_and_tree_masks(self):
        b = self.batches["block_sparse"]
        layout = b.block_layout_dense()
        self.assertEqual(layout.shape, (4, 5, 5))
        self.assertFalse(np.array_equal(layout[0], layout[1]), "heads slide their columns")
        vis = b.visible(0, 0, layout)
        self.assertTrue(vis[39, 39] and not vis[0, 1])
        t = self.batches["tree"]
        vis = t.visible(0, 0)  # parents [-1, 0, 0]: node 2 sees the context, node 0 and itself
        self.assertEqual(vis.shape, (3, 13))
        self.assertEqual(list(vis[2, 10:]), [True, False, True])
        self.assertTrue(vis[2, :10].all())


if __name__ == "__main__":
    unittest.main()
