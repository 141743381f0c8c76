"""planned_decode_wrapper: the CUDA-core decode module's build failure falls back to tensor
cores, recorded in the config; other failures are not hidden."""
import types
import unittest

import support  # noqa: F401 (puts the peer runner's package on the path)
from attn_peers.peers.flashinfer_peers import planned_decode_wrapper


def fake_flashinfer(failing_modes):
    """A `flashinfer` whose decode wrapper's plan() raises RuntimeError (as a failed JIT build
    does) for the use_tensor_cores values in failing_modes."""
    module = types.ModuleType("flashinfer")

    class Wrapper:
        def __init__(self, workspace, kv_layout, use_tensor_cores):
            self.layout, self.tensor_cores, self.planned = kv_layout, use_tensor_cores, False

        def plan(self):
            if self.tensor_cores in failing_modes:
                raise RuntimeError("Error building extension 'batch_decode_with_kv_cache'\nld: ...")
            self.planned = True

    module.BatchDecodeWithPagedKVCacheWrapper = Wrapper
    return module


class PlannedDecodeWrapperTest(unittest.TestCase):
    def test_builds_as_asked_when_the_module_builds(self):
        for tensor_cores in (False, True):
            wrapper, config = planned_decode_wrapper(fake_flashinfer(()), None, "HND",
                                                     tensor_cores, lambda w: w.plan())
            self.assertTrue(wrapper.planned)
            self.assertEqual(wrapper.tensor_cores, tensor_cores)
            self.assertEqual(wrapper.layout, "HND")
            self.assertEqual(config, {"use_tensor_cores": tensor_cores})

    def test_a_failed_cuda_core_module_falls_back_to_tensor_cores(self):
        wrapper, config = planned_decode_wrapper(fake_flashinfer((False,)), None, "NHD", False,
                                                 lambda w: w.plan())
        self.assertTrue(wrapper.planned)
        self.assertTrue(wrapper.tensor_cores)
        self.assertTrue(config["use_tensor_cores"])
        self.assertIn("Error building extension", config["fallback"])
        self.assertNotIn("\n", config["fallback"])

    def test_a_failed_tensor_core_module_is_not_hidden(self):
        with self.assertRaises(RuntimeError):
            planned_decode_wrapper(fake_flashinfer((True,)), None, "NHD", True, lambda w: w.plan())
        with self.assertRaises(RuntimeError):
            planned_decode_wrapper(fake_flashinfer((False, True)), None, "NHD", False,
                                   lambda w: w.plan())


if __name__ == "__main__":
    unittest.main()
