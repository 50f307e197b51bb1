"""Parameter sweeps: every meaningful combination of compile settings and workload parameters.

Like hyperfine's ``-L``: each axis is a list, and every combination becomes one run.
An axis left as None keeps the base option's value. Combinations that would run the
same configuration twice are dropped: a backend that ignores ``mode`` and inductor options
(``options.mode_applies``; all but inductor) runs once in the default mode, without them.

The axes are one table, :data:`SWEEP_AXES`: a row per run option a sweep takes a list of (its
spec in :mod:`tui.engine.option_table` says ``sweep=True``), with how a listed value is read and
checked and the words of its ``run`` and ``sweep`` flags. :func:`expand` and the command line
(``tui.cli.run_flags`` writes the flags, ``tui.cli.parse`` reads them) are generic over it, so a new
axis is a row here (and ``sweep=True`` in its spec). The workload parameters (``params_grid``) are
the one axis of their own: a grid of several parameters.

Order is deterministic: workload parameters vary slowest (in the order of ``params_grid``'s
keys), then the table's rows in order: backend, mode, fullgraph, dynamic, dtype, precision, and the
interpreter (``pythons``, an A/B of torch builds) fastest, so the sides of a pair run back to back
and drift hits both.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tui.engine.option_table import OPTIONS
from tui.engine.options import (
    BACKENDS, DEFAULT_MODE, DTYPE_WORDS, DYNAMIC_CHOICES, MODES, PRECISIONS, OptionsError, RunOptions,
    check_mode, check_precision, mode_applies, parse_dynamic,
)  # fmt: skip

__all__ = ["expand", "SweepAxis", "SWEEP_AXES", "AXES_BY_FIELD"]


def _axis(name: str, values: Iterable[Any] | None, current: Any) -> list[Any]:
    if values is None:
        return [current]
    if isinstance(values, (str, bytes)):
        values = [values]
    result = list(dict.fromkeys(values))
    if not result:
        raise OptionsError(name, "the sweep list is empty (give at least one value)")
    return result


def _parse_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"true", "1", "yes", "on"}:
        return True
    if text in {"false", "0", "no", "off"}:
        return False
    raise OptionsError(name, f"{value!r} is not allowed (allowed: true, false)")


def _checked(check: Callable[[Any], None]) -> Callable[[Any], Any]:
    def value(item: Any) -> Any:
        check(item)
        return item

    return value


@dataclass(frozen=True)
class SweepAxis:
    """One sweep axis: a run option that ``compile-lab sweep`` (and the app's sweep) takes a list of."""

    field: str
    """The RunOptions field (its flag is its spec's in the option table)."""
    run_flag: Mapping[str, Any]
    """The argparse keywords of ``run``'s flag (one value)."""
    sweep_flag: Mapping[str, Any]
    """The argparse keywords of ``sweep``'s flag (a comma list, or :attr:`words`)."""
    value: Callable[[Any], Any] | None = None
    """One value as the options hold it, checked (OptionsError naming the field); None: as given."""
    words: Mapping[str, tuple[Any, ...]] | None = None
    """``sweep``'s flag as a word for a list of values (fullgraph: ``both``), instead of a comma list."""
    alias: tuple[str, Any, str] | None = None
    """``(flag, value, help)``: a switch beside the flag that means ``--field value`` (``--tf32``)."""
    group: str = "compile"
    """The help's group of its flags."""

    @property
    def keyword(self) -> str:
        """:func:`expand`'s keyword for the axis's list (``modes``)."""
        return self.field + "s"

    def read(self, item: Any) -> Any:
        """One listed value as the options hold it (OptionsError when it is refused)."""
        return item if self.value is None else self.value(item)


_DEFAULTS = RunOptions()

SWEEP_AXES: tuple[SweepAxis, ...] = (
    SweepAxis("backend",
              {"metavar": "NAME",
               "help": f"{', '.join(BACKENDS)} or another registered backend (default {_DEFAULTS.backend})"},
              {"metavar": "LIST", "help": f"comma list of backends, e.g. {','.join(BACKENDS[:2])}"},
              value=lambda item: str(item).strip()),
    SweepAxis("mode",
              {"metavar": "MODE", "help": f"{', '.join(MODES)} (inductor only; default: {_DEFAULTS.mode})"},
              {"metavar": "LIST", "help": f"comma list of modes ({', '.join(MODES)})"},
              value=_checked(check_mode)),
    SweepAxis("fullgraph",
              {"action": argparse.BooleanOptionalAction, "default": None, "help": "refuse graph breaks"},
              {"metavar": "WHICH", "help": "both, true or false"},
              value=lambda item: _parse_bool("fullgraph", item),
              words={"both": (False, True), "true": (True,), "false": (False,)}),
    SweepAxis("dynamic",
              {"metavar": "WHICH", "help": f"{', '.join(DYNAMIC_CHOICES)} (default auto)"},
              {"metavar": "LIST", "help": f"comma list of {', '.join(DYNAMIC_CHOICES)}"},
              value=parse_dynamic),
    SweepAxis("dtype",
              {"metavar": "DTYPE", "help": f"{DTYPE_WORDS} (default {_DEFAULTS.dtype})"},
              {"metavar": "LIST", "help": f"comma list of dtypes ({DTYPE_WORDS})"}),
    SweepAxis("precision",
              {"metavar": "WHICH", "help": f"{', '.join(PRECISIONS)}: torch's TF32 flags untouched, TF32 off, or on "
                                           f"for matmuls and cuDNN, both sides (default {_DEFAULTS.precision})"},
              {"metavar": "LIST", "help": f"comma list of precisions ({', '.join(PRECISIONS)})"},
              value=_checked(check_precision),
              alias=("--tf32", "tf32", "the same as --precision tf32 (kept for scripts that use it)")),
    SweepAxis("python",
              {"metavar": "PATH", "help": "the interpreter the worker runs in (default: this one)"},
              {"metavar": "PATH[,PATH]", "help": "the interpreter the worker runs in (default: this one); a comma "
                                                 "list is an A/B of torch builds, run interleaved and diffed"},
              group="what"),
)  # fmt: skip
"""Every sweep axis but the workload parameters, in the order they vary (the last fastest)."""

AXES_BY_FIELD: dict[str, SweepAxis] = {axis.field: axis for axis in SWEEP_AXES}

assert set(AXES_BY_FIELD) | {"params"} == {spec.name for spec in OPTIONS if spec.sweep}, (
    "every option whose spec says sweep=True needs a row in SWEEP_AXES (params: the grid), and only those")


def expand(base: RunOptions, *, params_grid: dict[str, list[Any]] | None = None,
           **axes: Iterable[Any] | None) -> list[RunOptions]:
    """Every meaningful combination, each validated (``RunOptions.validated()``).

    ``axes``: a list per axis by its keyword (``modes=[...]``, ``fullgraphs=[...]``, one per row of
    :data:`SWEEP_AXES`); an axis not given keeps ``base``'s value. Raises OptionsError for the first
    invalid value or combination (the axes in the table's order, then the parameters), e.g. an unknown
    mode or a workload parameter out of range; nothing is returned then. TypeError for an unknown keyword.
    """
    known = {axis.keyword for axis in SWEEP_AXES}
    unknown = sorted(set(axes) - known)
    if unknown:
        raise TypeError(f"expand() got an unexpected keyword argument {unknown[0]!r} (axes: {', '.join(known)})")
    lists = [
        list(dict.fromkeys(axis.read(v) for v in _axis(axis.field, axes.get(axis.keyword), getattr(base, axis.field))))
        for axis in SWEEP_AXES
    ]
    grid = params_grid or {}
    names = list(grid)
    value_lists = [_axis(f"params.{name}", grid[name], None) for name in names]

    results: list[RunOptions] = []
    seen: set[str] = set()
    for param_values in itertools.product(*value_lists):
        params = {**base.params, **dict(zip(names, param_values, strict=True))}
        for combination in itertools.product(*lists):
            changes: dict[str, Any] = {"params": params}
            changes.update((axis.field, value) for axis, value in zip(SWEEP_AXES, combination, strict=True))
            if not mode_applies(changes["backend"]):
                # The backend ignores both: one run instead of several identical ones.
                changes["mode"] = DEFAULT_MODE
                changes["inductor_options"] = {}
            options = dataclasses.replace(base, **changes).validated()
            key = json.dumps(options.to_dict(), sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                results.append(options)
    return results
