"""--peer-module on `attn-tune tune` and `attn-bench run`, on the CPU with a fake module: the tune
sweeps the module's declared space with the tuner's strategies through the peer runner and stores
one row per config as peer.user.<module>.<name> with its config key, so `attn-tune export` and
`compare` see it; `run` records each config beside ours; a module that raises on import exits 3
before any database is written."""
import json
import os
import sqlite3
import sys
import textwrap
import unittest

import support

PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# A CPU peer over a 3 x 2 space whose time grows with block_n (a sleep in the timed call), so the
# best config is known: block_n=16. num_warps=8 with block_n=64 is declined, and block_n=32 with
# num_warps=2 returns a wrong result.
SWEPT_MODULE = textwrap.dedent('''
    import time
    import numpy as np
    from attn_peers import batch as batch_module
    from attn_peers.peers.base import Case

    class Swept:
        name = "swept"
        device = "cpu"
        summary = "a fake user peer whose time grows with block_n"
        space = {"block_n": [16, 32, 64], "num_warps": [2, 8]}

        def declines(self, batch, config):
            if config["block_n"] == 64 and config["num_warps"] == 8:
                return "64 x 8 is not written yet"
            return None

        def prepare(self, batch, env, config):
            wrong = config["block_n"] == 32 and config["num_warps"] == 2
            reference = np.array(batch.reference, dtype=np.float32) * (1.1 if wrong else 1.0)
            rounded = batch_module.bf16_to_float32(batch_module.float32_to_bf16(reference))
            seconds = config["block_n"] * 2e-6
            result = []
            def call():
                time.sleep(seconds)
                result[:] = [rounded]
            return Case(call, lambda: result[0], {"library": "fake"})

    def peers():
        return [Swept()]
''')

VARIANT = "peer.user.swept_peers.swept"


class ModulePeersTuneTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        support.require_binary(cls)
        if not support.TUNE_BINARY or not os.path.exists(support.TUNE_BINARY):
            raise RuntimeError("set ATTN_TUNE_BINARY to the attn-tune binary (CTest does)")
        cls.dumps = support.Dumps()
        cls.workload_path = cls.dumps.write_workload(support.workload("module-peers-decode"))
        cls.module = os.path.join(cls.dumps.root, "swept_peers.py")
        with open(cls.module, "w") as f:
            f.write(SWEPT_MODULE)

    @classmethod
    def tearDownClass(cls):
        cls.dumps.close()

    def tune(self, db, *extra, module=None, check=False):
        return support.run([support.TUNE_BINARY, "tune", self.workload_path, "--cpu", "--db", db,
                            "--python", PYTHON, "--peer-module", module or self.module, *extra],
                           check=check)

    def rows(self, db, policy=None):
        query = "SELECT config_key, disposition, policy FROM measurements WHERE variant = ?"
        with sqlite3.connect(db) as c:
            return [r for r in c.execute(query, (VARIANT,)) if policy is None or r[2] == policy]

    def test_exhaustive_tune_records_one_row_per_config_and_export_lists_the_best(self):
        db = os.path.join(self.dumps.root, "tune-exhaustive.db")
        result = self.tune(db, "--strategy", "exhaustive")
        self.assertEqual(result.returncode, 5, result.stdout + result.stderr)  # the wrong config
        rows = {key: disposition for key, disposition, _ in self.rows(db)}
        self.assertEqual(len(self.rows(db)), 6, "one row per config, each measured once")
        self.assertEqual(sorted(rows), ["block_n=16,num_warps=2", "block_n=16,num_warps=8",
                                        "block_n=32,num_warps=2", "block_n=32,num_warps=8",
                                        "block_n=64,num_warps=2", "block_n=64,num_warps=8"])
        self.assertEqual(rows["block_n=16,num_warps=2"], "passed")
        self.assertEqual(rows["block_n=32,num_warps=2"], "incorrect")
        self.assertEqual(rows["block_n=64,num_warps=8"], "unsupported")
        self.assertIn(VARIANT + ": 6 configs", result.stdout)
        self.assertIn("winner", result.stdout)

        export = support.run([support.TUNE_BINARY, "export", "--db", db, "--variant",
                              "peer.user.*", "--format", "json"])
        document = json.loads(export.stdout)
        text = json.dumps(document)
        self.assertIn(VARIANT, text)
        self.assertRegex(text, r"block_n=16,num_warps=[28]|\"block_n\": 16")
        self.assertNotIn("block_n=64", text)

        # A rerun resumes: nothing is measured again.
        again = self.tune(db, "--strategy", "exhaustive")
        self.assertIn("0 measured, 6 from the database", again.stdout, again.stdout + again.stderr)
        self.assertEqual(len(self.rows(db)), 6)

    def test_halving_screens_every_config_then_confirms_some(self):
        db = os.path.join(self.dumps.root, "tune-halving.db")
        result = self.tune(db, "--strategy", "halving")
        self.assertIn(result.returncode, (0, 5), result.stdout + result.stderr)
        self.assertEqual(len(self.rows(db, "screen")), 6)
        confirmed = self.rows(db, "confirm")
        self.assertGreater(len(confirmed), 0)
        self.assertIn("block_n=16,num_warps=2", [key for key, _, _ in confirmed])

    def test_compare_puts_the_module_peer_beside_ours(self):
        db = os.path.join(self.dumps.root, "tune-compare.db")
        self.tune(db, "--strategy", "exhaustive")
        support.run([support.BINARY, "run", self.workload_path, "--cpu", "--db", db])
        compare = support.run([support.TUNE_BINARY, "compare", "--db", db, "--variant",
                               "paged_decode.cpu_reference", "--variant", VARIANT], check=False)
        self.assertEqual(compare.returncode, 0, compare.stdout + compare.stderr)
        self.assertIn("module-peers-decode", compare.stdout)

    def test_run_records_each_config_beside_ours(self):
        db = os.path.join(self.dumps.root, "run.db")
        result = support.run([support.BINARY, "run", self.workload_path, "--cpu", "--db", db,
                              "--policy", "screen", "--python", PYTHON, "--peer-module",
                              self.module], check=False)
        self.assertEqual(result.returncode, 5, result.stdout + result.stderr)  # the wrong config
        self.assertIn("paged_decode.cpu_reference", result.stdout)
        self.assertIn(VARIANT, result.stdout)
        rows = {key: disposition for key, disposition, _ in self.rows(db)}
        self.assertEqual(len(rows), 6)
        self.assertEqual(rows["block_n=16,num_warps=8"], "passed")
        self.assertEqual(rows["block_n=64,num_warps=8"], "unsupported")

    def test_a_module_that_raises_exits_3_before_any_database(self):
        bad = os.path.join(self.dumps.root, "raises_in_tune.py")
        with open(bad, "w") as f:
            f.write("raise RuntimeError('no triton here')\n")
        for command in ("tune", "run"):
            with self.subTest(command=command):
                db = os.path.join(self.dumps.root, f"never-{command}.db")
                if command == "tune":
                    result = self.tune(db, "--strategy", "exhaustive", module=bad)
                else:
                    result = support.run([support.BINARY, "run", self.workload_path, "--cpu",
                                          "--db", db, "--python", PYTHON, "--peer-module", bad],
                                         check=False)
                self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
                self.assertIn("raises_in_tune.py: importing it raised RuntimeError: no triton here",
                              result.stderr)
                self.assertFalse(os.path.exists(db))

    def test_a_module_that_breaks_the_protocol_exits_3_naming_the_file(self):
        bad = os.path.join(self.dumps.root, "no_peers_here.py")
        with open(bad, "w") as f:
            f.write("x = 1\n")
        db = os.path.join(self.dumps.root, "never-protocol.db")
        result = self.tune(db, "--strategy", "exhaustive", module=bad)
        self.assertEqual(result.returncode, 3, result.stdout + result.stderr)
        self.assertIn("no_peers_here.py: defines no peers() function", result.stderr)
        self.assertFalse(os.path.exists(db))


if __name__ == "__main__":
    unittest.main()
