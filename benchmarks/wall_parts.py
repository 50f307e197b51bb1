"""Where each run of a JSON export spent its wall time: one line per run, its parts in seconds.

    python3 benchmarks/wall_parts.py tune.json

Columns: the run's tune stage (or its mode), each part of ``wall_time`` (tui.engine.store.wall_time) and its
total; ``compile_s``, the profile pass's re-compile (``p.compile``) and its kernel-diff groups (``diffs``);
``gap``: seconds from the previous run's end (its ``created`` plus its total) to this run's ``created``, the
time the session spent between runs (queueing, saving). A field a run lacks shows a dash.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tui.engine.store.wall_time import PARTS  # noqa: E402

SHORT = ("wait", "start", "build", "compile", "warm", "accuracy", "measure", "diagnose", "end")
"""Each of PARTS as a column's heading."""


def _load(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        return json.load(handle)["runs"]


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    runs = sorted(_load(Path(argv[0])), key=lambda run: run.get("created") or 0)
    names = (*SHORT, "total", "compile_s", "p.compile", "diffs", "gap")
    print(f"{'run':<24} {'stage':<14} " + " ".join(f"{name:>9}" for name in names))
    previous_end = None
    for run in runs:
        wall = run.get("wall_time") or {}
        values = [wall.get(f"{part}_s") for part in PARTS]
        total = sum(v for v in values if v is not None) if any(v is not None for v in values) else None
        created = run.get("created")
        gap = created - previous_end if previous_end is not None and created is not None else None
        previous_end = created + total if created is not None and total is not None else None
        stage = run.get("tune_stage") or (run.get("options") or {}).get("mode") or ""
        profile = run.get("profile") or {}
        diffs = profile.get("diff")
        figures = (*values, total, run.get("compile_s"), profile.get("compile_s"))
        cells = " ".join(f"{_cell(v):>9}" for v in figures)
        cells += f" {'-' if diffs is None else len(diffs):>9} {_cell(gap):>9}"
        print(f"{run.get('run_id', '?'):<24} {stage[:14]:<14} {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
