"""The JSON Schema of workload.json (workloads/schema/workload.schema.json) against the parser:
the schema is a valid draft 2020-12 schema, `attn-bench workload schema` prints it as committed,
every built-in preset validates, and every malformed test file (tests/workloads/malformed) is
refused by `attn-bench workload validate` (exit 3) and by the schema, except the files
beyond_schema.tsv lists with the rule a schema cannot state, which the schema accepts.

Runs with Debian's python3-jsonschema (scripts/install-deps.sh installs it); ATTN_BENCH_BINARY
names the attn-bench to run."""
import glob
import json
import os
import subprocess
import unittest

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
SCHEMA_PATH = os.path.join(ROOT, "workloads", "schema", "workload.schema.json")
MALFORMED = os.path.join(ROOT, "tests", "workloads", "malformed")
BINARY = os.environ.get("ATTN_BENCH_BINARY", "attn-bench")


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def beyond_schema():
    names = {}
    with open(os.path.join(HERE, "beyond_schema.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, reason = line.rstrip("\n").split("\t")
                names[name] = reason
    return names


class WorkloadSchema(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.schema = load(SCHEMA_PATH)
        cls.validator = jsonschema.Draft202012Validator(cls.schema)

    def schema_errors(self, document):
        return [e.message for e in self.validator.iter_errors(document)]

    def test_is_a_valid_draft_2020_12_schema(self):
        jsonschema.Draft202012Validator.check_schema(self.schema)

    def test_the_binary_prints_the_committed_schema(self):
        out = subprocess.run([BINARY, "workload", "schema"], capture_output=True, check=True)
        with open(SCHEMA_PATH, "rb") as f:
            self.assertEqual(out.stdout, f.read())

    def test_every_preset_validates(self):
        presets = sorted(glob.glob(os.path.join(ROOT, "workloads", "presets", "*.json")))
        self.assertGreater(len(presets), 20)
        for path in presets:
            with self.subTest(preset=os.path.basename(path)):
                self.assertEqual(self.schema_errors(load(path)), [])

    def test_every_workload_written_out_in_a_suite_validates(self):
        checked = 0
        for path in sorted(glob.glob(os.path.join(ROOT, "workloads", "suites", "*.json"))):
            for i, workload in enumerate(load(path)["workloads"]):
                if isinstance(workload, str):
                    continue  # a preset's name: the presets are checked above
                with self.subTest(suite=os.path.basename(path), workload=i):
                    self.assertEqual(self.schema_errors(workload), [])
                    checked += 1
        self.assertGreater(checked, 0)

    def test_every_malformed_file_is_refused_by_both(self):
        beyond = beyond_schema()
        names = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(MALFORMED, "*.json")))
        self.assertGreater(len(names), 30)
        self.assertEqual(sorted(set(beyond) - set(names)), [], "beyond_schema.tsv names no such file")
        for name in names:
            path = os.path.join(MALFORMED, name + ".json")
            with self.subTest(file=name):
                ours = subprocess.run([BINARY, "workload", "validate", path], capture_output=True,
                                      text=True)
                self.assertEqual(ours.returncode, 3, ours.stdout + ours.stderr)
                errors = self.schema_errors(load(path))
                if name in beyond:
                    self.assertEqual(errors, [], f"the schema now refuses {name}: remove it from "
                                                 "beyond_schema.tsv")
                else:
                    self.assertNotEqual(errors, [], f"the schema accepts {name}")

    def test_a_valid_file_turned_wrong_one_field_at_a_time_is_refused(self):
        base = load(os.path.join(ROOT, "workloads", "presets", "default.json"))
        self.assertEqual(self.schema_errors(base), [])
        changes = {
            "unknown top-level key": lambda d: d.update(extra=1),
            "name with a control character": lambda d: d.update(name="a\u0007b"),
            "head_dim 100": lambda d: d["model"].update(head_dim=100),
            "page_size 512": lambda d: d["kv_cache"].update(page_size=512),
            "empty sequences": lambda d: d.update(sequences=[]),
            "negative seed": lambda d: d.update(seed=-1),
            "v2 field in a v1 file": lambda d: d["model"].update(sliding_window=64),
            "missing model": lambda d: d.pop("model"),
        }
        for what, change in changes.items():
            with self.subTest(change=what):
                document = json.loads(json.dumps(base))
                change(document)
                self.assertNotEqual(self.schema_errors(document), [])


if __name__ == "__main__":
    unittest.main()
