"""The ``compile-lab run ...`` command line that reproduces a run's options.

:func:`reproduce_command` writes only the options that differ from :class:`RunOptions`'
defaults, each shell-quoted (:mod:`shlex`), so the line can be pasted into a shell as it is.
Parsed by the command line's parser, it gives back the same options (tests/test_reproduce.py
checks this for many combinations). A built-in workload's parameters are written whole, as the
run resolved them: a later version's defaults can never change what the line runs.

One option has no exact flag: ``trace`` is ``--trace PATH``, where the run kept its trace in its
own data folder; the line writes the copy to ``trace.json`` in the directory it is run in.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable
from typing import Any

from tui.engine.option_table import NEGATED, OPTIONS, PAIRS, SWITCH, TRACE_FILE, OptionSpec
from tui.engine.options import RunOptions

__all__ = ["reproduce_command", "PROGRAM", "TRACE_FILE"]

PROGRAM = "compile-lab"

_DEFAULTS = RunOptions()


def _number(value: Any) -> str:
    """An option's number as the parser reads it back exactly (``30`` for 30.0; ``0.1`` stays ``0.1``)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _scalar(value: Any) -> str:
    """A ``key=value`` item's value as ``parse_key_values`` reads it back (a float keeps its point)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _flags(spec: OptionSpec) -> Callable[[Any], list[tuple[str, str]]]:
    """The flags (flag, value; "" for a switch) that set ``spec``'s option to a value that is not its default."""
    flag = spec.flag or ""
    if spec.cli in (SWITCH, NEGATED):
        return lambda value: [(flag, "")]
    if spec.cli == PAIRS:
        return lambda mapping: [(flag, f"{key}={_scalar(value)}") for key, value in mapping.items()]
    shown = spec.shown
    if shown is not None:
        return lambda value: [(flag, shown(value))]
    return lambda value: [(flag, "" if isinstance(value, bool) else  # a switch: the value differs when given
                           _number(value) if isinstance(value, (int, float)) else str(value))]


#: RunOptions field -> the flags (flag, value; "" for a switch) that set it when it is not its default,
#: from the option table (tui.engine.option_table), in its order.
_FLAGS: dict[str, Callable[[Any], list[tuple[str, str]]]] = {spec.name: _flags(spec) for spec in OPTIONS}


def reproduce_command(options: RunOptions, repeat: int | str = 1) -> str:
    """``compile-lab run --workload cnn --param batch=64 ... --mode reduce-overhead``: the run of ``options``.

    Only the options that differ from their defaults are written, shell-quoted; ``repeat``
    (a count of processes, or ``"auto"``) adds ``--repeat`` unless it is 1. A value that starts
    with ``-`` is joined to its flag (``--python=-x``), so the parser never takes it for a flag.
    """
    words = [PROGRAM, "run"]
    for name, flags in _FLAGS.items():
        value = getattr(options, name)
        if value == getattr(_DEFAULTS, name):
            continue
        for flag, text in flags(value):
            if not text:
                words.append(flag)
            elif text.startswith("-"):
                words.append(f"{flag}={text}")
            else:
                words += [flag, text]
    if repeat != 1:
        words += ["--repeat", str(repeat)]
    return " ".join(shlex.quote(word) for word in words)
