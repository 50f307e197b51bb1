"""The fp64 reference: the accuracy check's call once more, on a float64 copy of the workload.

A workload says how to make its copy (:class:`Fp64Model`: what to deep-copy and how to call the
copy); :func:`fp64_reference` deep-copies it, casts its floating parameters and buffers and a fresh
copy of the inputs to float64 (floating tensors only: class indices stay integers), runs it
eagerly on the same device, and keeps the output. That is what PyTorch's benchmark harness does
(``benchmarks/dynamo/common.py``: ``cast_to_fp64`` of a deep copy, then the same iteration).

There is no reference, and a note says why, where float64 is not supported on the device (MPS),
where the copy would not fit in free memory (:func:`memory_needed` against :func:`free_bytes`),
or where the copy fails to run (an op without a float64 kernel, a model that fixes its own dtype
somewhere, out of memory after all). The accuracy check then falls back to the old rule.

The copy is made after the timed warm-up and dropped right after its call (CUDA's cache emptied),
so it never shares memory with a timed block.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch

from tui.engine.worker.accuracy import fresh_copy, keep
from tui.engine.worker.failures import one_line

__all__ = ["Fp64Model", "fp64_reference", "to_float64", "memory_needed", "free_bytes", "fp64_unsupported",
           "HEADROOM_BYTES"]

#: Memory left free beyond the estimate (activations, the allocator's rounding, the CUDA context).
HEADROOM_BYTES = 256 * 2**20


@dataclass(frozen=True)
class Fp64Model:
    """How to run a workload on float64: ``source`` is deep-copied and cast, then ``call(copy, args)``.

    ``source`` is an ``nn.Module``, a bound method of one, or a function (a function's own
    tensors, in a closure say, are not cast: a mismatch then fails the copy, and the note says
    so). ``train``: the call is a training step (gradients and optimizer state need memory too).
    """

    source: Any
    call: Callable[[Any, tuple], Any]
    train: bool = False


def _module_of(source: Any) -> torch.nn.Module | None:
    if isinstance(source, torch.nn.Module):
        return source
    owner = getattr(source, "__self__", None)
    return owner if isinstance(owner, torch.nn.Module) else None


def to_float64(tree: Any) -> Any:
    """``tree`` with every floating tensor cast to float64 (modules in place), the rest as it is."""
    if isinstance(tree, torch.Tensor):
        if not tree.is_floating_point():
            return tree
        return tree.detach().to(torch.float64).requires_grad_(tree.requires_grad)
    module = _module_of(tree)
    if module is not None:
        module.to(torch.float64)
        return tree
    if isinstance(tree, dict):
        return {k: to_float64(v) for k, v in tree.items()}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*(to_float64(v) for v in tree))
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_float64(v) for v in tree)
    return tree


def _tensors(tree: Any) -> Iterable[torch.Tensor]:
    module = _module_of(tree)
    if module is not None:
        yield from module.parameters()
        yield from module.buffers()
    elif isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, dict):
        for value in tree.values():
            yield from _tensors(value)
    elif isinstance(tree, (list, tuple)):
        for value in tree:
            yield from _tensors(value)


def _fp64_bytes(tensors: Iterable[torch.Tensor]) -> tuple[int, int]:
    """(bytes of the floating tensors in float64, bytes of the others)."""
    floating = other = 0
    for tensor in tensors:
        if tensor.is_floating_point():
            floating += tensor.numel() * 8
        else:
            other += tensor.numel() * tensor.element_size()
    return floating, other


def memory_needed(model: Fp64Model, args: tuple) -> int:
    """Bytes the copy is estimated to need: twice the float64 state and inputs (the copy and what the
    call makes from them), three more times the floating state for a training step (gradients and
    AdamW's two moments), plus :data:`HEADROOM_BYTES`."""
    state, state_other = _fp64_bytes(_tensors(model.source))
    inputs, inputs_other = _fp64_bytes(_tensors(args))
    need = 2 * (state + state_other + inputs + inputs_other)
    if model.train:
        need += 3 * state
    return need + HEADROOM_BYTES


def free_bytes(device: torch.device) -> int | None:
    """Memory free for the copy on ``device`` (None: not known). CUDA: free plus what torch's cache
    holds unused; the CPU: the kernel's MemAvailable (Linux)."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    if device.type == "cpu":
        return _mem_available()
    return None


def _mem_available(meminfo: str = "/proc/meminfo") -> int | None:
    """The kernel's MemAvailable in bytes (None where there is no /proc/meminfo: the copy is then tried)."""
    try:
        with open(meminfo, encoding="ascii") as lines:
            for line in lines:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def fp64_unsupported(device: torch.device) -> str | None:
    """Why float64 cannot run on ``device``, or None."""
    if device.type == "mps":
        return "float64 is not supported on MPS"
    try:
        torch.ones(2, dtype=torch.float64, device=device).sum().item()
    except Exception as exc:  # noqa: BLE001 - any refusal means no reference; the note names it
        return f"float64 does not run on {device.type}: {_describe(exc)}"
    return None


def _describe(exc: BaseException) -> str:
    message = one_line(str(exc), 200)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:,.0f} MiB"


def fp64_reference(model: Fp64Model | None, args: tuple, device: torch.device,
                   free: Callable[[torch.device], int | None] = free_bytes) -> tuple[bool, Any, str | None]:
    """(ran, output, note): the output of ``model`` copied to float64 on a fresh float64 copy of ``args``.

    ``ran`` False: no reference, and ``note`` says why ("no fp64 reference: ..."). ``free`` reads
    the free memory (a test may pass its own).
    """
    if model is None:
        return False, None, "no fp64 reference: the workload offers no float64 copy"
    why = fp64_unsupported(device)
    if why is None:
        need, have = memory_needed(model, args), free(device)
        if have is not None and need > have:
            why = f"a float64 copy needs about {_mib(need)}, {_mib(have)} free on {device.type}"
    if why is not None:
        return False, None, f"no fp64 reference: {why}"
    try:
        return True, _run(model, args), None
    except Exception as exc:  # noqa: BLE001 - a model that fails in float64 falls back; the note names why
        return False, None, f"no fp64 reference: the model failed in float64 ({_describe(exc)})"
    finally:
        if device.type == "cuda":
            torch.cuda.empty_cache()


def _run(model: Fp64Model, args: tuple) -> Any:
    copied = to_float64(copy.deepcopy(model.source))
    inputs = to_float64(fresh_copy(args))
    try:
        return keep(model.call(copied, inputs))
    finally:
        del copied, inputs
