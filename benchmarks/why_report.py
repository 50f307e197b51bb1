"""Print the details screen's "why" tabs (Kernels, Host time, Graphs and breaks) of every run in a JSON export.

The same renderers as the app (tui.app.components.details), as plain text at a given width,
so docs/BENCHMARKS.md and the README quote exactly what a user sees.

    python3 benchmarks/why_report.py runs.json [--width 100] [--tabs kernels,host,graphs]
"""

from __future__ import annotations

import argparse
import json
import os

from rich.console import Console

from tui.app.components.details import render_tab
from tui.engine.store.results import RunRecord


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json_export")
    parser.add_argument("--width", type=int, default=100)
    parser.add_argument("--tabs", default="kernels,host,graphs")
    args = parser.parse_args()
    with open(args.json_export, encoding="utf-8") as handle:
        runs = json.load(handle)["runs"]
    console = Console(width=args.width, record=True, file=open(os.devnull, "w"), color_system=None)
    for data in runs:
        record = RunRecord.from_json(data)
        for tab in args.tabs.split(","):
            console.print(render_tab(record, tab))
        console.print("-" * args.width)
    print(console.export_text())


if __name__ == "__main__":
    main()
