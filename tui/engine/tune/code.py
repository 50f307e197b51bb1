"""A configuration as code to paste: the ``torch.compile(...)`` call, and the ``torch._inductor.config`` form.

Both say the same thing: the call passes ``mode`` or ``options`` (torch refuses both together), the
config form sets each option on ``torch._inductor.config`` (a mode as the options it stands for)
and calls ``torch.compile`` with the rest. Every value is written with ``repr``, so the text is
valid Python (a test compiles it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tui.engine.options import DEFAULT_MODE, RunOptions
from tui.engine.tune.space import config_settings

__all__ = ["compile_call", "config_form", "config_settings"]


def _arguments(options: RunOptions, with_mode: bool) -> list[str]:
    args = ["model"]
    if options.backend != "inductor":
        args.append(f"backend={options.backend!r}")
    if with_mode and options.mode != DEFAULT_MODE:
        args.append(f"mode={options.mode!r}")
    if options.fullgraph:
        args.append("fullgraph=True")
    if options.dynamic is not None:
        args.append(f"dynamic={options.dynamic!r}")
    return args


def compile_call(options: RunOptions) -> str:
    """``torch.compile(model, mode=..., fullgraph=..., dynamic=..., options={...})`` (defaults left out)."""
    args = _arguments(options, with_mode=True)
    if options.inductor_options:
        pairs = ", ".join(f"{key!r}: {value!r}" for key, value in sorted(options.inductor_options.items()))
        args.append(f"options={{{pairs}}}")
    return f"compiled = torch.compile({', '.join(args)})"


def config_form(options: RunOptions, modes: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """``import torch._inductor.config``, one assignment per option (a mode's included), then the call."""
    settings = config_settings(options, modes)
    lines = ["import torch", "import torch._inductor.config"]
    if options.mode != DEFAULT_MODE and set(settings) - set(options.inductor_options):
        then = ", then the options" if options.inductor_options else ""
        lines.append(f"# the settings of mode {options.mode!r} (torch's own list for it){then}")
    lines += [f"torch._inductor.config.{key} = {value!r}" for key, value in sorted(settings.items())]
    lines.append(f"compiled = torch.compile({', '.join(_arguments(options, with_mode=False))})")
    return "\n".join(lines)
