"""The example Triton module (examples/user_kernels/triton_decode.py) without a GPU or Triton: the
runner lists its declared space, its declines() accepts the batches it implements and declines the
others with a reason, and prepare() says that Triton is missing instead of failing obscurely.
Running and tuning it needs a GPU (docs/user-kernels.md)."""
import importlib.util
import json
import os
import types
import unittest

import support
from attn_peers import user_modules

EXAMPLE = os.path.join(support.PEERS_DIR, "..", "..", "examples", "user_kernels",
                       "triton_decode.py")
PYTHON = support.sys.executable


def fake_batch(**changes):
    """What declines() reads of a dumped batch (attn_peers.batch.DumpedBatch), for a decode batch
    it implements; `changes` make it one it does not."""
    fields = dict(decode_only=True, dtype="bf16", kv_dtype="bf16", layout="NHD", head_dim=128,
                  num_q_heads=32, num_kv_heads=8, words=["causal"])
    fields.update(changes)
    words = fields.pop("words")
    batch = types.SimpleNamespace(**fields)
    batch.features = lambda: list(words)
    return batch


class TritonDecodeExampleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.runs = user_modules.load(os.path.abspath(EXAMPLE))
        cls.peer = cls.runs[0].declared
        cls.config = {"block_n": 64, "num_warps": 4, "num_stages": 2}

    def test_the_space_is_block_n_warps_and_stages(self):
        self.assertEqual(self.peer.space, {"block_n": [16, 32, 64, 128], "num_warps": [2, 4, 8],
                                           "num_stages": [1, 2, 3]})
        self.assertEqual(len(self.runs), 4 * 3 * 3)
        self.assertEqual({r.name for r in self.runs}, {"peer.user.triton_decode.paged_decode"})
        self.assertIn("peer.user.triton_decode.paged_decode@block_n=64,num_stages=2,num_warps=4",
                      [r.unit for r in self.runs])

    def test_the_runner_lists_every_config_without_triton(self):
        result = support.run([PYTHON, support.RUNNER, "--list-json", "--peer-module",
                              os.path.abspath(EXAMPLE)])
        listed = [e for e in json.loads(result.stdout.strip().splitlines()[-1])
                  if e["name"].startswith("peer.user.")]
        self.assertEqual(len(listed), 36)
        self.assertTrue(all(e["device"] == "cuda" for e in listed))
        self.assertEqual(listed[0]["config"], {"block_n": 16, "num_stages": 1, "num_warps": 2})

    def test_accepts_bf16_decode_on_nhd_and_hnd_pages(self):
        for layout in ("NHD", "HND"):
            for head_dim in (64, 128, 256):
                self.assertIsNone(self.peer.declines(fake_batch(layout=layout, head_dim=head_dim),
                                                     self.config), (layout, head_dim))
        self.assertIsNone(self.peer.declines(fake_batch(words=[]), self.config))  # non-causal

    def test_declines_what_it_does_not_implement_with_the_reason(self):
        cases = [
            (fake_batch(decode_only=False), "decode only"),
            (fake_batch(dtype="fp16", kv_dtype="fp16"), "bf16 only"),
            (fake_batch(kv_dtype="fp8_e4m3", words=["causal", "fp8 KV"]), "bf16 only"),
            (fake_batch(layout="vllm"), "NHD or HND"),
            (fake_batch(head_dim=96), "head_dim 64, 128 or 256"),
            (fake_batch(num_q_heads=12, num_kv_heads=8), "multiple of kv heads"),
            (fake_batch(words=["causal", "sliding window"]), "not sliding window"),
            (fake_batch(words=["soft-cap"]), "not soft-cap"),
            (fake_batch(words=["sinks"]), "not sinks"),
            (fake_batch(words=["explicit mask"]), "not explicit mask"),
            (fake_batch(words=["block-sparse"]), "not block-sparse"),
        ]
        for batch, reason in cases:
            declined = self.peer.declines(batch, self.config)
            self.assertIsNotNone(declined, reason)
            self.assertIn(reason, declined)

    def test_declines_a_config_whose_tiles_would_spill(self):
        spill = {"block_n": 128, "num_warps": 2, "num_stages": 1}
        self.assertIn("at least 4 warps", self.peer.declines(fake_batch(head_dim=256), spill))
        self.assertIsNone(self.peer.declines(fake_batch(head_dim=128), spill))

    def test_prepare_without_triton_says_so(self):
        if importlib.util.find_spec("triton") is not None:
            self.skipTest("triton is installed here")
        with self.assertRaisesRegex(RuntimeError, "triton is not installed"):
            self.peer.prepare(fake_batch(), types.SimpleNamespace(torch=None), self.config)


if __name__ == "__main__":
    unittest.main()
