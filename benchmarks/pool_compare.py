"""Parallel against serial runs of the same sweep (issue 16): how much do neighbours change a row?

    python3 benchmarks/pool_compare.py SERIAL.csv PARALLEL.csv > table.md

Rows are matched by workload, params, mode, fullgraph, dynamic and dtype; for each, the device
median of both sides, the host median of the compiled side, the speedups, and parallel / serial.
"""

from __future__ import annotations

import csv
import sys

KEY = ("workload", "params", "mode", "fullgraph", "dynamic", "dtype")
QUANTITIES = ("eager_median_ms", "compiled_median_ms", "eager_host_median_ms", "compiled_host_median_ms",
              "speedup", "host_speedup")


def _rows(path: str) -> dict[tuple, dict[str, str]]:
    with open(path, newline="") as handle:
        return {tuple(row.get(k, "") for k in KEY): row for row in csv.DictReader(handle)}


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def main(serial_path: str, parallel_path: str) -> None:
    serial, parallel = _rows(serial_path), _rows(parallel_path)
    print("| workload | params | mode | fullgraph | launch_bound | device (parallel) | concurrent_runs | "
          + " | ".join(f"{q} serial / parallel (ratio)" for q in QUANTITIES) + " |")
    print("|" + "---|" * (7 + len(QUANTITIES)))
    for key, alone in serial.items():
        beside = parallel.get(key)
        if beside is None:
            continue
        cells = []
        for quantity in QUANTITIES:
            a, b = _number(alone.get(quantity)), _number(beside.get(quantity))
            ratio = f" ({b / a:.3f})" if a and b else ""
            cells.append(f"{alone.get(quantity) or '-'} / {beside.get(quantity) or '-'}{ratio}")
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {alone.get('launch_bound')} | {beside.get('device')} | "
              f"{beside.get('concurrent_runs')} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
