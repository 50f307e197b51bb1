"""The run's precision option applied to torch's TF32 flags, and the flags in effect read back.

``default`` touches nothing: the worker runs what a fresh process of the user's own runs (in
torch 2.x cuDNN convolutions may use TF32 and matmuls may not). ``ieee`` turns TF32 off and ``tf32``
on, for matmuls and cuDNN alike, through the flags every torch 2.x has
(``torch.backends.cuda.matmul.allow_tf32``, ``torch.backends.cudnn.allow_tf32``), before anything
is built, so both sides run under the same flags.

The CPU's counterpart is oneDNN's (``torch.backends.mkldnn``) ``fp32_precision``, read beside them
(``float32_matmul_precision`` ``medium`` sets it to ``bf16`` for matmuls); the option does not set it.

Reading is defensive: torch 2.9 added a second API (``torch.backends.*.fp32_precision``), and once
a program mixed the two, reading an old flag can raise. Each value is read on its own; an old flag
that cannot be read is taken from the new API where that says ``tf32`` or ``ieee`` outright, and
is None (unknown) otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from tui.engine.options import OptionsError
from tui.engine.payloads import PRECISION_FLAGS

__all__ = ["apply", "read_flags", "tf32_in_effect", "FLAG_NAMES"]

log = logging.getLogger(__name__)

FLAG_NAMES = PRECISION_FLAGS
"""The fields of :class:`~tui.engine.payloads.Env` that :func:`read_flags` fills: CUDA's (TF32 for matmuls and
cuDNN), the float32 matmul precision both devices read, and the CPU's (oneDNN, torch's ``mkldnn`` backend, which
may compute fp32 matmuls and convolutions in bf16 or TF32 when its ``fp32_precision`` says so)."""


def _read(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except Exception:  # a mix of torch's two precision APIs makes the old getters raise: unknown
        log.debug("a precision flag was not read", exc_info=True)
        return None


def _new_api(*paths: tuple[str, ...]) -> str | None:
    """The first of ``paths`` (attribute paths under ``torch.backends``) whose ``fp32_precision`` is not ``none``."""
    for path in paths:
        node: Any = torch.backends
        for name in path:
            node = getattr(node, name, None)
        value = _read(partial(getattr, node, "fp32_precision", None))
        if value is not None and str(value) != "none":
            return str(value)
    return None


def _tf32(legacy: Callable[[], Any], *paths: tuple[str, ...]) -> bool | None:
    """An old ``allow_tf32`` flag; when it cannot be read, what the new API says outright (None: unknown)."""
    value = _read(lambda: bool(legacy()))
    if value is not None:
        return value
    precision = _new_api(*paths)
    return {"tf32": True, "ieee": False}.get(precision or "")


def read_flags() -> dict[str, Any]:
    """The precision settings in effect now, by :data:`FLAG_NAMES` (each None where it cannot be read)."""
    mkldnn: Any = getattr(torch.backends, "mkldnn", None)  # its matmul and conv settings: torch 2.9 on
    return {
        "tf32_matmul": _tf32(lambda: torch.backends.cuda.matmul.allow_tf32, ("cuda", "matmul"), ()),
        "tf32_cudnn": _tf32(lambda: torch.backends.cudnn.allow_tf32, ("cudnn", "conv"), ("cudnn",), ()),
        "float32_matmul_precision": _read(torch.get_float32_matmul_precision),
        "fp32_precision_matmul": _read(lambda: str(torch.backends.cuda.matmul.fp32_precision)),
        "fp32_precision_cudnn": _read(lambda: str(torch.backends.cudnn.fp32_precision)),
        # torch 2.9's new API only (None before): ``none`` inherits, from ``mkldnn`` then the global setting
        "fp32_precision_mkldnn_matmul": _read(lambda: str(mkldnn.matmul.fp32_precision)),
        "fp32_precision_mkldnn_conv": _read(lambda: str(mkldnn.conv.fp32_precision)),
    }


def apply(precision: str) -> None:
    """Set the TF32 flags for ``precision`` (``default``: leave them); OptionsError when torch does not take them.

    The flags are read back: a torch whose old setters no longer set what they name fails the
    run rather than measuring another precision than its row says.
    """
    if precision == "default":
        return
    on = precision == "tf32"
    try:
        torch.backends.cuda.matmul.allow_tf32 = on
        torch.backends.cudnn.allow_tf32 = on
    except Exception as exc:  # shown as the option's error; the traceback is logged
        log.debug("setting the TF32 flags failed", exc_info=True)
        raise OptionsError("precision", f"{precision} could not be set in torch {torch.__version__} "
                                        f"({type(exc).__name__}: {exc})") from None
    flags = read_flags()
    wrong = [name for name in ("tf32_matmul", "tf32_cudnn") if flags[name] is not None and flags[name] != on]
    if wrong:
        raise OptionsError("precision", f"{precision} did not take in torch {torch.__version__}: "
                                        f"{', '.join(wrong)} read {str(not on).lower()} after setting it")


def tf32_in_effect(flags: dict[str, Any], device: torch.device) -> bool:
    """Whether fp32 matmuls or cuDNN convolutions on ``device`` may round their inputs to TF32.

    TF32 exists on CUDA only; on the CPU the flags change nothing.
    """
    return device.type == "cuda" and bool(flags.get("tf32_matmul") or flags.get("tf32_cudnn"))
