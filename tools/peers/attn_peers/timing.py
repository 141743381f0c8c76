"""Timing under attn-bench's measurement policy (docs/measurement.md, measure/timing_policy.hpp).

The same steps as measure/timing_core.cpp, for a Python callable:
  warm-up   at least warmup_min calls, then until the medians of the last two windows of
            warmup_window samples agree within warmup_tolerance, or warmup_max_seconds passed;
  sampling  one sample per call; stop when the bootstrap noise of the median (200 resamples, the
            standard deviation of the resampled medians over the median; past 64 samples looked at
            again only after the set grew by 1/16) is at or under `noise` with at least min_samples
            kept, or at max_samples, or after max_seconds (twice that while none is kept);
  a sample  events: the L2 flushed and left clean (a buffer of twice the L2 zeroed, then a second
            one of that size read, so the zeroing's dirty lines are written back before the start
            event, not inside the call; both enqueued before the start event, so not timed), a CUDA
            event, the call, a CUDA event, synchronise; cpu: a monotonic clock around the call
            (the test peers, which run in numpy).

What is not here: the graph timer (peers are timed with events only, so a sample of a peer
includes its host-side dispatch wherever the host is slower than the flush ahead of it; see
docs/peers.md), and the SM clock probe (no sample is discarded for a low clock).
The statistics recorded (median, spread, noise, outliers, stability) are computed again from the raw
samples by `attn-bench peers import` with the C++ code that computes ours.
"""
import time

import numpy as np

# measure/timing_policy.cpp: screen_policy() and confirm_policy() (MeasurePolicy's defaults).
POLICIES = {
    "screen": dict(name="screen", min_samples=3, max_samples=100, noise=0.03, max_seconds=1.0,
                   warmup_min=1, warmup_window=1, warmup_tolerance=0.05, warmup_max_seconds=0.1,
                   flush_l2=True, unstable_discard_fraction=0.25),
    "confirm": dict(name="confirm", min_samples=20, max_samples=2000, noise=0.005, max_seconds=15.0,
                    warmup_min=3, warmup_window=5, warmup_tolerance=0.02, warmup_max_seconds=0.5,
                    flush_l2=True, unstable_discard_fraction=0.10),
}

POLICY_FIELDS = ("name", "min_samples", "max_samples", "noise", "max_seconds", "warmup_min",
                 "warmup_window", "warmup_tolerance", "warmup_max_seconds", "flush_l2")


def policy_from(value):
    """A policy from a name ('screen', 'confirm') or a dict with every field of POLICY_FIELDS (what
    `attn-bench peers` passes, its own policy with the command line's overrides applied)."""
    if isinstance(value, str):
        if value not in POLICIES:
            raise ValueError(f"unknown policy {value!r}: use screen or confirm")
        return dict(POLICIES[value])
    missing = [f for f in POLICY_FIELDS if f not in value]
    if missing:
        raise ValueError(f"policy lacks {', '.join(missing)}")
    policy = dict(value)
    if policy["min_samples"] < 1 or policy["max_samples"] < policy["min_samples"]:
        raise ValueError("policy: need 1 <= min_samples <= max_samples")
    if not policy["noise"] > 0 or not policy["max_seconds"] > 0:
        raise ValueError("policy: noise and max_seconds must be positive")
    return policy


def median(values):
    s = sorted(values)
    n = len(s)
    if n == 0:
        return 0.0
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def median_relative_noise(samples, resamples=200, seed=0x5EED):
    """Bootstrap standard error of the median over the median (the noise of docs/measurement.md)."""
    n = len(samples)
    if n < 2:
        return 0.0
    values = np.asarray(samples, dtype=np.float64)
    m = float(np.median(values))
    if not m > 0:
        return 0.0
    picks = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    medians = np.median(values[picks], axis=1)
    return float(np.std(medians, ddof=1)) / m


class CpuTimer:
    name = "cpu"

    def sample_us(self, call):
        start = time.perf_counter()
        call()
        return (time.perf_counter() - start) * 1e6


class EventTimer:
    """CUDA events around one call on torch's current stream, the L2 flushed before each sample."""
    name = "events"

    def __init__(self, torch, flush_l2):
        self.torch = torch
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)
        self.flush = None
        if flush_l2:
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            l2 = int(getattr(props, "L2_cache_size", 0) or 0) or 64 * 1024 * 1024
            self.flush = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")
            self.clean = torch.zeros(2 * l2 // 4, dtype=torch.int32, device="cuda")

    def sample_us(self, call):
        if self.flush is not None:
            self.flush.zero_()
            self.clean.amax()  # read only: evicts the zeroing's dirty lines, leaves clean ones
        self.start.record()
        call()
        self.stop.record()
        self.stop.synchronize()
        return self.start.elapsed_time(self.stop) * 1e3


def measure(call, policy, timer, clock=time.monotonic):
    """Warms up and samples `call`; returns the raw record the results file holds:
    {timer, samples_us, warmup_samples, stop_reason, noise}."""
    warm = []
    begin = clock()
    window = max(int(policy["warmup_window"]), 1)
    while True:
        warm.append(timer.sample_us(call))
        n = len(warm)
        if n >= max(policy["warmup_min"], 2 * window):
            recent, before = median(warm[-window:]), median(warm[-2 * window:-window])
            if before > 0 and abs(recent - before) / before <= policy["warmup_tolerance"]:
                break
        if n >= policy["warmup_min"] and clock() - begin >= policy["warmup_max_seconds"]:
            break
    samples = []
    begin = clock()
    checked_at = 0
    noise = 0.0
    stop_reason = None
    while stop_reason is None:
        samples.append(timer.sample_us(call))
        n = len(samples)
        if n >= max(policy["min_samples"], 2) and not (n > 64 and n < checked_at + checked_at // 16):
            checked_at = n
            noise = median_relative_noise(samples)
            if noise <= policy["noise"]:
                stop_reason = "noise"
                break
        if n >= policy["max_samples"]:
            stop_reason = "max_samples"
        elif clock() - begin >= policy["max_seconds"]:
            stop_reason = "max_time"
    if stop_reason != "noise":
        noise = median_relative_noise(samples)
    return {"timer": timer.name, "samples_us": samples, "warmup_samples": len(warm),
            "stop_reason": stop_reason, "noise": noise}
