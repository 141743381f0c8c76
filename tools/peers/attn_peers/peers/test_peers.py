"""Two peers for the tests, run on the CPU with numpy (enabled by ATTN_PEERS_TEST_PEERS=1, or
--test-peers; never by default):

peer.test.reference  returns the dump's reference_out rounded to the output dtype: passes
peer.test.wrong      the same with one output row off by 10%: recorded as incorrect, never timed
peer.test.slow       only when ATTN_PEERS_TEST_SLOW_SECONDS is set: prepares for that many seconds
                     (a compile that takes too long), then passes as peer.test.reference does;
                     listed first, so that the peers after it show a run going on past it
"""
import os
import time

import numpy as np

from .. import batch as batch_module
from .base import Case, Peer


def _rounded(reference, dtype):
    if dtype == "bf16":
        return batch_module.bf16_to_float32(batch_module.float32_to_bf16(reference))
    if dtype == "fp16":
        return reference.astype(np.float16).astype(np.float32)
    return reference.astype(np.float32)


class ReferencePeer(Peer):
    name = "peer.test.reference"
    library = "test"
    device = "cpu"
    summary = "test peer: the dump's reference output, rounded to the output dtype"
    latent = True  # the reference of a latent batch too
    wrong_rows = 0

    def declines(self, batch):
        if batch.reference is None:
            return "the dump has no reference_out"
        return None

    def prepare(self, batch, env):
        reference = np.array(batch.reference)
        result = []

        def call():
            out = _rounded(reference, batch.dtype)
            if self.wrong_rows and out.size:
                out.reshape(-1, out.shape[-1])[: self.wrong_rows] *= 1.1
            result[:] = [out]

        return Case(call, lambda: result[0], {"library": "numpy " + np.__version__,
                                               "wrong_rows": self.wrong_rows})


class WrongPeer(ReferencePeer):
    name = "peer.test.wrong"
    summary = "test peer: the reference with one row off by 10%"
    wrong_rows = 1


class SlowPeer(ReferencePeer):
    name = "peer.test.slow"
    summary = "test peer: prepares for $ATTN_PEERS_TEST_SLOW_SECONDS seconds, then as the reference"

    def prepare(self, batch, env):
        time.sleep(float(os.environ["ATTN_PEERS_TEST_SLOW_SECONDS"]))
        return super().prepare(batch, env)


def peers():
    slow = [SlowPeer()] if os.environ.get("ATTN_PEERS_TEST_SLOW_SECONDS") else []
    return slow + [ReferencePeer(), WrongPeer()]
