"""scripts/bench/summary.py on a database that the attn-bench built here writes: two rounds of the
CPU backend's variant on a small decode batch and the CPU test peer beside it (attn-bench peers
--cpu), then the failed steps of a made-up steps file. ATTN_BENCH_BINARY names the binary (CTest
sets it)."""
import json
import os
import statistics
import sqlite3
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "bench", "summary.py")
BENCH = os.environ.get("ATTN_BENCH_BINARY", "")
WORKLOAD = {"schema_version": 2, "name": "summary-decode",
            "model": {"num_q_heads": 4, "num_kv_heads": 2, "head_dim": 64, "dtype": "bf16"},
            "kv_cache": {"page_size": 16, "layout": "NHD", "allocation": "shuffled"},
            "sequences": [{"context_len": 40, "query_len": 1, "count": 3}], "seed": 7}


def summary(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          check=True).stdout


@unittest.skipUnless(os.access(BENCH, os.X_OK), "ATTN_BENCH_BINARY is not an executable")
class BenchSummary(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.TemporaryDirectory()
        cls.db = os.path.join(cls.folder.name, "bench.db")
        workload = os.path.join(cls.folder.name, "summary-decode.json")
        with open(workload, "w") as f:
            json.dump(WORKLOAD, f)
        for _ in range(2):  # two rounds of ours
            subprocess.run([BENCH, "run", workload, "--cpu", "--policy", "screen", "--db", cls.db],
                           check=True, capture_output=True)
        subprocess.run([BENCH, "peers", workload, "--cpu", "--policy", "screen", "--db", cls.db,
                        "--peers", "peer.test.reference", "--python", sys.executable], check=True,
                       capture_output=True, env=dict(os.environ, ATTN_PEERS_TEST_PEERS="1"))
        cls.out = summary(cls.db)

    @classmethod
    def tearDownClass(cls):
        cls.folder.cleanup()

    def row(self, variant):
        rows = [line.split("|") for line in self.out.splitlines()
                if line.startswith("| summary-decode |") and f"| {variant} |" in line]
        self.assertEqual(len(rows), 1, self.out)
        return [cell.strip() for cell in rows[0]]

    def test_rounds_are_one_row_with_their_median(self):
        db = sqlite3.connect(self.db)
        medians = [us for (us,) in db.execute(
            "SELECT median_us FROM measurements WHERE variant = 'paged_decode.cpu_reference' "
            "AND disposition = 'passed' ORDER BY id")]
        # Two rounds of attn-bench run, and attn-bench peers measures ours once more.
        self.assertEqual(len(medians), 3)
        cells = self.row("paged_decode.cpu_reference")
        self.assertEqual(cells[5], f"{statistics.median(medians):.2f} ("
                         + " / ".join(f"{us:.2f}" for us in medians) + ")")
        self.assertEqual(cells[8], "best")

    def test_a_peer_is_set_against_our_best(self):
        db = sqlite3.connect(self.db)
        peers = db.execute("SELECT variant, median_us FROM measurements WHERE variant LIKE 'peer.%' "
                           "AND disposition = 'passed'").fetchall()
        self.assertTrue(peers, "attn-bench peers --cpu recorded no passed peer")
        ours = statistics.median(us for (us,) in db.execute(
            "SELECT median_us FROM measurements WHERE variant = 'paged_decode.cpu_reference' "
            "AND disposition = 'passed'"))
        variant, us = peers[0]
        rows = [line for line in self.out.splitlines() if f"| {variant} |" in line]
        self.assertTrue(rows, self.out)
        self.assertTrue(rows[0].rstrip().endswith(f"| {us / ours:.3f}x |"), rows[0])

    def test_failed_steps_are_listed_last(self):
        steps = os.path.join(self.folder.name, "steps.tsv")
        with open(steps, "w") as f:
            f.write("0\tattn-bench run default\n5\tattn-bench run prefill-dense-d64-16x1024\n")
        out = summary(self.db, "--steps", steps).splitlines()
        self.assertEqual(out[-2:], ["Failed steps:", "- exit 5: `attn-bench run prefill-dense-d64-16x1024`"])

    def test_a_missing_database_is_said_not_raised(self):
        out = summary(os.path.join(self.folder.name, "none.db"))
        self.assertIn("summary: ", out)


if __name__ == "__main__":
    unittest.main()
