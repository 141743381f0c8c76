"""A V head dim narrower than Q/K's (model.v_head_dim; DeepSeek's Q/K 192 with V 128) through the
peer runner, on real dumps of `attn-bench workload dump`: the loader's shapes in every KV layout,
numpy attention over the gathered keys and values against the dump's reference_out, an old index
without v_head_dim, an index whose v_head_dim disagrees with the tensors, the runner's output-shape
check, and which peers decline such a batch and why (the declines need no torch or GPU)."""
import json
import os
import shutil
import sys
import types
import unittest
from unittest import mock

import numpy as np

import support
from attn_peers import batch as batch_module
from attn_peers import runner, timing, verify
from attn_peers.peers import all_peers
from attn_peers.peers.base import Case, Environment, Peer

PYTHON = sys.executable
PREFILL = [{"context_len": 9, "query_len": 6, "count": 2}, {"context_len": 0, "query_len": 7,
                                                            "count": 1}]
DECODE = [{"context_len": 20, "query_len": 1, "count": 3}]


def narrow(name, **kwargs):
    kwargs.setdefault("sequences", PREFILL)
    return support.workload(name, head_dim=192, v_head_dim=128, **kwargs)


def fake_flashinfer(takes_head_dim_vo):
    """A stand-in `flashinfer` module whose wrappers' plan() has the signature of a FlashInfer
    with (or without) head_dim_vo: what the peers read to decide."""
    module = types.ModuleType("flashinfer")
    if takes_head_dim_vo:
        def plan(self, qo_indptr, paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len,
                 num_qo_heads, num_kv_heads, head_dim_qk, page_size, head_dim_vo=None,
                 causal=False):
            raise AssertionError("declines() must not plan")
    else:
        def plan(self, qo_indptr, paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len,
                 num_qo_heads, num_kv_heads, head_dim, page_size, causal=False):
            raise AssertionError("declines() must not plan")
    for wrapper in ("BatchPrefillWithPagedKVCacheWrapper", "BatchDecodeWithPagedKVCacheWrapper"):
        setattr(module, wrapper, type(wrapper, (), {"plan": plan}))
    return module


class HeadDimWideOutputPeer(Peer):
    """Returns Q/K-wide rows where the output must be V-wide: the runner must call it incorrect
    before comparing with the reference."""
    name = "peer.test.head_dim_wide"
    library = "test"
    device = "cpu"

    def prepare(self, batch, env):
        out = np.zeros((batch.total_q, batch.num_q_heads, batch.head_dim), dtype=np.float32)
        return Case(lambda: None, lambda: out, {})


class NarrowVTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        support.require_binary(cls)
        cls.dumps = support.Dumps()
        cls.specs = {
            "nhd": narrow("narrow-v-nhd"),
            "hnd": narrow("narrow-v-hnd", layout="HND"),
            "vllm": narrow("narrow-v-vllm", layout="vllm"),
            "decode": narrow("narrow-v-decode", sequences=DECODE),
            "same": support.workload("same-v", head_dim=192, sequences=PREFILL),
        }
        cls.dirs = {key: cls.dumps.dump(spec) for key, spec in cls.specs.items()}
        cls.batches = {key: batch_module.load(d) for key, d in cls.dirs.items()}

    @classmethod
    def tearDownClass(cls):
        cls.dumps.close()

    def copy_dump(self, key, edit_index, tag=""):
        target = os.path.join(self.dumps.root, f"copy-{key}-{self.id().split('.')[-1]}{tag}")
        shutil.copytree(self.dirs[key], target)
        path = os.path.join(target, "batch.json")
        with open(path) as f:
            index = json.load(f)
        edit_index(index)
        with open(path, "w") as f:
            json.dump(index, f)
        return target

    # --- the loader ---------------------------------------------------------------------------
    def test_q_and_k_keep_head_dim_v_and_the_output_are_v_head_dim_wide(self):
        b = self.batches["nhd"]
        self.assertEqual((b.head_dim, b.v_head_dim), (192, 128))
        self.assertTrue(b.narrow_v)
        self.assertEqual(b.index["batch"]["v_head_dim"], 128)
        self.assertEqual(b.q_float().shape, (19, 4, 192))
        self.assertEqual(b.tensors["k_cache"].shape, (b.num_pages, 8, 2, 192))
        self.assertEqual(b.tensors["v_cache"].shape, (b.num_pages, 8, 2, 128))
        self.assertEqual(b.pool_nhd("k").shape, (b.num_pages, 8, 2, 192))
        self.assertEqual(b.pool_nhd("v").shape, (b.num_pages, 8, 2, 128))
        self.assertEqual(b.gather_all("k").shape, (b.total_kv, 2, 192))
        self.assertEqual(b.gather_all("v").shape, (b.total_kv, 2, 128))
        self.assertEqual(b.reference.shape, (19, 4, 128))
        self.assertEqual(b.output_shape, (19, 4, 128))
        self.assertIn("V head dim 128 < Q/K 192", b.features())
        same = self.batches["same"]
        self.assertEqual((same.head_dim, same.v_head_dim, same.narrow_v), (192, 192, False))
        self.assertEqual(same.reference.shape, (19, 4, 192))

    def test_every_layout_gives_v_pools_of_v_head_dim_and_the_same_values(self):
        hnd, vllm = self.batches["hnd"], self.batches["vllm"]
        P = hnd.num_pages
        self.assertEqual(hnd.tensors["v_cache"].shape, (P, 2, 8, 128))
        self.assertEqual(vllm.tensors["k_cache"].shape, (P, 2, 192 // 8, 8, 8))
        self.assertEqual(vllm.tensors["v_cache"].shape, (P, 2, 128, 8))
        base = self.batches["nhd"]
        for key in ("hnd", "vllm"):
            for stream, width in (("k", 192), ("v", 128)):
                a, b = base.gather_all(stream), self.batches[key].gather_all(stream)
                self.assertEqual(b.shape, (base.total_kv, 2, width))
                self.assertTrue(np.array_equal(a, b), f"{key} {stream} differs from NHD")
                self.assertTrue(np.all(np.isfinite(b)), "a gathered slot is unowned (NaN)")

    def test_numpy_attention_over_gathered_kv_reproduces_the_reference(self):
        for key in ("nhd", "hnd", "vllm", "decode"):
            b = self.batches[key]
            with self.subTest(workload=key):
                out = support.numpy_attention(b)
                self.assertEqual(out.shape, b.output_shape)
                v = verify.verify(out, b.reference, 1e-5)
                self.assertTrue(verify.passed(v), f"{key}: {verify.describe(v)}")
        # V's last 128 of 192 columns would be a different answer: the check can fail.
        b = self.batches["nhd"]
        wrong = support.numpy_attention(b)
        wrong[:, :, :64] = wrong[:, :, 64:]
        self.assertFalse(verify.passed(verify.verify(wrong, b.reference, 5e-3)))

    def test_an_index_without_v_head_dim_loads_with_v_as_wide_as_q(self):
        # Dumps written before v_head_dim existed have no key: V is head_dim wide.
        d = self.copy_dump("same", lambda index: index["batch"].pop("v_head_dim"))
        b = batch_module.load(d)
        self.assertEqual(b.v_head_dim, 192)
        self.assertFalse(b.narrow_v)
        self.assertEqual(b.gather_all("v").shape, (b.total_kv, 2, 192))

    def test_an_index_whose_v_head_dim_disagrees_with_the_tensors_is_refused(self):
        d = self.copy_dump("nhd", lambda index: index["batch"].pop("v_head_dim"))
        with self.assertRaisesRegex(batch_module.BatchError, r"v_cache has shape \[.*, 128\]"):
            batch_module.load(d)
        d = self.copy_dump("nhd", lambda index: index["batch"].update(v_head_dim=256),
                           "-256")
        with self.assertRaisesRegex(batch_module.BatchError, "v_head_dim 256 is not in"):
            batch_module.load(d)

    # --- the runner ---------------------------------------------------------------------------
    def test_runner_verifies_v_head_dim_wide_outputs(self):
        results = os.path.join(self.dumps.root, "narrow-results.jsonl")
        r = support.run([PYTHON, support.RUNNER, self.dirs["nhd"], "--out", results, "--device",
                         "cpu", "--policy", "screen"], env={"ATTN_PEERS_TEST_PEERS": "1"})
        with open(results) as f:
            rows = {row["variant"]: row for row in map(json.loads, f.read().splitlines()[1:])}
        self.assertEqual(rows["peer.test.reference"]["disposition"], "passed", r.stdout)
        self.assertEqual(rows["peer.test.reference"]["verification"]["elements"], 19 * 4 * 128)
        self.assertEqual(rows["peer.test.wrong"]["disposition"], "incorrect")
        self.assertEqual(rows["peer.torch.sdpa_efficient"]["disposition"], "unsupported")

    def test_an_output_of_the_wrong_width_is_incorrect(self):
        b = self.batches["nhd"]
        record = runner.run_peer(HeadDimWideOutputPeer(), b, Environment(0, want_cuda=False),
                                 timing.policy_from("screen"), log=lambda line: None)
        self.assertEqual(record["disposition"], "incorrect")
        self.assertIn("output shape [19, 4, 192] is not [total_q, num_q_heads, v_head_dim] = "
                      "[19, 4, 128]", record["reason"])
        self.assertIsNone(record["timing"])

    # --- which peers take a narrower V ----------------------------------------------------------
    def declines(self, key, flashinfer=None):
        """{peer name: its declines() on the batch}, with `flashinfer` as the installed module
        (None: whatever this machine has, normally none)."""
        modules = {"flashinfer": flashinfer} if flashinfer is not None else {}
        with mock.patch.dict(sys.modules, modules):
            return {p.name: p.declines(self.batches[key]) for p in all_peers()}

    def test_torch_peers_that_cannot_take_a_narrower_v_decline_it(self):
        reasons = self.declines("nhd")
        self.assertRegex(reasons["peer.torch.sdpa_flash"],
                         "V head dim 128 narrower than Q/K's 192: the flash backend needs one "
                         "head dim")
        self.assertRegex(reasons["peer.torch.sdpa_cudnn"],
                         "V head dim 128 narrower than Q/K's 192: not attempted with the cuDNN")
        # SDPA's efficient backend and FlexAttention take value [..., Ev]: they run the batch.
        for name in ("peer.torch.sdpa_efficient", "peer.torch.flex", "peer.torch.flex_paged"):
            self.assertIsNone(reasons[name], name)
        # The same batch with V as wide as Q/K: none of them declines.
        same = self.declines("same")
        for name in ("peer.torch.sdpa_flash", "peer.torch.sdpa_cudnn"):
            self.assertIsNone(same[name], name)

    def test_flashinfer_declines_a_narrower_v_unless_its_plan_takes_head_dim_vo(self):
        without = self.declines("nhd", fake_flashinfer(takes_head_dim_vo=False))
        self.assertEqual(without["peer.flashinfer.prefill"],
                         "V head dim 128 narrower than Q/K's 192: this FlashInfer's "
                         "BatchPrefillWithPagedKVCacheWrapper.plan takes no head_dim_vo (one "
                         "head dim for Q, K and V)")
        self.assertIsNone(self.declines("nhd", fake_flashinfer(True))["peer.flashinfer.prefill"])
        decode_without = self.declines("decode", fake_flashinfer(False))
        self.assertIn("BatchDecodeWithPagedKVCacheWrapper.plan takes no head_dim_vo",
                      decode_without["peer.flashinfer.decode"])
        self.assertIsNone(self.declines("decode", fake_flashinfer(True))["peer.flashinfer.decode"])
        # V as wide as Q/K: the signature is not consulted.
        self.assertIsNone(self.declines("same", fake_flashinfer(False))["peer.flashinfer.prefill"])

    def test_flashinfer_declines_a_narrower_v_when_it_cannot_tell(self):
        broken = types.ModuleType("flashinfer")  # no wrappers: nothing to read a plan from
        reason = self.declines("nhd", broken)["peer.flashinfer.prefill"]
        self.assertIn("cannot tell whether this FlashInfer's "
                      "BatchPrefillWithPagedKVCacheWrapper.plan takes head_dim_vo", reason)


if __name__ == "__main__":
    unittest.main()
