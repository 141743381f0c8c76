"""The GPU tests' CTest groups (tests/CMakeLists.txt) on a build: every test of attn_gpu_tests is
a CTest test exactly once and `ctest -L gpu` selects them all; `gpu-quick` holds one test per
CUDA variant and the tiled GPU reference's check; the timing tests and the
device-memory test run alone (RUN_SERIAL); the
random tests, the every-config sweeps and the large batches carry a COST (ctest -j starts them
first), the quick and timing tests none.

    gpu_test_groups_test.py BUILD/tests/attn_gpu_tests BUILD
"""
import json
import subprocess
import sys


def gtest_names(binary):
    out = subprocess.run([binary, "--gtest_list_tests"], check=True, capture_output=True,
                         text=True).stdout
    names, suite = [], None
    for line in out.splitlines():
        if not line.strip() or line.startswith("Running main()"):
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            names.append(suite + line.split("#")[0].strip())
    return names


def ctest_tests(build, label):
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1", "-L", label],
                         check=True, capture_output=True, text=True).stdout
    tests = {}
    for test in json.loads(out)["tests"]:
        properties = {p["name"]: p["value"] for p in test.get("properties", [])}
        # A parameterised test's CTest name ends in "  # GetParam() = ...": the gtest name without.
        tests.setdefault(test["name"].split("  #")[0], []).append(properties)
    return tests


def main(binary, build):
    failures = []

    def check(condition, message):
        if not condition:
            failures.append(message)

    names = gtest_names(binary)
    every = ctest_tests(build, "gpu")
    quick = ctest_tests(build, "gpu-quick")
    check(len(names) > 70, f"attn_gpu_tests lists only {len(names)} tests")
    check(sorted(every) == sorted(names),
          f"ctest -L gpu: {len(every)} tests, the binary: {len(names)}; only in ctest: "
          f"{sorted(set(every) - set(names))[:5]}, only in the binary: "
          f"{sorted(set(names) - set(every))[:5]}")
    twice = [name for name, entries in every.items() if len(entries) > 1]
    check(not twice, f"tests discovered twice: {twice[:5]}")

    # One smoke test per CUDA variant of the registry, as `attn-bench list --json` lists them.
    listed = json.loads(subprocess.run([f"{build}/apps/attn-bench", "list", "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    cuda = [v["name"] for f in listed["families"] for v in f["variants"] if v["backend"] == "cuda"]
    variants = [name for name in quick if name.startswith("Quick/EveryVariantGpu.")]
    check(len(variants) == len(cuda),
          f"gpu-quick has {len(variants)} variant tests for {len(cuda)} CUDA variants")
    check(len(quick) == len(variants) + 1, f"gpu-quick: {sorted(quick)}")
    for name, entries in every.items():
        properties = entries[0]
        labels = properties.get("LABELS", [])
        serial = properties.get("RUN_SERIAL", False)
        cost = float(properties.get("COST", 0))
        check(labels == (["gpu-quick"] if name in quick else ["gpu"]), f"{name}: labels {labels}")
        check(serial == name.startswith(("MeasurementGpu.", "DeviceMemoryGpu.")), f"{name}: RUN_SERIAL {serial}")
        if name in quick or serial:
            check(cost == 0, f"{name}: COST {cost}")
        elif any(word in name for word in ("RandomBatches", "EveryAccepted", "LargeBatches")):
            check(cost > 0, f"{name}: COST {cost}")
    for message in failures:
        print("FAIL:", message)
    print(f"{len(names)} GPU tests, {len(quick)} in gpu-quick, "
          f"{sum(1 for e in every.values() if e[0].get('RUN_SERIAL'))} serial, "
          f"{sum(1 for e in every.values() if float(e[0].get('COST', 0)) > 0)} long")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
