"""The JSON Schema of kernel spec files (kernels/user/schema/kernel_spec.schema.json) against the
parser: the schema is a valid draft 2020-12 schema, `attn-bench kernel schema` prints it as
committed, the example specs validate with both, and every malformed spec (tests/kernels/user/
malformed) is refused by `attn-bench kernel validate` (exit 3) and by the schema, except the specs
beyond_schema.tsv lists with the rule a schema cannot state, which the schema accepts. A file that
is not JSON at all is refused by any schema.

Runs with Debian's python3-jsonschema; ATTN_BENCH_BINARY names the attn-bench to run."""
import glob
import json
import os
import subprocess
import unittest

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
SCHEMA_PATH = os.path.join(ROOT, "kernels", "user", "schema", "kernel_spec.schema.json")
MALFORMED = os.path.join(ROOT, "tests", "kernels", "user", "malformed")
EXAMPLES = [os.path.join(ROOT, "examples", "user_kernels", "simple_decode.json"),
            os.path.join(ROOT, "tests", "apps", "user_kernels", "off_by_one.json"),
            os.path.join(ROOT, "tests", "apps", "user_kernels", "out_of_bounds.json")]
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


class KernelSpecSchema(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.schema = load(SCHEMA_PATH)
        cls.validator = jsonschema.Draft202012Validator(cls.schema)

    def schema_errors(self, path):
        try:
            document = load(path)
        except json.JSONDecodeError as e:
            return [f"not JSON: {e}"]
        return [e.message for e in self.validator.iter_errors(document)]

    def validate(self, path):
        return subprocess.run([BINARY, "kernel", "validate", path], capture_output=True, text=True)

    def test_is_a_valid_draft_2020_12_schema(self):
        jsonschema.Draft202012Validator.check_schema(self.schema)

    def test_the_binary_prints_the_committed_schema(self):
        out = subprocess.run([BINARY, "kernel", "schema"], capture_output=True, check=True)
        with open(SCHEMA_PATH, "rb") as f:
            self.assertEqual(out.stdout, f.read())

    def test_the_example_specs_validate_with_both(self):
        for path in EXAMPLES:
            with self.subTest(spec=os.path.basename(path)):
                self.assertEqual(self.schema_errors(path), [])
                ours = self.validate(path)
                self.assertEqual(ours.returncode, 0, ours.stdout + ours.stderr)
                self.assertIn("valid", ours.stdout)

    def test_every_malformed_spec_is_refused_by_both(self):
        beyond = beyond_schema()
        names = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(MALFORMED, "*.json")))
        self.assertEqual(len(names), 42)
        self.assertEqual(sorted(set(beyond) - set(names)), [], "beyond_schema.tsv names no such spec")
        for name in names:
            path = os.path.join(MALFORMED, name + ".json")
            with self.subTest(spec=name):
                ours = self.validate(path)
                self.assertEqual(ours.returncode, 3, ours.stdout + ours.stderr)
                errors = self.schema_errors(path)
                if name in beyond:
                    self.assertEqual(errors, [], f"the schema now refuses {name}: remove it from "
                                                 "beyond_schema.tsv")
                else:
                    self.assertNotEqual(errors, [], f"the schema accepts {name}")

    def test_a_valid_spec_turned_wrong_one_field_at_a_time_is_refused(self):
        base = load(EXAMPLES[0])
        changes = {
            "unknown top-level key": lambda d: d.update(extra=1),
            "name with a capital": lambda d: d.update(name="Simple"),
            "absolute source path": lambda d: d.update(sources=["/etc/passwd"]),
            "nine axes": lambda d: d.update(axes={f"a{i}": [1] for i in range(9)}),
            "axis named like a function": lambda d: d["axes"].update(ceil_div=[1]),
            "a constraint with a single =": lambda d: d.update(constraints=["warps = 4"]),
            "grid of four": lambda d: d["launch"].update(grid=[1, 1, 1, 1]),
            "kv_layout vllm": lambda d: d["features"].update(kv_layout=["vllm"]),
            "page_size 512": lambda d: d["features"].update(page_size=[512]),
            "missing features": lambda d: d.pop("features"),
        }
        for what, change in changes.items():
            with self.subTest(change=what):
                document = json.loads(json.dumps(base))
                change(document)
                self.assertNotEqual([e.message for e in self.validator.iter_errors(document)], [])


if __name__ == "__main__":
    unittest.main()
