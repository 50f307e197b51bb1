"""Two output pytrees compared leaf by leaf, with or without an fp64 reference (:func:`tally`).

Without a reference (the old rule, and eager against eager) a floating leaf follows
``torch.allclose``: ``|a - b| <= atol + rtol * |b|`` everywhere, with eager as ``b``; the relative
error is reported too but never decides (it explodes near zero). With a reference, a floating
leaf is judged by :func:`.fp64_rule.judge_leaf`; a leaf the reference cannot serve (not finite
where both outputs are, another shape, a complex output) falls back to the old rule, and the note
says so. Integer and bool leaves compare exactly either way.

Non-finite values: NaN at the same places on both sides, and the same infinity, are the
workload's own arithmetic (counted, left out of the errors); NaN or inf on one side only fails,
except where eager is the one that is not finite and the compiled output agrees with the fp64
reference there (eager overflowed in its low precision; compiled kept a wider intermediate).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from tui.engine.payloads import Accuracy
from tui.engine.worker.fp64_rule import dtype_name, floor, judge_leaf

__all__ = ["Tally", "tally", "leaves", "dtype_tolerances", "REL_EPS", "NO_REFERENCE"]

#: Added to |reference| in the reported relative error.
REL_EPS = 1e-6
#: What :func:`tally` gets as ``fp64`` when there is no reference (None is an output like any other).
NO_REFERENCE: Any = object()

Pair = tuple[torch.Tensor, torch.Tensor, torch.dtype]


def leaves(tree: Any, path: str = "output") -> Iterator[tuple[str, Any]]:
    """Every leaf of a pytree (dict, list, tuple) with its path, ``output['grads'][1]``."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from leaves(value, f"{path}[{key!r}]")
    elif isinstance(tree, (list, tuple)):
        for index, value in enumerate(tree):
            yield from leaves(value, f"{path}[{index}]")
    else:
        yield path, tree


def dtype_tolerances(dtype: torch.dtype, train: bool = False) -> tuple[float, float]:
    """(atol, rtol) of the old eager-vs-compiled rule for outputs of ``dtype``, whatever TF32 does.

    fp32 is held to 1e-4; bf16 to 5e-2 (8 mantissa bits: a fused kernel that keeps fp32
    intermediates lands several ulps away from eager's per-op rounding); fp16 to 1e-2.
    A training step (gradients through a whole model) gets twice the fp32 tolerance.
    """
    if dtype == torch.bfloat16:
        return 5e-2, 5e-2
    if dtype == torch.float16:
        return 1e-2, 1e-2
    return (2e-4, 2e-4) if train else (1e-4, 1e-4)


def _max(values: list[float]) -> float | None:
    return max(values) if values else None


@dataclass
class Tally:
    """What comparing two output pytrees found, leaf by leaf.

    ``atol``/``rtol``: the old rule's tolerance (the run's dtype, TF32 and mode); with ``train`` and
    each output's dtype they set the allclose the fp64 rule tries first (:meth:`first_tolerance`).
    """

    atol: float
    rtol: float
    train: bool = False
    max_abs: float = 0.0
    max_rel: float = 0.0
    worst_excess: float = -math.inf
    worst: str | None = None
    problem: str | None = None
    compared: int = 0
    one_sided_nan: bool = False
    nan_both: int = 0
    nan_where: str | None = None
    inf_both: int = 0
    inf_where: str | None = None
    elements: int = 0
    fp64_leaves: int = 0
    notes: list[str] = field(default_factory=list)
    eager_nonfinite: int = 0
    eager_nonfinite_where: str | None = None
    fp64_errors: dict[str, list[float]] = field(default_factory=lambda: {
        "compiled_rmse": [], "eager_rmse": [], "compiled_max_abs": [], "eager_max_abs": []})

    def fail(self, path: str, why: str) -> None:
        """Remember the first problem (and where it was)."""
        if self.problem is None:
            self.problem, self.worst = f"{path}: {why}", path

    def _score(self, path: str, score: float) -> None:
        """How close a leaf that passed or failed by its tolerance came (at most 0: passed)."""
        if score > self.worst_excess and self.problem is None:
            self.worst_excess, self.worst = score, path

    def add(self, path: str, pair: Pair, ref: torch.Tensor | None = None) -> None:
        """Compare one leaf pair (``a`` compiled, ``b`` eager, in eager's dtype); ``ref``: its fp64 reference."""
        a64, b64, dtype = pair
        self.elements += a64.numel()
        if not (dtype.is_floating_point or dtype.is_complex):
            self._exact(path, a64, b64, dtype)
            return
        if ref is not None:
            a64, b64, ref = self._excuse_eager(path, a64, b64, ref, dtype)
        nan_a, nan_b = torch.isnan(a64), torch.isnan(b64)
        both = nan_a & nan_b
        self._note_nan(path, int(both.sum()), nan_a & ~nan_b, nan_b & ~nan_a)
        self.compared += a64.numel() - int(both.sum())
        keep_mask = ~(nan_a | nan_b)
        a64, b64 = a64[keep_mask], b64[keep_mask]
        ref = None if ref is None else ref[keep_mask]
        if a64.numel() == 0:
            return
        same_inf = torch.isinf(a64) & (a64 == b64)
        if bool(same_inf.any()):
            self.inf_both += int(same_inf.sum())
            self.inf_where = self.inf_where or path
        diff = torch.where(same_inf, torch.zeros_like(a64), (a64 - b64).abs())
        scale = torch.where(torch.isinf(b64), torch.zeros_like(b64), b64.abs())
        if bool(torch.isinf(diff).any()):
            self.fail(path, "inf in one output only")
            ref = None
        self.max_abs = max(self.max_abs, float(diff.max()))
        self.max_rel = max(self.max_rel, float((diff / (scale + REL_EPS)).max()))
        if ref is not None:
            finite = ~same_inf
            if self._fp64(path, a64[finite], b64[finite], ref[finite], dtype):
                return
        self._score(path, float((diff - (self.atol + self.rtol * scale)).max()))

    def first_tolerance(self, dtype: torch.dtype) -> tuple[float, float]:
        """The allclose the fp64 rule tries first: the looser of the output dtype's and the run's.

        The run's tolerance carries what the run allows beyond the dtype (TF32 in effect, a
        max-autotune mode): with TF32 allowed, compiled may pick a TF32 kernel where eager's
        happened not to, and its error against fp64 is then far above eager's while being
        exactly what the precision setting permits.
        """
        atol, rtol = dtype_tolerances(dtype, self.train)
        return max(atol, self.atol), max(rtol, self.rtol)

    def _fp64(self, path: str, a64: torch.Tensor, b64: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> bool:
        """Judge a leaf by the fp64 rule; False when the reference cannot serve (the old rule judges it)."""
        not_finite = int((~torch.isfinite(ref)).sum())
        if not_finite:
            self.notes.append(f"{path}: the fp64 reference is not finite at {not_finite} element(s) where both "
                              "outputs are; compared with eager")
            return False
        if a64.numel() == 0:
            return True
        verdict = judge_leaf(a64, b64, ref, dtype, self.first_tolerance(dtype))
        self.fp64_leaves += 1
        errors = verdict.errors
        for key, value in (("compiled_rmse", errors.compiled_rmse), ("eager_rmse", errors.eager_rmse),
                           ("compiled_max_abs", errors.compiled_max_abs), ("eager_max_abs", errors.eager_max_abs)):
            self.fp64_errors[key].append(value)
        if verdict.why is not None:
            self.fail(path, verdict.why)
        else:
            self._score(path, verdict.score)
        return True

    def _excuse_eager(self, path: str, a64: torch.Tensor, b64: torch.Tensor, ref: torch.Tensor,
                      dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Leave out the elements where eager alone is not finite and compiled agrees with the reference."""
        lone = ~torch.isfinite(b64) & torch.isfinite(a64) & torch.isfinite(ref)
        if not bool(lone.any()):
            return a64, b64, ref
        atol, rtol = floor(dtype)
        finite_ref = ref[torch.isfinite(ref)]
        rms = math.sqrt(float(finite_ref.square().mean())) if finite_ref.numel() else 0.0
        agrees = lone & ((a64 - ref).abs() <= atol + rtol * torch.clamp(ref.abs(), min=rms))
        excused = int(agrees.sum())
        if not excused:
            return a64, b64, ref
        self.eager_nonfinite += excused
        self.eager_nonfinite_where = self.eager_nonfinite_where or path
        self.compared += excused
        keep = ~agrees
        return a64[keep], b64[keep], ref[keep]

    def _exact(self, path: str, a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype) -> None:
        """Integer and bool leaves: equal everywhere, or the compiled output fails."""
        self.compared += a.numel()
        a64, b64 = a.to(torch.float64), b.to(torch.float64)
        diff = (a64 - b64).abs()
        self.max_abs = max(self.max_abs, float(diff.max()))
        self.max_rel = max(self.max_rel, float((diff / (b64.abs() + REL_EPS)).max()))
        differ = int((a != b).sum())
        if differ:
            self.fail(path, f"{differ} of {a.numel()} element(s) differ ({dtype_name(dtype)}: compared exactly)")

    def _note_nan(self, path: str, both: int, only_a: torch.Tensor, only_b: torch.Tensor) -> None:
        if both:
            self.nan_both += both
            self.nan_where = self.nan_where or path
        in_a, in_b = int(only_a.sum()), int(only_b.sum())
        if in_a and in_b:
            self.fail(path, f"NaN at different places in the two outputs ({in_a} compiled, {in_b} eager)")
        elif in_a or in_b:
            side = "compiled" if in_a else "eager"
            self.fail(path, f"NaN in the {side} output only ({in_a or in_b} element(s))")
        self.one_sided_nan = self.one_sided_nan or bool(in_a or in_b)

    def accuracy(self, reference: Any) -> Accuracy:
        """The tally as an Accuracy (``reference``: the eager output, to say what "nothing" was)."""
        passed: bool | None = self.problem is None and self.worst_excess <= 0
        max_abs: float | None = self.max_abs
        max_rel: float | None = self.max_rel
        problem = self.problem
        if self.one_sided_nan:
            max_abs = max_rel = math.nan
        elif self.problem is None and self.compared == 0:
            passed, max_abs, max_rel = None, None, None
            problem = f"nothing to compare: {_nothing_in(reference, self.nan_both)}"
        errors = self.fp64_errors
        return Accuracy(max_abs_err=max_abs, max_rel_err=max_rel, atol=self.atol, rtol=self.rtol, passed=passed,
                        compared=self.compared, worst=self.worst, problem=problem,
                        reference="fp64" if self.fp64_leaves else "eager", nan_both=self.nan_both,
                        compiled_rmse_fp64=_max(errors["compiled_rmse"]), eager_rmse_fp64=_max(errors["eager_rmse"]),
                        compiled_max_abs_err_fp64=_max(errors["compiled_max_abs"]),
                        eager_max_abs_err_fp64=_max(errors["eager_max_abs"]),
                        fp64_note="; ".join(self.notes) or None)


def _nothing_in(output: Any, nan_both: int) -> str:
    """Why an output offered nothing to compare."""
    if nan_both:
        return f"every element is NaN on both sides ({nan_both})"
    if output is None:
        return "the output is None"
    if not any(isinstance(leaf, (torch.Tensor, int, float)) for _, leaf in leaves(output)):
        return f"the output holds no tensor ({type(output).__name__})"
    return "the output's tensors are empty"


def tally(compiled: Any, eager: Any, atol: float, rtol: float, fp64: Any = NO_REFERENCE, train: bool = False,
          notes: list[str] | None = None) -> Tally:
    """Compare ``compiled`` with ``eager`` leaf by leaf; with ``fp64`` (a reference output) by the fp64 rule.

    ``notes`` start the tally's notes (why there is no reference, what it is not).
    """
    result = Tally(atol, rtol, train=train, notes=list(notes or []))
    got = list(leaves(compiled))
    want = list(leaves(eager))
    if [p for p, _ in got] != [p for p, _ in want]:
        result.problem = f"the outputs differ in structure ({len(got)} vs {len(want)} leaves)"
        result.max_abs = result.max_rel = math.nan
        return result
    refs = _reference_leaves(fp64, want, result.notes)
    for (path, a), (_, b), r in zip(got, want, refs, strict=False):
        pair = _as_tensors(a, b)
        if isinstance(pair, str):
            result.fail(path, pair)
            result.max_abs = result.max_rel = math.nan
            return result
        if pair is not None:
            result.add(path, pair, _reference_tensor(path, r, pair, result.notes))
    return result


def _reference_leaves(fp64: Any, want: list[tuple[str, Any]], notes: list[str]) -> list[Any]:
    """The reference's leaves in the order of eager's (``NO_REFERENCE`` for each when there is none to use)."""
    if fp64 is NO_REFERENCE:
        return [NO_REFERENCE] * len(want)
    found = list(leaves(fp64))
    if [p for p, _ in found] != [p for p, _ in want]:
        notes.append(f"the fp64 copy's output differs in structure ({len(found)} vs {len(want)} leaves); "
                     "compared with eager")
        return [NO_REFERENCE] * len(want)
    return [leaf for _, leaf in found]


def _reference_tensor(path: str, leaf: Any, pair: Pair, notes: list[str]) -> torch.Tensor | None:
    """One reference leaf as a float64 tensor beside the compiled one, or None (with a note where it matters)."""
    a64, _, dtype = pair
    if leaf is NO_REFERENCE or not dtype.is_floating_point:
        if leaf is not NO_REFERENCE and dtype.is_complex:
            notes.append(f"{path}: a complex output; compared with eager")
        return None
    if isinstance(leaf, (int, float)) and not isinstance(leaf, bool):
        leaf = torch.tensor(float(leaf), dtype=torch.float64)
    if not isinstance(leaf, torch.Tensor) or tuple(leaf.shape) != tuple(a64.shape):
        shape = tuple(leaf.shape) if isinstance(leaf, torch.Tensor) else type(leaf).__name__
        notes.append(f"{path}: the fp64 copy returned {shape}, not {tuple(a64.shape)}; compared with eager")
        return None
    if leaf.dtype != torch.float64:
        notes.append(f"{path}: the fp64 copy returned {dtype_name(leaf.dtype)} (the model sets that dtype itself)")
    return leaf.detach().to(device=a64.device, dtype=torch.float64).reshape(a64.shape)


def _as_tensors(a: Any, b: Any) -> Pair | str | None:
    """Both leaves on one device with eager's dtype (floats as float64); None: nothing to compare; a problem string."""
    if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
        return "a tensor on one side only"
    if not isinstance(a, torch.Tensor):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            exact = not isinstance(a, float) and not isinstance(b, float)
            dtype = torch.int64 if exact else torch.float64
            return torch.tensor(a, dtype=dtype), torch.tensor(b, dtype=dtype), dtype
        return None if a == b else f"{a!r} != {b!r}"
    if a.shape != b.shape:
        return f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
    if a.numel() == 0:
        return None
    dtype = b.dtype
    if not (dtype.is_floating_point or dtype.is_complex) and not (a.dtype.is_floating_point or a.dtype.is_complex):
        return a.detach(), b.detach().to(a.device), dtype
    return a.detach().to(torch.float64), b.detach().to(device=a.device, dtype=torch.float64), dtype
