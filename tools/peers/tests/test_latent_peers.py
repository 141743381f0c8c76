"""Latent (multi-head latent attention) batches in the peer runner, on the CPU: the dump's latent
pool is read (widths, fp8 scale, features); peers that run standard attention are declined with
the reason; a peer that declares latent = True runs and is verified against the reference;
peer.torch.mla_sdpa declines standard batches; peer.flashinfer.mla declines what it does not plan
and is unavailable without FlashInfer's MLA wrapper. Running the latent peers themselves needs a
GPU (`attn-bench peers` on a latent preset)."""
import json
import os
import sys
import types
import unittest
from unittest import mock

import numpy as np

import support
from attn_peers import batch as batch_module
from attn_peers import runner
from attn_peers.peers import flashinfer_mla, torch_mla
from attn_peers.peers.base import Peer

PYTHON = sys.executable


def latent_workload(name, kv_dtype=None):
    model = {"attention": "mla", "num_q_heads": 4, "kv_lora_rank": 64, "qk_rope_head_dim": 16,
             "dtype": "bf16"}
    if kv_dtype:
        model["kv_dtype"] = kv_dtype
    return {"schema_version": 2, "name": name, "model": model,
            "kv_cache": {"page_size": 8, "layout": "NHD", "allocation": "shuffled"},
            "sequences": [{"context_len": 13, "query_len": 1}, {"context_len": 30, "query_len": 3},
                          {"context_len": 0, "query_len": 2}],
            "seed": 5}


class StandardPeer(Peer):
    """A peer of standard attention that would run anywhere: the runner must decline it first."""
    name = "peer.test.standard"
    library = "test"
    device = "cpu"

    def declines(self, batch):
        return None

    def prepare(self, batch, env):
        raise AssertionError("a latent batch reached a peer of standard attention")


class LatentPeersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        support.require_binary(cls)
        cls.dumps = support.Dumps()
        cls.bf16 = batch_module.load(cls.dumps.dump(latent_workload("latent-bf16")))
        cls.fp8 = batch_module.load(cls.dumps.dump(latent_workload("latent-fp8", "fp8_e4m3")))
        cls.standard = batch_module.load(cls.dumps.dump(support.workload("standard-decode")))

    @classmethod
    def tearDownClass(cls):
        cls.dumps.close()

    def test_the_latent_pool_is_read_with_its_widths(self):
        b = self.bf16
        self.assertTrue(b.latent)
        self.assertEqual((b.kv_lora_rank, b.qk_rope_head_dim, b.head_dim, b.v_head_dim),
                         (64, 16, 80, 64))
        self.assertEqual(b.output_shape, (6, 4, 64))
        self.assertEqual(b.latent_nhd().shape, (b.num_pages, 8, 80))
        self.assertIn("latent attention", b.features())
        self.assertFalse(self.standard.latent)

    def test_an_fp8_latent_pool_is_scaled(self):
        raw = batch_module.to_float32(self.fp8.array("latent_cache"),
                                      self.fp8.tensors["latent_cache"].dtype)
        scale = float(self.fp8.array("latent_scale")[0])
        self.assertNotEqual(scale, 1.0)
        np.testing.assert_array_equal(self.fp8.latent_nhd(), raw * scale)

    def test_peers_of_standard_attention_are_declined_with_the_reason(self):
        record = runner.run_peer(StandardPeer(), self.bf16, None, {}, log=lambda *_: None)
        self.assertEqual(record["disposition"], "unsupported")
        self.assertIn("multi-head latent attention", record["reason"])

    def test_the_torch_mla_peer_declines_standard_attention(self):
        reason = torch_mla.MlaSdpaPeer().declines(self.standard)
        self.assertIn("multi-head latent attention only", reason)
        self.assertIsNone(torch_mla.MlaSdpaPeer().declines(self.bf16))

    def test_the_flashinfer_mla_peer_declines_what_it_does_not_plan(self):
        peer = flashinfer_mla.FlashInferMla()
        self.assertTrue(peer.latent)
        self.assertIn("multi-head latent attention only", peer.declines(self.standard))
        self.assertEqual(peer.declines(self.fp8),
                         "latent cache fp8_e4m3: this peer plans a cache of Q's dtype (bf16) only")
        self.assertIsNone(peer.declines(self.bf16))

    def test_the_flashinfer_mla_peer_needs_flashinfers_mla_wrapper(self):
        class TorchHere:
            def torch_unavailable(self):
                return None

        peer, env = flashinfer_mla.FlashInferMla(), TorchHere()
        with mock.patch.dict(sys.modules, {"flashinfer": None}):
            self.assertIn("flashinfer is not installed", peer.unavailable(env))
        without_mla = types.ModuleType("flashinfer")
        with mock.patch.dict(sys.modules, {"flashinfer": without_mla}):
            self.assertEqual(peer.unavailable(env), "this flashinfer has no "
                             "flashinfer.mla.BatchMLAPagedAttentionWrapper")
        mla = types.ModuleType("flashinfer.mla")
        mla.BatchMLAPagedAttentionWrapper = type("BatchMLAPagedAttentionWrapper", (), {})
        with mock.patch.dict(sys.modules, {"flashinfer": without_mla, "flashinfer.mla": mla}):
            self.assertIsNone(peer.unavailable(env))

    def test_a_latent_peer_runs_and_is_verified_against_the_reference(self):
        out = os.path.join(self.dumps.root, "latent-results.jsonl")
        support.run([PYTHON, support.RUNNER, self.bf16.directory, "--out", out, "--device", "cpu",
                     "--policy", "screen", "--test-peers", "--peers", "peer.test.*"])
        with open(out) as f:
            rows = {r["variant"]: r for r in map(json.loads, f.read().splitlines()[1:])}
        self.assertEqual(rows["peer.test.reference"]["disposition"], "passed")
        self.assertEqual(rows["peer.test.wrong"]["disposition"], "incorrect")


if __name__ == "__main__":
    unittest.main()
