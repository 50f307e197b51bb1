"""Parameter sweeps: every meaningful combination of compile settings and workload parameters.

Like hyperfine's ``-L``: each axis is a list, and every combination becomes one run.
An axis left as None keeps the base option's value. Combinations that would run the
same configuration twice are dropped: a backend that ignores ``mode`` and inductor options
(``options.mode_applies``; all but inductor) runs once in the default mode, without them.

Order is deterministic: workload parameters vary slowest (in the order of
``params_grid``'s keys), then backend, mode, fullgraph, dynamic, dtype, precision, and the interpreter
(``pythons``, an A/B of torch builds) fastest, so the sides of a pair run back to back and
drift hits both.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterable, Sequence
from typing import Any

from tui.engine.options import (
    DEFAULT_MODE, OptionsError, RunOptions, check_mode, check_precision, mode_applies, parse_dynamic,
)  # fmt: skip

__all__ = ["expand"]


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


def expand(
    base: RunOptions,
    *,
    modes: Sequence[str] | None = None,
    fullgraphs: Sequence[bool | str] | None = None,
    dynamics: Sequence[bool | str | None] | None = None,
    backends: Sequence[str] | None = None,
    dtypes: Sequence[str] | None = None,
    precisions: Sequence[str] | None = None,
    params_grid: dict[str, list[Any]] | None = None,
    pythons: Sequence[str | None] | None = None,
) -> list[RunOptions]:
    """Every meaningful combination, each validated (``RunOptions.validated()``).

    Raises OptionsError for the first invalid value or combination (in the order above),
    e.g. an unknown mode or a workload parameter out of range; nothing is returned then.
    """
    mode_axis = _axis("mode", modes, base.mode)
    for mode in mode_axis:
        check_mode(mode)
    fullgraph_axis = list(
        dict.fromkeys(_parse_bool("fullgraph", v) for v in _axis("fullgraph", fullgraphs, base.fullgraph))
    )
    dynamic_axis = list(dict.fromkeys(parse_dynamic(v) for v in _axis("dynamic", dynamics, base.dynamic)))
    backend_axis = [str(b).strip() for b in _axis("backend", backends, base.backend)]
    dtype_axis = _axis("dtype", dtypes, base.dtype)
    precision_axis = _axis("precision", precisions, base.precision)
    for precision in precision_axis:
        check_precision(precision)
    python_axis = _axis("python", pythons, base.python)

    grid = params_grid or {}
    names = list(grid)
    value_lists = [_axis(f"params.{name}", grid[name], None) for name in names]

    results: list[RunOptions] = []
    seen: set[str] = set()
    for param_values in itertools.product(*value_lists):
        params = {**base.params, **dict(zip(names, param_values, strict=True))}
        for backend, mode, fullgraph, dynamic, dtype, precision, python in itertools.product(
            backend_axis, mode_axis, fullgraph_axis, dynamic_axis, dtype_axis, precision_axis, python_axis
        ):
            changes: dict[str, Any] = dict(
                params=params, backend=backend, mode=mode, fullgraph=fullgraph, dynamic=dynamic, dtype=dtype,
                precision=precision, python=python,
            )
            if not mode_applies(backend):
                # The backend ignores both: one run instead of several identical ones.
                changes["mode"] = DEFAULT_MODE
                changes["inductor_options"] = {}
            options = dataclasses.replace(base, **changes).validated()
            key = json.dumps(options.to_dict(), sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                results.append(options)
    return results
