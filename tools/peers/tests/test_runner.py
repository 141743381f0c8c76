"""The peer runner end to end on the CPU, with the test peers (peer.test.reference returns the
dump's reference, peer.test.wrong the same with one row off), and the database writer:
`attn-bench peers import` records them beside `attn-bench run`'s rows, where `attn-tune compare`
finds both; and `attn-bench peers --cpu` does dump, runner, import and our variants in one run."""
import json
import os
import sqlite3
import subprocess
import time
import sys
import unittest

import numpy as np

import support
from attn_peers import runner, timing, verify
from attn_peers.peers import all_peers

PYTHON = sys.executable
TEST_PEERS = {"ATTN_PEERS_TEST_PEERS": "1"}


def read_results(path):
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return lines[0], {r["variant"]: r for r in lines[1:]}


class VerifyAndTimingTest(unittest.TestCase):
    def test_rows_are_checked_one_by_one(self):
        ref = np.ones((4, 2, 8), dtype=np.float32)
        v = verify.verify(ref, ref, 5e-3)
        self.assertTrue(verify.passed(v))
        self.assertEqual((v["rel_l2_error"], v["nonfinite"], v["elements"]), (0.0, 0, 64))
        out = ref.copy()
        out[3, 1] *= 1.01  # one row of 8 off by 1%: the whole tensor by much less
        v = verify.verify(out, ref, 5e-3)
        self.assertAlmostEqual(v["rel_l2_error"], 0.01, places=6)
        self.assertFalse(verify.passed(v))
        out = ref.copy()
        out[0, 0, 0] = np.nan
        v = verify.verify(out, ref, 5e-3)
        self.assertEqual(v["nonfinite"], 1)
        self.assertFalse(verify.passed(v))
        zero = np.zeros_like(ref)
        v = verify.verify(ref, zero, 5e-3)  # a zero reference row must be matched exactly
        self.assertEqual(v["rel_l2_error"], float("inf"))

    def test_sampling_stops_on_noise_or_caps(self):
        class Steady:
            name = "fake"

            def sample_us(self, call):
                call()
                return 10.0

        calls = []
        record = timing.measure(lambda: calls.append(1), timing.policy_from("confirm"), Steady())
        self.assertEqual(record["stop_reason"], "noise")
        self.assertEqual(len(record["samples_us"]), 20)  # min_samples of confirm
        self.assertEqual(record["warmup_samples"], 10)   # two windows of 5 that agree
        self.assertEqual(len(calls), 30)

        class Noisy(Steady):
            def __init__(self):
                self.rng = np.random.default_rng(1)

            def sample_us(self, call):
                return float(self.rng.uniform(5, 50))

        policy = timing.policy_from("screen")
        policy["max_samples"] = 40
        policy["noise"] = 1e-6
        record = timing.measure(lambda: None, policy, Noisy())
        self.assertEqual(record["stop_reason"], "max_samples")
        self.assertEqual(len(record["samples_us"]), 40)
        self.assertGreater(record["noise"], 0.01)

    def test_policy_from_json_is_checked(self):
        policy = timing.policy_from("confirm")
        policy["min_samples"] = 0
        with self.assertRaises(ValueError):
            timing.policy_from(policy)
        with self.assertRaises(ValueError):
            timing.policy_from("thorough")

    def test_peer_names_and_selection(self):
        names = [p.name for p in all_peers(include_test=True)]
        self.assertIn("peer.torch.sdpa_flash", names)
        self.assertIn("peer.torch.flex_paged", names)
        self.assertIn("peer.flashinfer.decode", names)
        self.assertTrue(all(n.startswith("peer.") for n in names))
        self.assertEqual(len(names), len(set(names)))
        chosen = runner.select(all_peers(True), "peer.test.*,peer.torch.sdpa_flash")
        self.assertEqual([p.name for p in chosen],
                         ["peer.torch.sdpa_flash", "peer.test.reference", "peer.test.wrong"])
        with self.assertRaisesRegex(ValueError, "matches no peer"):
            runner.select(all_peers(True), "peer.cutlass.*")


class RunnerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        support.require_binary(cls)
        cls.dumps = support.Dumps()
        cls.spec = support.workload("peers-decode")
        cls.workload_path = cls.dumps.write_workload(cls.spec)
        cls.dump = cls.dumps.dump(cls.spec)
        cls.results = os.path.join(cls.dumps.root, "results.jsonl")
        cls.runner_output = support.run([PYTHON, support.RUNNER, cls.dump, "--out", cls.results,
                               "--device", "cpu", "--policy", "screen"], env=TEST_PEERS)
        cls.header, cls.rows = read_results(cls.results)

    @classmethod
    def tearDownClass(cls):
        cls.dumps.close()

    def test_results_file_header(self):
        h = self.header
        self.assertEqual(h["format"], "attn-bench peer results")
        with open(os.path.join(self.dump, "batch.json")) as f:
            index = json.load(f)
        self.assertEqual(h["spec_hash"], index["spec_hash"])
        self.assertEqual(h["spec"], index["spec"])
        self.assertEqual(h["device"], {"kind": "cpu"})
        self.assertEqual(h["policy"]["name"], "screen")
        self.assertEqual(h["tolerance"], 5e-3)

    def test_reference_peer_passes_and_is_timed(self):
        r = self.rows["peer.test.reference"]
        self.assertEqual(r["disposition"], "passed", r)
        self.assertTrue(r["verification"]["checked"])
        self.assertLess(r["verification"]["rel_l2_error"], 5e-3)
        self.assertGreater(r["verification"]["rel_l2_error"], 0)  # rounded to bf16
        self.assertEqual(r["timing"]["timer"], "cpu")
        self.assertGreaterEqual(len(r["timing"]["samples_us"]), 3)
        self.assertTrue(all(s > 0 for s in r["timing"]["samples_us"]))

    def test_wrong_peer_is_incorrect_and_not_timed(self):
        r = self.rows["peer.test.wrong"]
        self.assertEqual(r["disposition"], "incorrect")
        self.assertIsNone(r["timing"])
        self.assertGreater(r["verification"]["rel_l2_error"], 0.05)
        self.assertIn("incorrect: peer.test.wrong", self.runner_output.stdout)

    def test_gpu_peers_are_skipped_with_a_line_each(self):
        for name in ("peer.torch.sdpa_flash", "peer.torch.sdpa_cudnn", "peer.torch.sdpa_efficient",
                     "peer.torch.flex", "peer.torch.flex_paged", "peer.flashinfer.decode",
                     "peer.flashinfer.prefill"):
            self.assertEqual(self.rows[name]["disposition"], "unsupported")
            self.assertIn(f"skipped: {name}: ", self.runner_output.stdout)

    def test_bad_input_exit_codes(self):
        no_ref = self.dumps.dump(support.workload("no-reference"), ["--no-reference"])
        out = os.path.join(self.dumps.root, "r.jsonl")
        r = support.run([PYTHON, support.RUNNER, no_ref, "--out", out], check=False)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("no reference_out", r.stderr)
        r = support.run([PYTHON, support.RUNNER, os.path.join(self.dumps.root, "nothing"),
                         "--out", out], check=False)
        self.assertEqual(r.returncode, 3)
        r = support.run([PYTHON, support.RUNNER, self.dump, "--out", out, "--peers", "peer.x.*"],
                        check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("matches no peer", r.stderr)

    # --- the database writer ----------------------------------------------------------------
    def test_import_records_peers_beside_our_run(self):
        db = os.path.join(self.dumps.root, "import.db")
        ours = support.run([support.BINARY, "run", self.workload_path, "--cpu", "--db", db,
                            "--policy", "screen"])
        imported = support.run([support.BINARY, "peers", "import", self.results, "--db", db],
                               check=False)
        self.assertEqual(imported.returncode, 5, imported.stderr)  # peer.test.wrong is incorrect
        self.assertIn("peer.test.reference", imported.stdout)
        with sqlite3.connect(db) as c:
            rows = dict(c.execute(
                "SELECT m.variant, m.disposition FROM measurements m "
                "JOIN runs r ON r.id = m.run_id WHERE r.tool = 'attn-bench peers import'"))
            self.assertEqual(rows["peer.test.reference"], "passed")
            self.assertEqual(rows["peer.test.wrong"], "incorrect")
            self.assertEqual(rows["peer.torch.sdpa_flash"], "unsupported")
            # One workload row: the peers' spec hashes to what `attn-bench run` stored.
            self.assertEqual(c.execute("SELECT count(*) FROM workloads").fetchone()[0], 1)
            self.assertEqual(c.execute("SELECT count(*) FROM devices").fetchone()[0], 1)
            family, samples, median = c.execute(
                "SELECT family, sample_count, median_us FROM measurements "
                "WHERE variant = 'peer.test.reference'").fetchone()
            self.assertEqual(family, "paged_decode")
            self.assertGreaterEqual(samples, 3)
            self.assertGreater(median, 0)
            wrong_samples = c.execute("SELECT count(*) FROM samples s JOIN measurements m ON "
                                      "m.id = s.measurement_id WHERE m.variant = "
                                      "'peer.test.wrong'").fetchone()[0]
            self.assertEqual(wrong_samples, 0)
        compare = support.run([support.TUNE_BINARY, "compare", "--db", db, "--variant",
                               "paged_decode.*", "--variant", "peer.test.*", "--format", "json"])
        result = json.loads(compare.stdout)
        self.assertEqual(len(result["workloads"]), 1)
        w = result["workloads"][0]
        self.assertEqual(w["workload"], "peers-decode")
        self.assertEqual(w["a"]["variant"], "paged_decode.cpu_reference")
        self.assertEqual(w["b"]["variant"], "peer.test.reference")

    def test_peers_command_runs_everything_in_one_run(self):
        db = os.path.join(self.dumps.root, "peers.db")
        keep = os.path.join(self.dumps.root, "kept")
        r = support.run([support.BINARY, "peers", self.workload_path, "--cpu", "--db", db,
                         "--policy", "screen", "--peers", "peer.test.*,peer.torch.sdpa_flash",
                         "--python", PYTHON, "--keep-dump", keep], check=False, env=TEST_PEERS)
        self.assertEqual(r.returncode, 5, r.stdout + r.stderr)  # the wrong peer
        self.assertIn("skipped: peer.torch.sdpa_flash", r.stdout)
        for name in ("paged_decode.cpu_reference", "peer.test.reference", "peer.test.wrong"):
            self.assertIn(name, r.stdout)
        self.assertTrue(os.path.exists(os.path.join(keep, "dump", "batch.safetensors")))
        self.assertTrue(os.path.exists(os.path.join(keep, "runner", "tools", "peers", "run_peers.py")))
        with sqlite3.connect(db) as c:
            runs = c.execute("SELECT id, tool, status FROM runs").fetchall()
            self.assertEqual(len(runs), 1)
            self.assertEqual(runs[0][1:], ("attn-bench peers", "failed_cases"))
            variants = dict(c.execute("SELECT variant, disposition FROM measurements"))
        self.assertEqual(variants["paged_decode.cpu_reference"], "passed")
        self.assertEqual(variants["peer.test.reference"], "passed")
        self.assertEqual(variants["peer.test.wrong"], "incorrect")
        self.assertEqual(variants["prefix_prefill.cpu_reference"], "unsupported")
        # The peers were verified against the oracle that verified ours, written into the dump.
        with open(os.path.join(keep, "dump", "batch.json")) as f:
            self.assertEqual(json.load(f)["reference_oracle"], "naive_dense")

    def test_peers_command_passes_with_a_correct_peer(self):
        db = os.path.join(self.dumps.root, "ok.db")
        r = support.run([support.BINARY, "peers", self.workload_path, "--cpu", "--db", db,
                         "--policy", "screen", "--peers", "peer.test.reference",
                         "--python", PYTHON], check=False, env=TEST_PEERS)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # (status "unstable" when the loaded machine made the CPU timing noisy: still passed)
        self.assertRegex(r.stdout, r"peer\.test\.reference +peer +(passed|unstable)")

    def test_a_peer_past_its_deadline_is_stopped_and_the_rest_still_run(self):
        # peer.test.slow prepares for 120 s; with a 3 s deadline it is stopped, recorded as
        # timed_out, and the runner starts again on the peers after it. Our variants ran first.
        db = os.path.join(self.dumps.root, "deadline.db")
        keep = os.path.join(self.dumps.root, "deadline-folder")
        env = dict(TEST_PEERS, ATTN_PEERS_TEST_SLOW_SECONDS="120")
        started = time.monotonic()
        r = support.run([support.BINARY, "peers", self.workload_path, "--cpu", "--db", db,
                         "--policy", "screen", "--peers", "peer.test.*", "--peer-deadline", "3",
                         "--python", PYTHON, "--keep-dump", keep], check=False, env=env)
        elapsed = time.monotonic() - started
        self.assertLess(elapsed, 60, r.stdout + r.stderr)
        self.assertEqual(r.returncode, 5, r.stdout + r.stderr)  # the wrong peer
        self.assertRegex(r.stdout, r"peer\.test\.slow +peer +timed_out")
        self.assertIn("peer.test.slow: out of time: still running after its deadline of 3 s",
                      r.stdout)
        self.assertIn("1 peer(s) ran out of time", r.stderr)
        with sqlite3.connect(db) as c:
            rows = c.execute("SELECT variant, disposition FROM measurements ORDER BY id").fetchall()
        order = [v for v, _ in rows]
        dispositions = dict(rows)
        self.assertEqual(dispositions["peer.test.slow"], "timed_out")
        self.assertIn(dispositions["peer.test.reference"], ("passed",))
        self.assertEqual(dispositions["peer.test.wrong"], "incorrect")
        self.assertLess(order.index("paged_decode.cpu_reference"), order.index("peer.test.slow"))
        # The stopped runner is gone (its command line names the kept folder).
        left = subprocess.run(["pgrep", "-f", keep], capture_output=True, text=True)
        self.assertEqual(left.stdout, "")

    def test_a_negative_peer_deadline_is_a_usage_error(self):
        r = support.run([support.BINARY, "peers", self.workload_path, "--cpu", "--peer-deadline",
                         "-1", "--python", PYTHON], check=False, env=TEST_PEERS)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
