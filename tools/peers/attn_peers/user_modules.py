"""User peer modules: `run_peers.py --peer-module FILE.py` (and `attn-bench peers --peer-module`)
runs the peers a Python file of yours declares beside the built-in ones (docs/user-kernels.md).

The protocol. The module defines `peers()`, returning a list of objects with:
  name       lower-case letters, digits and '_': the peer is recorded as
             peer.user.<module>.<name>, where <module> is the file's name without .py
  space      (optional) a dict axis -> list of integers, the peer's config space (a Triton
             kernel's BLOCK_N, num_warps, num_stages ...); every combination is run and recorded
             with its config key ("block_n=64,num_warps=4"). Default: one config, {}.
  device     (optional) "cuda" (default: timed with CUDA events, needs torch) or "cpu"
  summary    (optional) one line for --list
  declines(batch, config)    (optional) None, or why this config cannot run the batch
  prepare(batch, env, config) -> Case (attn_peers.peers.base.Case): everything outside the timing;
             Case.call() is the timed work, Case.output() the result [total_q, num_q_heads,
             head_dim]
`batch` is the dumped batch (attn_peers.batch.Batch), `env` the shared environment (env.torch,
env.cached). A module that fails to import, or declares peers that break the protocol, is invalid
input: the runner stops before running anything (exit code 3).
"""
import importlib.util
import itertools
import os
import re

from .peers.base import Peer

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")
_MAX_CONFIGS = 4096


class ModuleError(Exception):
    """A peer module that cannot be used; the message names the file and the problem."""


def _config_key(config):
    return ",".join(f"{axis}={config[axis]}" for axis in sorted(config))


class UserPeer(Peer):
    """One config of one peer a user module declares."""

    def __init__(self, module_name, declared, config):
        self.declared = declared
        self.config_values = config
        self.config_key = _config_key(config)
        self.name = f"peer.user.{module_name}.{declared.name}"
        self.library = f"user.{module_name}"
        self.device = getattr(declared, "device", "cuda")
        self.latent = bool(getattr(declared, "latent", False))
        self.summary = getattr(declared, "summary", "") or f"from {module_name}.py"

    @property
    def unit(self):
        return f"{self.name}@{self.config_key}" if self.config_key else self.name

    def declines(self, batch):
        declines = getattr(self.declared, "declines", None)
        return declines(batch, dict(self.config_values)) if declines else None

    def prepare(self, batch, env):
        case = self.declared.prepare(batch, env, dict(self.config_values))
        config = dict(case.config or {})
        config.update(self.config_values)
        case.config = config
        return case


def _check_space(where, space):
    if not isinstance(space, dict):
        raise ModuleError(f"{where}: space must be a dict of axis -> list of integers, "
                          f"got {type(space).__name__}")
    for axis, values in space.items():
        if not isinstance(axis, str) or not _NAME.match(axis):
            raise ModuleError(f"{where}: space axis {axis!r} must be lower-case letters, digits "
                              "and '_', starting with a letter")
        if (not isinstance(values, (list, tuple)) or not values
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in values)):
            raise ModuleError(f"{where}: space[{axis!r}] must be a non-empty list of integers")
        if len(set(values)) != len(values):
            raise ModuleError(f"{where}: space[{axis!r}] lists a value twice")
    count = 1
    for values in space.values():
        count *= len(values)
    if count > _MAX_CONFIGS:
        raise ModuleError(f"{where}: space spans {count} configs; at most {_MAX_CONFIGS}")


def load(path):
    """The peers (one per config) the module at `path` declares; ModuleError when it cannot be
    used."""
    module_name = os.path.splitext(os.path.basename(path))[0]
    if not path.endswith(".py") or not _NAME.match(module_name):
        raise ModuleError(f"{path}: a peer module is a .py file named with lower-case letters, "
                          "digits and '_' (its name goes into the peer names)")
    if not os.path.isfile(path):
        raise ModuleError(f"{path}: no such file")
    spec = importlib.util.spec_from_file_location(f"attn_user_peers.{module_name}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # whatever the module raises is its problem, reported as input
        raise ModuleError(f"{path}: importing it raised {type(e).__name__}: {e}") from e
    declare = getattr(module, "peers", None)
    if not callable(declare):
        raise ModuleError(f"{path}: defines no peers() function")
    try:
        declared = list(declare())
    except Exception as e:
        raise ModuleError(f"{path}: peers() raised {type(e).__name__}: {e}") from e
    if not declared:
        raise ModuleError(f"{path}: peers() returned no peer")
    out, names = [], set()
    for i, peer in enumerate(declared):
        name = getattr(peer, "name", None)
        where = f"{path}: peer {i} ({name!r})"
        if not isinstance(name, str) or not _NAME.match(name):
            raise ModuleError(f"{where}: name must be lower-case letters, digits and '_', "
                              "starting with a letter")
        if name in names:
            raise ModuleError(f"{where}: a second peer named {name!r}")
        names.add(name)
        if not callable(getattr(peer, "prepare", None)):
            raise ModuleError(f"{where}: has no prepare(batch, env, config)")
        if getattr(peer, "device", "cuda") not in ("cuda", "cpu"):
            raise ModuleError(f"{where}: device must be 'cuda' or 'cpu'")
        space = getattr(peer, "space", None) or {}
        _check_space(where, space)
        axes = sorted(space)
        for values in itertools.product(*(space[a] for a in axes)):
            out.append(UserPeer(module_name, peer, dict(zip(axes, values))))
    return out
