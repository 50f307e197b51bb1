"""Compiled output against eager output, with tolerances chosen by dtype and TF32.

Outputs are pytrees of tensors (tensor, tuple/list, dict; a training step returns
``{"loss": ..., "grads": [...]}``). :func:`keep` clones one right after the call that
made it (a CUDA-graph replay overwrites its outputs). Pass/fail follows
``torch.allclose``: ``|a - b| <= atol + rtol * |b|`` everywhere, with eager as ``b``;
the relative error is reported too but never decides (it explodes near zero).
NaN never passes.
"""

from __future__ import annotations

import math
from typing import Any, Iterator

import torch

from tui.engine.payloads import Accuracy

__all__ = ["keep", "tolerances", "compare", "REL_EPS"]

#: Added to |reference| in the reported relative error.
REL_EPS = 1e-6


def keep(output: Any) -> Any:
    """A detached clone of every tensor in ``output`` (the structure is kept)."""
    if isinstance(output, torch.Tensor):
        return output.detach().clone()
    if isinstance(output, dict):
        return {k: keep(v) for k, v in output.items()}
    if isinstance(output, tuple) and hasattr(output, "_fields"):  # a namedtuple
        return type(output)(*(keep(v) for v in output))
    if isinstance(output, (list, tuple)):
        return type(output)(keep(v) for v in output)
    return output


def tolerances(dtype: torch.dtype, tf32: bool = False, mode: str = "default", train: bool = False) -> tuple[float, float]:
    """(atol, rtol) for comparing outputs computed in ``dtype``.

    fp32 is held to 1e-4 unless TF32 or max-autotune may change how matmuls round
    (then 1e-2); bf16 to 5e-2 (8 mantissa bits: a fused kernel that keeps fp32
    intermediates lands several ulps away from eager's per-op rounding); fp16 to 1e-2.
    A training step (gradients through a whole model) gets twice the fp32 tolerance.
    """
    if dtype == torch.bfloat16:
        return 5e-2, 5e-2
    if dtype == torch.float16:
        return 1e-2, 1e-2
    if tf32 or mode.startswith("max-autotune"):
        return 1e-2, 1e-2
    return (2e-4, 2e-4) if train else (1e-4, 1e-4)


def _leaves(tree: Any, path: str = "output") -> Iterator[tuple[str, Any]]:
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _leaves(value, f"{path}[{key!r}]")
    elif isinstance(tree, (list, tuple)):
        for index, value in enumerate(tree):
            yield from _leaves(value, f"{path}[{index}]")
    else:
        yield path, tree


def _result(max_abs: float, max_rel: float, atol: float, rtol: float, passed: bool,
            compared: int, worst: str | None, problem: str | None) -> Accuracy:
    return Accuracy(max_abs_err=max_abs, max_rel_err=max_rel, atol=atol, rtol=rtol, passed=passed,
                    compared=compared, worst=worst, problem=problem, reference="eager")


def compare(compiled: Any, eager: Any, atol: float, rtol: float) -> Accuracy:
    """Compare two output pytrees: max_abs_err, max_rel_err, atol, rtol, passed (+ where/why).

    The errors are NaN when an output holds NaN or the outputs cannot be compared (the wire
    carries them as null); ``problem`` then says why.
    """
    got = list(_leaves(compiled))
    ref = list(_leaves(eager))
    if [p for p, _ in got] != [p for p, _ in ref]:
        return _result(math.nan, math.nan, atol, rtol, False, 0, None,
                       f"the outputs differ in structure ({len(got)} vs {len(ref)} leaves)")
    max_abs = max_rel = 0.0
    worst_excess, worst, problem = -math.inf, None, None
    compared, saw_nan = 0, False
    for (path, a), (_, b) in zip(got, ref):
        pair = _as_tensors(a, b)
        if isinstance(pair, str):
            return _result(math.nan, math.nan, atol, rtol, False, compared, path, f"{path}: {pair}")
        if pair is None:
            continue
        a64, b64 = pair
        compared += a64.numel()
        nan_side = "compiled" if bool(torch.isnan(a64).any()) else "eager" if bool(torch.isnan(b64).any()) else None
        if nan_side:
            if not saw_nan:
                problem, worst, saw_nan = f"{path}: NaN in the {nan_side} output", path, True
            continue
        same_inf = torch.isinf(a64) & (a64 == b64)
        diff = torch.where(same_inf, torch.zeros_like(a64), (a64 - b64).abs())
        scale = torch.where(torch.isinf(b64), torch.zeros_like(b64), b64.abs())
        if bool(torch.isinf(diff).any()):
            problem = problem or f"{path}: inf in one output only"
        leaf_abs = float(diff.max())
        leaf_rel = float((diff / (scale + REL_EPS)).max())
        leaf_excess = float((diff - (atol + rtol * scale)).max())
        max_abs, max_rel = max(max_abs, leaf_abs), max(max_rel, leaf_rel)
        if leaf_excess > worst_excess and not saw_nan:
            worst_excess, worst = leaf_excess, path
    if saw_nan:
        max_abs = max_rel = math.nan
    passed = problem is None and (compared == 0 or worst_excess <= 0)
    return _result(max_abs, max_rel, atol, rtol, passed, compared, worst, problem)


def _as_tensors(a: Any, b: Any) -> tuple[torch.Tensor, torch.Tensor] | str | None:
    """Both leaves as float64 tensors on one device; None when there is nothing to compare; a problem string."""
    if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
        return "a tensor on one side only"
    if not isinstance(a, torch.Tensor):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return torch.tensor(float(a), dtype=torch.float64), torch.tensor(float(b), dtype=torch.float64)
        return None if a == b else f"{a!r} != {b!r}"
    if a.shape != b.shape:
        return f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
    if a.numel() == 0:
        return None
    return a.detach().to(torch.float64), b.detach().to(device=a.device, dtype=torch.float64)
