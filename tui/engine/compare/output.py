"""A comparison written to a file: CSV (one row per pair or unmatched row) and JSON (everything).

``compare --across`` (an :class:`~tui.engine.compare.across.Across`) writes the same columns after
``across``, ``baseline`` and ``kind``: one row per configuration and kind other than the baseline,
BASE being the baseline kind and NEW that kind.

Both go through the export rules (:func:`tui.engine.store.export.check_target`,
:func:`~tui.engine.store.export.atomic_writer`): a regular file or a new one, never a link, a device or
compile-lab's own data, written whole or not at all.
"""

from __future__ import annotations

import csv
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tui.engine.compare.across import Across, AcrossRow, KindCell
from tui.engine.compare.comparison import Comparison
from tui.engine.compare.judge import METRIC_NAMES, PairResult, UnmatchedRow
from tui.engine.store.export import atomic_writer, check_target
from tui.typed import finite

__all__ = ["COMPARE_SCHEMA", "CSV_COLUMNS", "ACROSS_CSV_COLUMNS", "csv_rows", "across_csv_rows", "write_compare_csv",
           "write_compare_json"]  # fmt: skip

COMPARE_SCHEMA = 1

_PER_METRIC = ("base", "new", "ratio", "ratio_low", "ratio_high", "verdict")
CSV_COLUMNS = (
    "row", "configuration", "status", "metric", "verdict", "slowdown", "fails", "base_processes", "new_processes",
    "within_process", "launch_bound", "base_accuracy", "new_accuracy",
    *(f"{m}_{what}" for m in METRIC_NAMES for what in _PER_METRIC),
    "differences", "noise_reasons", "notes", "base_runs", "new_runs",
)  # fmt: skip
"""The CSV's columns: per metric BASE's and NEW's value (ms; x for the speedup), NEW / BASE and its
95% interval, and its verdict; ``slowdown`` is the gated metric's (0.05: NEW 5% slower)."""


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def _pair_row(number: int, pair: PairResult) -> dict[str, str]:
    gated = pair.change(pair.metric)
    row = {"row": str(number), "configuration": pair.label, "status": pair.status, "metric": pair.metric,
           "verdict": pair.verdict or "", "slowdown": _number(pair.slowdown), "fails": str(pair.fails).lower(),
           "base_processes": str(pair.base_processes), "new_processes": str(pair.new_processes),
           "within_process": str(pair.within_process).lower(), "launch_bound": str(pair.launch_bound).lower(),
           "base_accuracy": pair.base_accuracy, "new_accuracy": pair.new_accuracy,
           "differences": " | ".join(pair.differences), "noise_reasons": " | ".join(gated.reasons if gated else ()),
           "notes": " | ".join(pair.notes), "base_runs": " ".join(pair.base_runs), "new_runs": " ".join(pair.new_runs)}
    for metric in METRIC_NAMES:
        change = pair.change(metric)
        for what in _PER_METRIC:
            value = getattr(change, what) if change is not None else None
            row[f"{metric}_{what}"] = value if isinstance(value, str) else _number(value)
    return {column: row[column] for column in CSV_COLUMNS}


def _unmatched_row(number: int, row: UnmatchedRow) -> dict[str, str]:
    cells = dict.fromkeys(CSV_COLUMNS, "")
    runs = " ".join(row.runs)
    cells.update({"row": str(number), "configuration": row.label, "status": f"only in {row.side.upper()}",
                  "fails": str(row.fails).lower(), "notes": row.hint,
                  "base_runs" if row.side == "base" else "new_runs": runs})  # fmt: skip
    return cells


def csv_rows(comparison: Comparison) -> list[dict[str, str]]:
    """Every pair's row, then every unmatched row, numbered as the table numbers them."""
    rows = [_pair_row(n, pair) for n, pair in enumerate(comparison.pairs, 1)]
    start = len(rows) + 1
    return rows + [_unmatched_row(n, row) for n, row in enumerate(comparison.unmatched, start)]


ACROSS_CSV_COLUMNS = ("across", "baseline", "kind", *CSV_COLUMNS)
"""``compare --across``'s CSV: which field, the baseline kind, the kind judged against it, then :data:`CSV_COLUMNS`."""


def _across_row(number: int, row: AcrossRow, cell: KindCell) -> dict[str, str]:
    if cell.result is not None:
        return _pair_row(number, cell.result)
    base = row.cells[0]
    cells = dict.fromkeys(CSV_COLUMNS, "")
    cells.update({"row": str(number), "configuration": row.label, "status": cell.status,
                  "fails": str(cell.fails).lower(), "notes": cell.hint, "base_processes": str(base.processes),
                  "new_processes": str(cell.processes), "base_runs": " ".join(base.runs),
                  "new_runs": " ".join(cell.runs)})  # fmt: skip
    for metric in METRIC_NAMES:
        cells[f"{metric}_base"] = _number(base.values.get(metric))
        cells[f"{metric}_new"] = _number(cell.values.get(metric))
    return cells


def across_csv_rows(across: Across) -> list[dict[str, str]]:
    """One row per configuration (numbered as the table numbers them) and kind other than the baseline."""
    return [{"across": across.across, "baseline": across.baseline, "kind": cell.kind, **_across_row(n, row, cell)}
            for n, row in enumerate(across.rows, 1) for cell in row.cells[1:]]


def write_compare_csv(comparison: Comparison | Across, path: str | os.PathLike[str]) -> Path:
    """The CSV of :func:`csv_rows` (or :func:`across_csv_rows`); ExportError, one line, when it cannot be written."""
    target = check_target(path)
    across = isinstance(comparison, Across)
    with atomic_writer(target) as stream:
        writer = csv.DictWriter(stream, fieldnames=ACROSS_CSV_COLUMNS if across else CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(across_csv_rows(comparison) if isinstance(comparison, Across) else csv_rows(comparison))
    return target


def comparison_json(comparison: Comparison | Across) -> dict[str, Any]:
    """``{"schema", "compared", "exit_code", "failures", ...comparison}``: what the JSON file holds."""
    now = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    return finite({"schema": COMPARE_SCHEMA, "compared": now, "exit_code": comparison.exit_code,
                   "failures": list(comparison.failures()), **comparison.to_json()})


def write_compare_json(comparison: Comparison | Across, path: str | os.PathLike[str]) -> Path:
    """The JSON of :func:`comparison_json` (ExportError, one line, when it cannot be written)."""
    target = check_target(path)
    with atomic_writer(target, newline=None) as stream:
        json.dump(comparison_json(comparison), stream, indent=1, allow_nan=False)
        stream.write("\n")
    return target
