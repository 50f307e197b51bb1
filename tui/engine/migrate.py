"""Reading older history: each stored schema is upgraded, step by step, to the one written now.

A history is appended to and never rewritten, so lines of every schema ever written live
side by side in one file; each is upgraded in memory when it is read. Schema 1 (until
protocol 2) named a block's host-inclusive time per call ``wall_ms_per_call``; schema 2
calls it ``host_ms_per_call``, like every other place from the worker to the CSV, and
checks every field's type when a line is read.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["SCHEMA", "upgrade_line", "upgrade_samples"]

SCHEMA = 2
"""The schema of the lines and samples files written now."""


def _line_1_to_2(item: dict[str, Any]) -> dict[str, Any]:
    return item  # the line's fields kept their names; only samples files changed


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


_LINE_STEPS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _line_1_to_2}
_SAMPLES_STEPS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _samples_1_to_2}


def _upgrade(data: dict[str, Any], schema: Any, steps: dict[int, Callable]) -> tuple[dict[str, Any], bool]:
    """Apply every step from ``schema`` up; (data, True) when it reached :data:`SCHEMA`."""
    if not isinstance(schema, int) or isinstance(schema, bool) or schema > SCHEMA or (schema < SCHEMA and schema not in steps):
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
