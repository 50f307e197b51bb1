"""FLOPs per call, counted by ``FlopCounterMode`` over one eager call.

FlopCounterMode has formulas for matmuls, convolutions and attention but none for
pointwise ops: a count of 0 means "not countable" and becomes None ("n/a"), never
0 TFLOP/s. Memory-bound work reports bandwidth from ``bytes_per_call`` instead.

The counting call runs with PyTorch's fused transformer fast path off: in inference
(``eval()``, no gradients) ``nn.TransformerEncoderLayer`` and ``nn.MultiheadAttention`` run as
one native op (``_transformer_encoder_layer_fwd``) that FlopCounterMode has no formula for, so
a user's encoder layer counted 0 FLOPs. Unfused, the same layer is its matmuls and attention,
whose FLOPs the counter knows: the same arithmetic, counted, not estimated. On the CPU, attention
runs as ``_scaled_dot_product_flash_attention_for_cpu``, which the counter lacks a formula for
although it has one for the same attention on a GPU: that formula is lent to it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

from tui.engine.worker.failures import one_line

__all__ = ["count_flops"]

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _fused_fast_path_off() -> Iterator[None]:
    """``torch.backends.mha``'s fast path off for the block, as it was after (a torch without the switch: as is)."""
    import torch

    mha = getattr(torch.backends, "mha", None)
    get = getattr(mha, "get_fastpath_enabled", None)
    set_ = getattr(mha, "set_fastpath_enabled", None)
    if get is None or set_ is None:
        yield
        return
    before = get()
    set_(False)
    try:
        yield
    finally:
        set_(before)


def _lent_formulas() -> dict[Any, Callable[..., int]]:
    """Formulas the counter lacks for ops whose arithmetic it counts under another name (CPU flash attention)."""
    import torch
    from torch.utils import flop_counter

    op = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    sdpa_count = getattr(flop_counter, "sdpa_flop_count", None)
    if op is None or sdpa_count is None or op in flop_counter.flop_registry:
        return {}

    def cpu_flash_attention(query_shape: Any, key_shape: Any, value_shape: Any, *args: Any, out_shape: Any = None,
                            **kwargs: Any) -> int:
        return sdpa_count(query_shape, key_shape, value_shape)

    return {op: cpu_flash_attention}


def count_flops(flops_fn: Callable[[tuple], Any] | None, args: tuple) -> tuple[int | None, str | None]:
    """(FLOPs of one ``flops_fn(args)`` call or None, a one-line warning or None)."""
    if flops_fn is None:
        return None, None
    try:
        from torch.utils.flop_counter import FlopCounterMode

        # display=False: the default prints a table to stdout on exit (and needs tabulate)
        counter = FlopCounterMode(display=False, custom_mapping=_lent_formulas())
        with _fused_fast_path_off(), counter:
            flops_fn(args)
        total = int(counter.get_total_flops())
    except Exception as exc:  # the reason is the run's note
        log.info("FLOPs were not counted", exc_info=True)
        return None, f"FLOPs were not counted: {type(exc).__name__}: {one_line(str(exc), 200)}"
    return (total if total > 0 else None), None
