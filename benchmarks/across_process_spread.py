"""The across-process spread of eager, compiled and speedup on stored quiet runs: which reading is steadier.

For each configuration of each collection, the standard deviation of the log of the per-process
median (all measured samples of a side pooled within the process) of eager, of compiled and of their
ratio, and the correlation of ln eager with ln compiled. docs/BENCHMARKS.md section 13 has its output.

    PYTHONPATH=$PWD python3 benchmarks/across_process_spread.py DIR...   (unpacked calibrate.py collections)
"""

from __future__ import annotations

import argparse
import collections
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import calibrate_judge as cj  # noqa: E402  (benchmarks/ is not a package)

from tui.engine.measure.stats import median  # noqa: E402
from tui.engine.store.results import RunRecord  # noqa: E402

MAX_QUIET_LOAD = 0.5
"""Quiet runs whose other processes used more cores than this are left out (calibrate_judge's default)."""


def side_median(record: RunRecord, side: str) -> float:
    """The median of every measured sample of ``side`` in one process."""
    samples = sorted(x for block in record.loaded_samples()[side] if block.stage == "measure" for x in block.ms)
    return median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", help="unpacked calibrate.py collections")
    args = parser.parse_args(argv)
    for folder in args.dirs:
        by_config: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
        for run in cj.load_runs([folder], MAX_QUIET_LOAD, True):
            if run.tag == "quiet":
                by_config[run.config].append((side_median(run.record, "eager"), side_median(run.record, "compiled")))
        print(f"== {folder}")
        print(f"{'config':<28} {'n':>3} {'sd ln e':>8} {'sd ln c':>8} {'sd ln s':>8} {'corr':>6}")
        for config, pairs in sorted(by_config.items()):
            if len(pairs) < 3:
                continue
            ln_e = [math.log(e) for e, _ in pairs]
            ln_c = [math.log(c) for _, c in pairs]
            ln_s = [math.log(e / c) for e, c in pairs]
            corr = statistics.correlation(ln_e, ln_c)
            print(f"{config[:28]:<28} {len(pairs):>3} {statistics.stdev(ln_e):>8.4f} {statistics.stdev(ln_c):>8.4f} "
                  f"{statistics.stdev(ln_s):>8.4f} {corr:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
