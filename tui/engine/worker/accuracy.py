"""Compiled output against eager output, with tolerances chosen by dtype and TF32.

Outputs are pytrees of tensors (tensor, tuple/list, dict; a training step returns
``{"loss": ..., "grads": [...]}``). :func:`keep` clones one right after the call that
made it (a CUDA-graph replay overwrites its outputs). Pass/fail follows
``torch.allclose``: ``|a - b| <= atol + rtol * |b|`` everywhere, with eager as ``b``;
the relative error is reported too but never decides (it explodes near zero).

Who is to blame (:func:`judge`): eager is first compared with itself, a second eager call on
a fresh copy of the same inputs (:func:`fresh_copy`; a training step from a fresh copy of
the initial model). When eager disagrees with itself (randomness such as dropout, state the
call changes, non-deterministic kernels) the compiled output is not judged: ``passed`` is
None and ``reference`` says why. NaN at the same places on both sides is the workload's own
arithmetic, a warning (``nan_both``); NaN on one side only fails. Comparing nothing (a None
output, empty tensors, no tensor at all) is not a pass: ``passed`` None, "nothing to compare".
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Iterator

import torch

from tui.engine.payloads import Accuracy

__all__ = ["keep", "fresh_copy", "changed_leaves", "rng_state", "tolerances", "compare", "judge",
           "AccuracyOutputs", "REL_EPS", "NOT_DETERMINISTIC"]

#: Added to |reference| in the reported relative error.
REL_EPS = 1e-6
#: How ``Accuracy.reference`` begins when two eager calls on the same inputs disagreed.
NOT_DETERMINISTIC = "eager is not deterministic"


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


def fresh_copy(args: Any) -> Any:
    """A deep copy of an input set, made before a call so that nothing the call does to it leaks.

    ``copy.deepcopy`` keeps each tensor's size, strides and storage offset (and tensors that
    share storage keep sharing it), so a compiled call on the copy meets the same guards.
    What cannot be deep-copied (a non-leaf tensor that requires grad, say) falls back to a
    clone of each tensor, other objects shared.
    """
    try:
        return copy.deepcopy(args)
    except Exception:
        return _clone_tensors(args)


def _clone_tensors(tree: Any) -> Any:
    if isinstance(tree, torch.Tensor):
        return tree.detach().clone().requires_grad_(tree.requires_grad)
    if isinstance(tree, dict):
        return {k: _clone_tensors(v) for k, v in tree.items()}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*(_clone_tensors(v) for v in tree))
    if isinstance(tree, (list, tuple)):
        return type(tree)(_clone_tensors(v) for v in tree)
    return tree


def _same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal shape and values, NaN equal to NaN."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    a, b = a.detach(), b.detach().to(a.device)
    same = a == b
    if a.is_floating_point() or a.is_complex():
        same |= torch.isnan(a) & torch.isnan(b)
    return bool(same.all())


def changed_leaves(before: Any, after: Any, name: str = "input") -> list[str]:
    """Where ``after`` (a copy of ``before`` that a call used) no longer holds ``before``'s tensors."""
    changed = []
    for (path, a), (_, b) in zip(_leaves(before, name), _leaves(after, name)):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and not _same_values(a, b):
            changed.append(path)
    return changed


def rng_state(device: torch.device) -> list[torch.Tensor]:
    """The random generators' states a call on ``device`` may draw from (the CPU's, and the GPU's)."""
    states = [torch.get_rng_state()]
    if device.type == "cuda":
        states.append(torch.cuda.get_rng_state(device))
    return states


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


@dataclass
class _Tally:
    """What comparing two output pytrees found, leaf by leaf."""

    atol: float
    rtol: float
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

    def fail(self, path: str, why: str) -> None:
        """Remember the first problem (and where it was)."""
        if self.problem is None:
            self.problem, self.worst = f"{path}: {why}", path

    def add(self, path: str, a64: torch.Tensor, b64: torch.Tensor) -> None:
        """Compare one leaf pair (float64 tensors of one shape)."""
        self.elements += a64.numel()
        nan_a, nan_b = torch.isnan(a64), torch.isnan(b64)
        both = nan_a & nan_b
        self._note_nan(path, int(both.sum()), nan_a & ~nan_b, nan_b & ~nan_a)
        self.compared += a64.numel() - int(both.sum())
        keep_mask = ~(nan_a | nan_b)
        a64, b64 = a64[keep_mask], b64[keep_mask]
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
        self.max_abs = max(self.max_abs, float(diff.max()))
        self.max_rel = max(self.max_rel, float((diff / (scale + REL_EPS)).max()))
        excess = float((diff - (self.atol + self.rtol * scale)).max())
        if excess > self.worst_excess and self.problem is None:
            self.worst_excess, self.worst = excess, path

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
        return Accuracy(max_abs_err=max_abs, max_rel_err=max_rel, atol=self.atol, rtol=self.rtol, passed=passed,
                        compared=self.compared, worst=self.worst, problem=problem, reference="eager",
                        nan_both=self.nan_both)


def _nothing_in(output: Any, nan_both: int) -> str:
    """Why an output offered nothing to compare."""
    if nan_both:
        return f"every element is NaN on both sides ({nan_both})"
    if output is None:
        return "the output is None"
    if not any(isinstance(leaf, (torch.Tensor, int, float)) for _, leaf in _leaves(output)):
        return f"the output holds no tensor ({type(output).__name__})"
    return "the output's tensors are empty"


def _tally(compiled: Any, eager: Any, atol: float, rtol: float) -> _Tally:
    tally = _Tally(atol, rtol)
    got = list(_leaves(compiled))
    ref = list(_leaves(eager))
    if [p for p, _ in got] != [p for p, _ in ref]:
        tally.problem = f"the outputs differ in structure ({len(got)} vs {len(ref)} leaves)"
        tally.max_abs = tally.max_rel = math.nan
        return tally
    for (path, a), (_, b) in zip(got, ref):
        pair = _as_tensors(a, b)
        if isinstance(pair, str):
            tally.fail(path, pair)
            tally.max_abs = tally.max_rel = math.nan
            return tally
        if pair is not None:
            tally.add(path, *pair)
    return tally


def compare(compiled: Any, eager: Any, atol: float, rtol: float) -> Accuracy:
    """Compare two output pytrees: max_abs_err, max_rel_err, atol, rtol, passed (+ where/why).

    The errors are NaN when an output holds NaN on one side only or the outputs cannot be
    compared (the wire carries them as null); ``problem`` then says why. NaN at the same
    places on both sides is left out of the errors and counted in ``nan_both``; ``passed``
    is None when nothing was compared.
    """
    return _tally(compiled, eager, atol, rtol).accuracy(eager)


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


# ----- who is to blame ------------------------------------------------------------------


@dataclass
class AccuracyOutputs:
    """What the accuracy check ran (:meth:`~tui.engine.worker.measure.Benchmark.accuracy_outputs`).

    ``eager`` and ``eager_again`` are two eager calls from the same state on copies of the same
    inputs; ``compiled`` the compiled call. ``mutated`` names the inputs the eager call changed
    in place; ``random`` says whether it drew random numbers.
    """

    compiled: Any
    eager: Any
    eager_again: Any
    mutated: list[str] = dataclasses.field(default_factory=list)
    random: bool = False


def _likely_cause(outputs: AccuracyOutputs) -> str:
    if outputs.random:
        return ("randomness: the eager call draws random numbers (dropout or another random op in training "
                "mode? model.eval() turns dropout off)")
    if outputs.mutated:
        return f"inputs mutated in place ({', '.join(outputs.mutated[:3])})"
    return ("non-deterministic kernels, or state the call keeps and changes (a buffer, a counter); "
            "it drew no random numbers and changed no input")


def _difference(repeat: Accuracy) -> str:
    """How the second eager call differed from the first (``compare`` calls them compiled and eager)."""
    if repeat.problem:
        return (repeat.problem.replace("the compiled output", "the second call's output")
                .replace("the eager output", "the first call's output").replace(" compiled, ", " second, ")
                .replace(" eager)", " first)"))
    where = f" at {repeat.worst}" if repeat.worst else ""
    return f"max abs err {repeat.max_abs_err:.3g}{where}"


def judge(outputs: AccuracyOutputs, atol: float, rtol: float) -> tuple[Accuracy, list[str]]:
    """The run's accuracy and its warnings: compiled against eager, once eager agrees with itself."""
    warnings: list[str] = []
    if outputs.mutated:
        warnings.append(f"the workload changes its inputs in place ({', '.join(outputs.mutated[:3])}): every "
                        "timed call starts from other values; accuracy compared calls on fresh copies")
    repeat = compare(outputs.eager_again, outputs.eager, atol, rtol)
    tally = _tally(outputs.compiled, outputs.eager, atol, rtol)
    result = tally.accuracy(outputs.eager)
    if repeat.passed is False:
        reference = (f"{NOT_DETERMINISTIC}: two eager calls on copies of the same inputs differ "
                     f"({_difference(repeat)})")
        warnings.append(f"accuracy not checked: {reference}; likely cause: {_likely_cause(outputs)}. "
                        "The compiled output was not judged")
        return dataclasses.replace(result, passed=None, reference=reference, eager_repeatable=False), warnings
    result = dataclasses.replace(result, eager_repeatable=repeat.passed)
    if tally.nan_both:
        rest = "; the other elements were compared" if tally.compared else ""
        warnings.append(f"eager and compiled both produce NaN at {tally.nan_where} ({tally.nan_both} of "
                        f"{tally.elements} element(s)): the workload's own arithmetic, not the compiler{rest}")
    if tally.inf_both:
        warnings.append(f"eager and compiled both produce inf at {tally.inf_where} ({tally.inf_both} "
                        "element(s)), equal on both sides")
    if result.passed is None:
        warnings.append(f"accuracy not checked: {result.problem}")
    elif not result.passed:
        why = result.problem or (f"max abs err {result.max_abs_err:.3g} beyond atol {atol:g} + rtol {rtol:g} "
                                 "x |eager|")
        warnings.append(f"the compiled output differed from eager at {result.worst or 'output'}: {why}")
    return result, warnings
