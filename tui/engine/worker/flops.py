"""FLOPs per call, counted by ``FlopCounterMode`` over one eager call.

FlopCounterMode has formulas for matmuls, convolutions and attention but none for
pointwise ops: a count of 0 means "not countable" and becomes None ("n/a"), never
0 TFLOP/s. Memory-bound work reports bandwidth from ``bytes_per_call`` instead.
"""

from __future__ import annotations

from typing import Any, Callable

from tui.engine.worker.failures import one_line

__all__ = ["count_flops"]


def count_flops(flops_fn: Callable[[tuple], Any] | None, args: tuple) -> tuple[int | None, str | None]:
    """(FLOPs of one ``flops_fn(args)`` call or None, a one-line warning or None)."""
    if flops_fn is None:
        return None, None
    try:
        from torch.utils.flop_counter import FlopCounterMode

        # display=False: the default prints a table to stdout on exit (and needs tabulate)
        counter = FlopCounterMode(display=False)
        with counter:
            flops_fn(args)
        total = int(counter.get_total_flops())
    except Exception as exc:
        return None, f"FLOPs were not counted: {type(exc).__name__}: {one_line(str(exc), 200)}"
    return (total if total > 0 else None), None
