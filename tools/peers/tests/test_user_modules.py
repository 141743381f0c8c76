"""User peer modules (--peer-module) on the CPU with fake modules: each config of a module's space
is its own record with its config key, a config that computes a wrong result is incorrect, a
module that raises on import or breaks the protocol stops the runner with exit code 3 before
anything runs, and `attn-bench peers import` stores one row per config."""
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import unittest

import support
from attn_peers import user_modules

PYTHON = sys.executable

# A CPU peer over a two-axis space: block_n=16 returns the dump's reference rounded to bf16
# (passes), block_n=32 the same with every value 10% high (incorrect); num_warps=8 is declined.
FAKE_MODULE = textwrap.dedent('''
    import numpy as np
    from attn_peers import batch as batch_module
    from attn_peers.peers.base import Case

    class FakeDecode:
        name = "fake_decode"
        device = "cpu"
        summary = "a fake user peer for the tests"
        space = {"block_n": [16, 32], "num_warps": [4, 8]}

        def declines(self, batch, config):
            return "8 warps are not written yet" if config["num_warps"] == 8 else None

        def prepare(self, batch, env, config):
            scale = 1.1 if config["block_n"] == 32 else 1.0
            reference = np.array(batch.reference, dtype=np.float32) * scale
            result = []
            def call():
                result[:] = [batch_module.bf16_to_float32(batch_module.float32_to_bf16(reference))]
            return Case(call, lambda: result[0], {"library": "fake"})

    def peers():
        return [FakeDecode()]
''')

# The same peer returning its result the way a GPU kernel's Case does: a tensor-like object on a
# device, which numpy cannot read directly (as torch's CUDA tensors refuse __array__).
DEVICE_TENSOR_MODULE = textwrap.dedent('''
    import numpy as np
    from attn_peers.peers.base import Case

    class DeviceTensor:
        def __init__(self, host, on_host=False):
            self.host, self.on_host = host, on_host
        def __array__(self, *args, **kwargs):
            if not self.on_host:
                raise TypeError("can't convert cuda:0 device type tensor to numpy")
            return np.asarray(self.host, *args)
        @property
        def shape(self):
            return self.host.shape
        def detach(self):
            return self
        def float(self):
            return DeviceTensor(self.host.astype(np.float32), self.on_host)
        def cpu(self):
            return DeviceTensor(self.host, True)
        def numpy(self):
            assert self.on_host, "numpy() of a tensor on a device"
            return self.host

    class TensorDecode:
        name = "tensor_decode"
        device = "cpu"
        def prepare(self, batch, env, config):
            reference = np.array(batch.reference, dtype=np.float32)
            return Case(lambda: None, lambda: DeviceTensor(reference), {"library": "fake"})

    def peers():
        return [TensorDecode()]
''')


def read_rows(path):
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return [r for r in lines[1:] if r["variant"].startswith("peer.user.")]


class UserModuleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        support.require_binary(cls)
        cls.dumps = support.Dumps()
        cls.spec = support.workload("user-peers-decode")
        cls.workload_path = cls.dumps.write_workload(cls.spec)
        cls.dump = cls.dumps.dump(cls.spec)

    @classmethod
    def tearDownClass(cls):
        cls.dumps.close()

    def module(self, name, text):
        path = os.path.join(self.dumps.root, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def runner(self, *modules, check=True):
        out = os.path.join(self.dumps.root, "user-results.jsonl")
        args = [PYTHON, support.RUNNER, self.dump, "--out", out, "--device", "cpu", "--policy",
                "screen", "--peers", "peer.user.*"]
        for m in modules:
            args += ["--peer-module", m]
        return support.run(args, check=check), out

    def test_each_config_is_a_record_with_its_key(self):
        result, out = self.runner(self.module("fake_peers.py", FAKE_MODULE))
        rows = {r["config_key"]: r for r in read_rows(out)}
        self.assertEqual(sorted(rows), ["block_n=16,num_warps=4", "block_n=16,num_warps=8",
                                        "block_n=32,num_warps=4", "block_n=32,num_warps=8"])
        for r in rows.values():
            self.assertEqual(r["variant"], "peer.user.fake_peers.fake_decode")
            self.assertEqual(r["library"], "user.fake_peers")
        self.assertEqual(rows["block_n=16,num_warps=4"]["disposition"], "passed")
        self.assertEqual(rows["block_n=16,num_warps=4"]["config"],
                         {"library": "fake", "block_n": 16, "num_warps": 4})
        self.assertEqual(rows["block_n=32,num_warps=4"]["disposition"], "incorrect")
        self.assertEqual(rows["block_n=16,num_warps=8"]["disposition"], "unsupported")
        self.assertEqual(rows["block_n=16,num_warps=8"]["reason"], "8 warps are not written yet")

    def test_an_output_on_a_device_is_copied_to_the_host_and_verified(self):
        _, out = self.runner(self.module("tensor_peers.py", DEVICE_TENSOR_MODULE))
        rows = read_rows(out)
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["disposition"], "passed", rows[0].get("reason"))
        self.assertEqual(rows[0]["verification"]["rel_l2_error"], 0.0)

    def test_a_module_that_raises_on_import_is_invalid_input(self):
        bad = self.module("raises.py", "raise RuntimeError('no triton here')\n")
        result, _ = self.runner(bad, check=False)
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertIn("raises.py: importing it raised RuntimeError: no triton here", result.stderr)

    def test_protocol_mistakes_are_invalid_input(self):
        cases = {
            "no_peers.py": ("x = 1\n", "defines no peers() function"),
            "bad_name.py": ("class P:\n    name = 'Bad-Name'\n    def prepare(self, b, e, c): pass\n"
                            "def peers():\n    return [P()]\n", "name must be lower-case"),
            "bad_space.py": ("class P:\n    name = 'p'\n    space = {'block_n': [16, 1.5]}\n"
                             "    def prepare(self, b, e, c): pass\n"
                             "def peers():\n    return [P()]\n",
                             "space['block_n'] must be a non-empty list of integers"),
            "no_prepare.py": ("class P:\n    name = 'p'\n"
                              "def peers():\n    return [P()]\n", "has no prepare"),
        }
        for name, (text, message) in cases.items():
            with self.subTest(name):
                result, _ = self.runner(self.module(name, text), check=False)
                self.assertEqual(result.returncode, 3, result.stderr)
                self.assertIn(message, result.stderr)
        with self.assertRaises(user_modules.ModuleError):
            user_modules.load(os.path.join(self.dumps.root, "Capital.py"))

    def test_import_stores_one_row_per_config(self):
        _, out = self.runner(self.module("fake_peers.py", FAKE_MODULE))
        db = os.path.join(self.dumps.root, "user-peers.db")
        support.run([support.BINARY, "run", self.workload_path, "--cpu", "--db", db, "--policy",
                     "screen"])
        result = support.run([support.BINARY, "peers", "import", out, "--db", db], check=False)
        self.assertIn(result.returncode, (0, 5), result.stderr)  # 5: the incorrect config
        with sqlite3.connect(db) as c:
            rows = dict(c.execute("SELECT config_key, disposition FROM measurements "
                                  "WHERE variant = 'peer.user.fake_peers.fake_decode'"))
        self.assertEqual(rows["block_n=16,num_warps=4"], "passed")
        self.assertEqual(rows["block_n=32,num_warps=4"], "incorrect")

    def test_attn_bench_peers_refuses_a_missing_module_before_anything(self):
        db = os.path.join(self.dumps.root, "never.db")
        result = support.run([support.BINARY, "peers", self.workload_path, "--cpu", "--db", db,
                              "--peer-module", os.path.join(self.dumps.root, "nowhere.py")],
                             check=False)
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertIn("--peer-module: cannot open the file", result.stderr)
        self.assertFalse(os.path.exists(db))

    def test_attn_bench_peers_refuses_a_module_that_raises_before_anything(self):
        db = os.path.join(self.dumps.root, "never-raises.db")
        bad = self.module("raises_too.py", "import no_such_module_anywhere\n")
        result = support.run([support.BINARY, "peers", self.workload_path, "--cpu", "--db", db,
                              "--python", PYTHON, "--peer-module", bad], check=False)
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        self.assertIn("raises_too.py: importing it raised ModuleNotFoundError", result.stderr)
        self.assertFalse(os.path.exists(db))

    def test_attn_bench_peers_runs_a_module_in_one_run(self):
        db = os.path.join(self.dumps.root, "one-run.db")
        result = support.run([support.BINARY, "peers", self.workload_path, "--cpu", "--db", db,
                              "--python", PYTHON, "--policy", "screen", "--peers", "peer.user.*",
                              "--peer-module",
                              self.module("fake_peers.py", FAKE_MODULE)], check=False)
        self.assertEqual(result.returncode, 5, result.stdout + result.stderr)  # block_n=32
        with sqlite3.connect(db) as c:
            rows = dict(c.execute("SELECT config_key, disposition FROM measurements "
                                  "WHERE variant = 'peer.user.fake_peers.fake_decode'"))
        self.assertEqual(rows["block_n=16,num_warps=4"], "passed")
        self.assertEqual(rows["block_n=32,num_warps=4"], "incorrect")


if __name__ == "__main__":
    unittest.main()
