"""Compiled output against eager and an fp64 reference: who is to blame, and by which rule.

Outputs are pytrees of tensors (tensor, tuple/list, dict; a training step returns
``{"loss": ..., "grads": [...]}``). :func:`keep` clones one right after the call that
made it (a CUDA-graph replay overwrites its outputs).

The rule (:mod:`.tally`, :mod:`.fp64_rule`): with an fp64 reference (the same inputs through a
float64 copy of the workload, :mod:`.fp64_reference`), compiled fails only when it is further
from float64 than eager is, by PyTorch's own benchmark harness's measure, with floors by the dtype
each output tensor has. Without one (float64 unsupported, too little memory, the model fails in
float64) the old rule: ``torch.allclose`` of compiled against eager with the run's tolerances
(:func:`tolerances`), and ``Accuracy.fp64_note`` says why.

Who is to blame (:func:`judge`): eager is first compared with itself, a second eager call on
a fresh copy of the same inputs (:func:`fresh_copy`; a training step from a fresh copy of
the initial model), by the old rule. When eager disagrees with itself (randomness such as dropout, state the
call changes, non-deterministic kernels) the compiled output is not judged: ``passed`` is
None and ``reference`` says why. NaN at the same places on both sides is the workload's own
arithmetic, a warning (``nan_both``); NaN on one side only fails. Comparing nothing (a None
output, empty tensors, no tensor at all) is not a pass: ``passed`` None, "nothing to compare".
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

import torch

from tui.engine.payloads import Accuracy
from tui.engine.worker.tally import NO_REFERENCE, REL_EPS, dtype_tolerances, leaves, tally

__all__ = ["keep", "fresh_copy", "changed_leaves", "rng_state", "tolerances", "dtype_tolerances", "compare",
           "judge", "AccuracyOutputs", "REL_EPS", "NOT_DETERMINISTIC"]

log = logging.getLogger(__name__)

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
    except Exception:  # torch and pickling refuse in several ways; the fallback is documented above
        log.debug("the inputs could not be deep-copied: their tensors are cloned", exc_info=True)
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
    for (path, a), (_, b) in zip(leaves(before, name), leaves(after, name), strict=False):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and not _same_values(a, b):
            changed.append(path)
    return changed


def rng_state(device: torch.device) -> list[torch.Tensor]:
    """The random generators' states a call on ``device`` may draw from (the CPU's, and the GPU's)."""
    states = [torch.get_rng_state()]
    if device.type == "cuda":
        states.append(torch.cuda.get_rng_state(device))
    return states


def tolerances(
    dtype: torch.dtype, tf32: bool = False, mode: str = "default", train: bool = False
) -> tuple[float, float]:
    """(atol, rtol) for comparing outputs computed in ``dtype``: :func:`dtype_tolerances`, loosened for fp32
    to 1e-2 when TF32 or max-autotune may change how matmuls round."""
    if dtype not in (torch.bfloat16, torch.float16) and (tf32 or mode.startswith("max-autotune")):
        return 1e-2, 1e-2
    return dtype_tolerances(dtype, train)


def compare(compiled: Any, eager: Any, atol: float, rtol: float) -> Accuracy:
    """Compare two output pytrees by the old rule: max_abs_err, max_rel_err, atol, rtol, passed (+ where/why).

    The errors are NaN when an output holds NaN on one side only or the outputs cannot be
    compared (the wire carries them as null); ``problem`` then says why. NaN at the same
    places on both sides is left out of the errors and counted in ``nan_both``; ``passed``
    is None when nothing was compared.
    """
    return tally(compiled, eager, atol, rtol).accuracy(eager)


# ----- who is to blame ------------------------------------------------------------------


@dataclass
class AccuracyOutputs:
    """What the accuracy check ran (:meth:`~tui.engine.worker.measure.Benchmark.accuracy_outputs`).

    ``eager`` and ``eager_again`` are two eager calls from the same state on copies of the same
    inputs; ``compiled`` the compiled call. ``mutated`` names the inputs the eager call changed
    in place; ``random`` says whether it drew random numbers. ``fp64`` is the same call on a
    float64 copy (:func:`.fp64_reference.fp64_reference`) when ``fp64_ran``; ``fp64_note`` says why
    there is none, or what it is not. ``train``: the outputs are a training step's.
    """

    compiled: Any
    eager: Any
    eager_again: Any
    mutated: list[str] = dataclasses.field(default_factory=list)
    random: bool = False
    fp64: Any = None
    fp64_ran: bool = False
    fp64_note: str | None = None
    train: bool = False


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
    """The run's accuracy and its warnings: compiled against fp64 and eager, once eager agrees with itself.

    ``atol``/``rtol``: the old rule's tolerance (eager against eager, and compiled against eager
    where there is no fp64 reference).
    """
    warnings: list[str] = []
    if outputs.mutated:
        warnings.append(f"the workload changes its inputs in place ({', '.join(outputs.mutated[:3])}): every "
                        "timed call starts from other values; accuracy compared calls on fresh copies")
    repeat = compare(outputs.eager_again, outputs.eager, atol, rtol)
    notes = [] if outputs.fp64_note is None else [outputs.fp64_note]
    found = tally(outputs.compiled, outputs.eager, atol, rtol, fp64=outputs.fp64 if outputs.fp64_ran else NO_REFERENCE,
                  train=outputs.train, notes=notes)
    result = found.accuracy(outputs.eager)
    if repeat.passed is False:
        reference = (f"{NOT_DETERMINISTIC}: two eager calls on copies of the same inputs differ "
                     f"({_difference(repeat)})")
        warnings.append(f"accuracy not checked: {reference}; likely cause: {_likely_cause(outputs)}. "
                        "The compiled output was not judged")
        return dataclasses.replace(result, passed=None, reference=reference, eager_repeatable=False), warnings
    result = dataclasses.replace(result, eager_repeatable=repeat.passed)
    warnings += _found_warnings(found)
    if result.passed is None:
        warnings.append(f"accuracy not checked: {result.problem}")
    elif not result.passed:
        why = result.problem or (f"max abs err {result.max_abs_err:.3g} beyond atol {atol:g} + rtol {rtol:g} "
                                 "x |eager|")
        rule = (
            f" (judged against eager only: {result.fp64_note})"
            if result.reference != "fp64" and result.fp64_note
            else ""
        )
        warnings.append(f"the compiled output differed from eager at {result.worst or 'output'}: {why}{rule}")
    return result, warnings


def _found_warnings(found: Any) -> list[str]:
    """What the comparison saw that is the workload's own doing: NaN or inf on both sides, eager's overflow."""
    warnings = []
    if found.nan_both:
        rest = "; the other elements were compared" if found.compared else ""
        warnings.append(f"eager and compiled both produce NaN at {found.nan_where} ({found.nan_both} of "
                        f"{found.elements} element(s)): the workload's own arithmetic, not the compiler{rest}")
    if found.inf_both:
        warnings.append(f"eager and compiled both produce inf at {found.inf_where} ({found.inf_both} "
                        "element(s)), equal on both sides")
    if found.eager_nonfinite:
        warnings.append(f"eager produces NaN or inf at {found.eager_nonfinite_where} ({found.eager_nonfinite} "
                        "element(s)) where the compiled output agrees with the fp64 reference: eager's own "
                        "overflow in its precision, not the compiler")
    return warnings
