"""Across-process intervals on stored quiet runs: the engine's pooled hierarchical bootstrap (A) against the
median of per-process speedups, bootstrapped over processes (B), Student's t interval of the processes'
mean log speedup (C), and the geometric mean of per-process speedups with processes, then each one's block pairs,
resampled (D).

For each configuration, 40 groups of 3 and of 5 drawn (seeded) from its quiet runs; m is the median of the
quiet runs' own speedups. Prints each estimator's coverage of m, its decisive share at a 2% threshold and
its median relative width (hi/lo - 1). A study, not a rule: docs/BENCHMARKS.md section 13 has its output.

    PYTHONPATH=$PWD python3 benchmarks/across_process_estimators.py DIR...   (unpacked calibrate.py collections)
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import calibrate_judge as cj  # noqa: E402  (benchmarks/ is not a package)

from tui.engine.measure.stats import bootstrap_speedup_processes  # noqa: E402
from tui.engine.measure.verdict import INCONCLUSIVE, judge_interval  # noqa: E402

THRESHOLD = 0.02
GROUPS = 40
RESAMPLES = 2000
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def median_of_processes(speedups: Sequence[float], rng: np.random.Generator) -> tuple[float, float]:
    """B: the 95% percentile interval of the median of per-process speedups, processes resampled."""
    values = np.array(speedups)
    draws = rng.integers(0, len(values), size=(RESAMPLES, len(values)))
    medians = np.median(values[draws], axis=1)
    return float(np.percentile(medians, 2.5)), float(np.percentile(medians, 97.5))


def t_interval(speedups: Sequence[float]) -> tuple[float, float]:
    """C: Student's t 95% interval of the mean log speedup across processes, exponentiated."""
    logs = np.log(np.array(speedups))
    half = T_975[len(logs) - 1] * float(np.std(logs, ddof=1)) / np.sqrt(len(logs))
    centre = float(np.mean(logs))
    return float(np.exp(centre - half)), float(np.exp(centre + half))


def geometric_of_processes(blocks: Sequence[tuple[list[list[float]], list[list[float]]]],
                           rng: np.random.Generator) -> tuple[float, float, float]:
    """D: (point, low, high): the geometric mean of each process's own speedup (the ratio of its medians); the
    95% percentile interval with the processes resampled, then each drawn process's block pairs."""
    units = []
    for eager, compiled in blocks:
        pairs = [(np.asarray(e, float), np.asarray(c, float)) for e, c in zip(eager, compiled, strict=False) if e and c]
        units.append(pairs)
    own = [np.median(np.concatenate([e for e, _ in u])) / np.median(np.concatenate([c for _, c in u])) for u in units]
    point = float(np.exp(np.mean(np.log(own))))
    logs = np.empty(RESAMPLES)
    for r in range(RESAMPLES):
        total = 0.0
        for p in rng.integers(0, len(units), size=len(units)):
            u = units[p]
            drawn = rng.integers(0, len(u), size=len(u))
            total += np.log(np.median(np.concatenate([u[i][0] for i in drawn]))
                            / np.median(np.concatenate([u[i][1] for i in drawn])))
        logs[r] = total / len(units)
    return point, float(np.exp(np.percentile(logs, 2.5))), float(np.exp(np.percentile(logs, 97.5)))


def study(members: list[cj.Stored], size: int) -> dict[str, tuple[int, int, float, int]]:
    """Per estimator: (groups covering m, decisive groups, median relative width, groups)."""
    speedups = [m.record.summary().speedup for m in members]
    m = statistics.median(speedups)
    blocks = [(cj._blocks(r.record, "eager", "iter"), cj._blocks(r.record, "compiled", "iter")) for r in members]
    combos = list(itertools.combinations(range(len(members)), size))
    random.Random(0).shuffle(combos)
    combos = combos[:GROUPS]
    rng = np.random.default_rng(0)
    found: dict[str, list[tuple[float, float]]] = {"A": [], "B": [], "C": [], "D": []}
    outside = {"A": 0, "D": 0, "D in A": 0}
    for combo in combos:
        pooled = bootstrap_speedup_processes([blocks[i] for i in combo], RESAMPLES, seed=0)
        if pooled.low is not None and pooled.high is not None:
            found["A"].append((pooled.low, pooled.high))
        point, low, high = geometric_of_processes([blocks[i] for i in combo], rng)
        found["D"].append((low, high))
        own = [speedups[i] for i in combo]
        outside["A"] += pooled.point is not None and not min(own) <= pooled.point <= max(own)
        outside["D"] += not min(own) - 1e-12 <= point <= max(own) + 1e-12
        bounded = pooled.low is not None and pooled.high is not None
        outside["D in A"] += bounded and not pooled.low <= point <= pooled.high
        found["B"].append(median_of_processes([speedups[i] for i in combo], rng))
        found["C"].append(t_interval([speedups[i] for i in combo]))
    study.outside = outside  # type: ignore[attr-defined]
    return {name: (sum(lo <= m <= hi for lo, hi in intervals),
                   sum(judge_interval(lo, hi, THRESHOLD) != INCONCLUSIVE for lo, hi in intervals),
                   statistics.median(hi / lo - 1 for lo, hi in intervals), len(intervals))
            for name, intervals in found.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", help="unpacked collections (each holds CONFIG/*.json)")
    args = parser.parse_args()
    for folder in args.dirs:
        quiet = [r for r in cj.load_runs([folder], 0.5, False) if r.tag == "quiet"]
        by_config: dict[str, list[cj.Stored]] = {}
        for run in quiet:
            by_config.setdefault(run.config, []).append(run)
        for config, members in sorted(by_config.items()):
            for size in (3, 5):
                cells = [f"{name}: cover {c}/{n} decisive {d}/{n} width {w * 100:.1f}%"
                         for name, (c, d, w, n) in study(members, size).items()]
                print(f"{Path(folder).name:14s} {config:10s} x{size}  " + "  ".join(cells)
                      + f"  point outside the processes' own: A {study.outside['A']}, D {study.outside['D']}; "
                      f"D's point outside A's interval {study.outside['D in A']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
