"""Verification of a peer's output against the dump's reference: the rule of measure/verify.cpp.

Every element must be finite, and the relative L2 error of every output row (one query token and
q head: v_head_dim elements, V's width, which is head_dim unless the workload narrows V) must be
within the tolerance the dump's index records for the output
dtype (measure/verify.cpp's tolerance_for, written by `attn-bench workload dump`). NaN/inf elements
are counted and left out of the sums, as there; a row whose reference is exactly zero must be
zero. `attn-bench peers import` recomputes the verdict from these numbers with its own tolerance.
"""
import numpy as np


def to_host(output):
    """A peer's output as a numpy array. A Case may return a numpy array or a torch tensor on any
    device (a tensor on the GPU cannot be read by numpy directly): tensors are copied to the host
    as float32, which holds every output dtype exactly."""
    if hasattr(output, "detach") and hasattr(output, "cpu"):
        return output.detach().float().cpu().numpy()
    return np.asarray(output)


def verify(output, reference, tolerance, reference_name="cpu_reference"):
    """output: anything numpy can turn into float64 [total_q, heads, v_head_dim]; reference:
    float32 of the same shape. Returns the fields of results/measurement.hpp's Verification.
    Raises ValueError when the shapes differ (shape_problem says so first, without raising)."""
    out = np.asarray(output, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    if out.shape != ref.shape:
        raise ValueError(f"output shape {list(out.shape)} is not the reference's {list(ref.shape)}")
    row = ref.shape[-1] if ref.ndim else 1
    out = out.reshape(-1, row)
    ref = ref.reshape(-1, row)
    finite = np.isfinite(out)
    nonfinite = int(out.size - np.count_nonzero(finite))
    diff = np.where(finite, out - ref, 0.0)
    ref_in = np.where(finite, ref, 0.0)
    error_squares = np.sum(diff * diff, axis=1)
    reference_squares = np.sum(ref_in * ref_in, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        row_error = np.where(reference_squares > 0, np.sqrt(error_squares / reference_squares),
                             np.where(error_squares > 0, np.inf, 0.0))
    return {
        "checked": True,
        "max_abs_error": float(np.max(np.abs(diff))) if diff.size else 0.0,
        "rel_l2_error": float(np.max(row_error)) if row_error.size else 0.0,
        "nonfinite": nonfinite,
        "elements": int(ref.size),
        "tolerance": float(tolerance),
        "reference": reference_name,
    }


def shape_problem(output, expected):
    """None when `output` has the shape `expected` ((total_q, num_q_heads, v_head_dim): the
    batch's output_shape), else why not, for the peer's row."""
    shape = tuple(np.shape(output))
    if shape == tuple(expected):
        return None
    return (f"output shape {list(shape)} is not [total_q, num_q_heads, v_head_dim] = "
            f"{list(expected)}")


def passed(v):
    return bool(v["checked"]) and v["nonfinite"] == 0 and v["rel_l2_error"] <= v["tolerance"]


def describe(v):
    if v["nonfinite"] > 0:
        return (f"{v['nonfinite']} of {v['elements']} output elements are NaN/inf "
                "(unwritten or overflowed)")
    rel = "<=" if v["rel_l2_error"] <= v["tolerance"] else ">"
    return (f"worst row rel_l2 {v['rel_l2_error']:.2e} {rel} tolerance {v['tolerance']:.1e} "
            f"(max abs {v['max_abs_error']:.2e}, vs {v['reference']})")
