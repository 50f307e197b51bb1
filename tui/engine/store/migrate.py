"""Reading older history: each stored schema is upgraded, step by step, to the one written now.

A history is appended to and never rewritten, so lines of every schema ever written live
side by side in one file; each is upgraded in memory when it is read. Schema 1 (until
protocol 2) named a block's host-inclusive time per call ``wall_ms_per_call``; schema 2
calls it ``host_ms_per_call``, like every other place from the worker to the CSV, and
checks every field's type when a line is read. Schema 2 stored a boolean ``tf32`` option;
schema 3 a three-way ``precision`` (``default``, ``ieee``, ``tf32``): an older line's ``tf32``
true reads as ``tf32`` and false as ``ieee``, and the run's warnings say so
(:func:`tui.engine.store.stored_options.upgrade_tf32_run`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tui.engine.store.stored_options import upgrade_tf32_run

__all__ = ["SCHEMA", "upgrade_line", "upgrade_samples"]

SCHEMA = 3
"""The schema of the lines and samples files written now."""


def _same(data: dict[str, Any]) -> dict[str, Any]:
    return data  # the step changed the other file only (1 to 2: samples; 2 to 3: lines)


def _samples_1_to_2(samples: dict[str, Any]) -> dict[str, Any]:
    upgraded: dict[str, Any] = {}
    for side, blocks in samples.items():
        if not isinstance(blocks, list):
            upgraded[side] = blocks
            continue
        upgraded[side] = [
            {("host_ms_per_call" if k == "wall_ms_per_call" else k): v for k, v in block.items()}
            if isinstance(block, dict) else block
            for block in blocks
        ]
    return upgraded


_LINE_STEPS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _same, 2: upgrade_tf32_run}
_SAMPLES_STEPS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _samples_1_to_2, 2: _same}


def _upgrade(data: dict[str, Any], schema: Any, steps: dict[int, Callable]) -> tuple[dict[str, Any], bool]:
    """Apply every step from ``schema`` up; (data, True) when it reached :data:`SCHEMA`."""
    if (
        not isinstance(schema, int)
        or isinstance(schema, bool)
        or schema > SCHEMA
        or (schema < SCHEMA and schema not in steps)
    ):
        return data, schema == SCHEMA
    while schema < SCHEMA:
        data = steps[schema](data)
        schema += 1
    return data, True


def upgrade_line(item: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """A history line of any known schema as a line of :data:`SCHEMA`; False when the schema is unknown."""
    return _upgrade(item, item.get("schema"), _LINE_STEPS)


def upgrade_samples(samples: dict[str, Any], schema: Any) -> dict[str, Any]:
    """A samples file's ``samples`` of ``schema`` as :data:`SCHEMA` (read as-is when unknown)."""
    return _upgrade(samples, schema, _SAMPLES_STEPS)[0]
