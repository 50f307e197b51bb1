"""The builder contract: :class:`BuiltWorkload`, what every workload becomes (worker only).

The built-ins (:mod:`.workloads`) and a user's file (:mod:`.user_loader`) both make one, and a
function or module called the same way on both sides is :func:`inference_workload`. It imports
neither of them, so they never import each other through it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tui.engine.worker.fp64_reference import Fp64Model

__all__ = ["BuiltWorkload", "inference_workload"]


@dataclass
class BuiltWorkload:
    """A workload ready to run: eager step, compiler hook, inputs and cost model.

    ``eager_step(args)`` runs one eager call on an input set (a tuple of positional
    arguments). ``compile_step(compile_fn)`` compiles the workload's target with
    ``compile_fn`` (e.g. ``functools.partial(torch.compile, backend=...)``) and returns
    ``compiled_step(args)``. Calls cycle through ``input_sets``; ``labels`` names each
    set (or is None). ``flops_fn(args)`` is an eager call for ``FlopCounterMode`` (None
    where there are no countable ops). ``train`` means outputs are ``{"loss", "grads"}``.
    ``reference_step(args)`` repeats the first eager call from the state it started from, for
    the accuracy check's eager-against-eager comparison (a training step: on a fresh copy of
    the initial model and optimizer); None: ``eager_step`` (inference keeps no state).
    ``fp64`` says how to run that first eager call on a float64 copy, for the accuracy check's
    reference (:mod:`.fp64_reference`); None: the workload has no such copy.
    """

    eager_step: Callable[[tuple], Any]
    compile_step: Callable[[Callable], Callable[[tuple], Any]]
    input_sets: list[tuple]
    labels: list[str] | None
    flops_fn: Callable[[tuple], Any] | None
    bytes_per_call: int | None
    train: bool
    reference_step: Callable[[tuple], Any] | None = None
    fp64: Fp64Model | None = None


def _call_target(target: Callable, args: tuple) -> Any:
    return target(*args)


def inference_workload(target: Callable, input_sets: list[tuple], bytes_per_call: int | None,
                       labels: list[str] | None = None, count_flops: bool = True) -> BuiltWorkload:
    """A BuiltWorkload whose eager and compiled sides both call ``target(*args)``.

    ``target`` is a function or a module, shared by both sides: ``compile_step`` wraps it
    with ``compile_fn`` and never changes it. ``flops_fn`` is the eager step, or None when
    ``count_flops`` is false.
    """

    def eager_step(args: tuple) -> Any:
        return target(*args)

    def compile_step(compile_fn: Callable) -> Callable[[tuple], Any]:
        compiled = compile_fn(target)

        def compiled_step(args: tuple) -> Any:
            return compiled(*args)

        return compiled_step

    return BuiltWorkload(
        eager_step=eager_step,
        compile_step=compile_step,
        input_sets=input_sets,
        labels=labels,
        flops_fn=eager_step if count_flops else None,
        bytes_per_call=bytes_per_call,
        train=False,
        fp64=Fp64Model(target, _call_target),
    )
