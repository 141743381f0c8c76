"""What a peer is, and the environment peers share (torch, the GPU, the batch on the GPU).

A peer is one implementation of another library, named `peer.<library>.<kernel>`:
  unavailable(env)  None, or why it cannot run here (library missing, no GPU): a "skipped" line
  declines(batch)   None, or why it cannot run this batch ("soft-cap", "sinks", "layout vllm")
  prepare(batch, env) -> Case: everything outside the timing (uploads, gathers, plans, compiles)
A Case has call() (the timed work), output() (after a call: [total_q, num_q_heads, v_head_dim],
a numpy array or a torch tensor on any device, in the output dtype or float32, into a buffer poisoned with NaN first where the API writes into
one) and config (a dict recorded as the measurement's config_json: what the timing covers).
V and the output may be narrower than Q and K (batch.v_head_dim < batch.head_dim): a peer whose
library cannot take that declines it with a reason naming what is missing.
"""
import importlib
import sys


class Case:
    def __init__(self, call, output, config):
        self.call = call
        self.output = output
        self.config = config


class Peer:
    name = ""
    library = ""
    device = "cuda"  # "cuda" or "cpu": which timer measures it
    summary = ""

    @property
    def unit(self):
        """What one run of the peer is called in --list and --units: its name, or for one config
        of a user module's peer "<name>@<config key>"."""
        return self.name

    def unavailable(self, env):
        return env.torch_unavailable() if self.device == "cuda" else None

    def declines(self, batch):
        return None

    def prepare(self, batch, env):
        raise NotImplementedError


def module_version(name):
    module = sys.modules.get(name)
    return getattr(module, "__version__", "") if module else ""


class Environment:
    """Imports torch lazily (once), picks the GPU, and keeps the batch's tensors on it so that
    every peer reads the same device copy."""

    def __init__(self, device_index=0, want_cuda=True):
        self.device_index = device_index
        self.want_cuda = want_cuda
        self._torch = None
        self._torch_reason = None
        self._tried = False
        self._cache = {}

    # --- torch and the GPU ---------------------------------------------------------------------
    def torch_unavailable(self):
        """None when torch imports and sees the GPU, else why not."""
        if not self.want_cuda:
            return "the runner was started with --device cpu"
        if not self._tried:
            self._tried = True
            try:
                torch = importlib.import_module("torch")
            except Exception as e:  # ImportError, or a broken install
                self._torch_reason = f"torch is not installed ({type(e).__name__}: {e})"
                return self._torch_reason
            if not torch.cuda.is_available():
                self._torch_reason = f"torch {torch.__version__} sees no CUDA device"
            elif self.device_index >= torch.cuda.device_count():
                self._torch_reason = (f"--device {self.device_index}: torch sees "
                                      f"{torch.cuda.device_count()} GPU(s)")
            else:
                torch.cuda.set_device(self.device_index)
                self._torch = torch
        return self._torch_reason

    @property
    def torch(self):
        assert self._torch is not None, "torch_unavailable() must be checked first"
        return self._torch

    def device_record(self):
        """What the results file says about the device the peers ran on."""
        if self.torch_unavailable() is not None:
            return {"kind": "cpu"}
        torch = self.torch
        p = torch.cuda.get_device_properties(self.device_index)
        uuid = getattr(p, "uuid", None)
        uuid_text = str(uuid) if uuid is not None else ""
        if uuid_text and not uuid_text.startswith("GPU-"):
            uuid_text = "GPU-" + uuid_text
        return {"kind": "gpu", "index": self.device_index, "name": p.name, "uuid": uuid_text,
                "cc": f"{p.major}.{p.minor}", "sm_count": p.multi_processor_count,
                "memory_bytes": int(p.total_memory),
                "l2_bytes": int(getattr(p, "L2_cache_size", 0) or 0),
                "torch": torch.__version__, "torch_cuda": torch.version.cuda or ""}

    # --- the batch on the GPU ------------------------------------------------------------------
    def cached(self, key, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def release(self):
        self._cache.clear()
        if self._torch is not None:
            self._torch.cuda.empty_cache()
