"""Every peer, in the order the runner tries them. Names are `peer.<library>.<kernel>`
(docs/peers.md lists them). The test peers join only when asked for."""
from . import flashinfer_mla, flashinfer_peers, test_peers, torch_flex, torch_mla, torch_sdpa


def all_peers(include_test=False):
    peers = (torch_sdpa.peers() + torch_flex.peers() + torch_mla.peers() +
             flashinfer_peers.peers() + flashinfer_mla.peers())
    if include_test:
        peers += test_peers.peers()
    return peers
