"""How often a growing confirmation ends in each answer, by its cap on processes a side (a simulation).

The tuner's confirmation starts at 3 processes a side and, while its reading is ``inconclusive``, adds one a
side and judges again, up to a cap (tui/engine/tune/answer.py). Each look can end it: ``faster`` (the
interval's low end above 1 + t: confirmed), or an interval whose high end is within 1 + t (nothing beats the
default by more than t). Looking again after each addition is sequential testing; this script puts numbers on
what that costs and buys.

Model: a process's log speedup is normal around the configuration's own level with standard deviation ``s``
(the across-process spread of section 13 of docs/BENCHMARKS.md: 0.009 in the seventh CPU tune's
confirmation, 0.024 in the quietest CPU collection, 0.052 in the hold-out's state). The interval at each look
is Student's t on the difference of the two sides' mean log speedups (equal sizes, pooled variance): the
engine's bootstrap interval is a different estimator, so the figures are the rule's shape, not the engine's
exact rates.

    python benchmarks/confirm_looks.py [--trials 20000] [--seed 1]   # needs numpy and scipy

Prints, for each spread, true gain and cap, the share of confirmations that end confirmed, the share that end
"nothing beats", and the mean processes a side they used.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats

FIRST = 3
THRESHOLD = 0.02


def simulate(spread: float, gain: float, cap: int, trials: int, rng: np.random.Generator) -> tuple[float, float, float]:
    """(share confirmed, share "nothing beats", mean processes a side) over ``trials`` confirmations."""
    winner = rng.normal(math.log(gain), spread, size=(trials, cap))
    default = rng.normal(0.0, spread, size=(trials, cap))
    edge = math.log(1 + THRESHOLD)
    ended = np.zeros(trials, dtype=bool)
    confirmed = np.zeros(trials, dtype=bool)
    nothing = np.zeros(trials, dtype=bool)
    used = np.full(trials, cap)
    for n in range(FIRST, cap + 1):
        w, d = winner[:, :n], default[:, :n]
        diff = w.mean(axis=1) - d.mean(axis=1)
        pooled = np.sqrt((w.var(axis=1, ddof=1) + d.var(axis=1, ddof=1)) / 2)
        half = stats.t.ppf(0.975, 2 * n - 2) * pooled * math.sqrt(2 / n)
        low, high = diff - half, diff + half
        now_confirmed = ~ended & (low > edge)
        now_nothing = ~ended & ~now_confirmed & (high <= edge)
        confirmed |= now_confirmed
        nothing |= now_nothing
        newly = now_confirmed | now_nothing
        used[newly] = n
        ended |= newly
    return float(confirmed.mean()), float(nothing.mean()), float(used.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--caps", default="5,8,12,16")
    parser.add_argument("--spreads", default="0.009,0.024,0.052")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    caps = [int(c) for c in args.caps.split(",")]
    print("| spread s | true gain | " + " | ".join(f"cap {c}: confirmed / nothing beats / n" for c in caps) + " |")
    print("|---|---|" + "---|" * len(caps))
    for spread in (float(s) for s in args.spreads.split(",")):
        for gain in (1.00, 1.01, 1.02, 1.03, 1.05):
            cells = []
            for cap in caps:
                yes, none, n = simulate(spread, gain, cap, args.trials, rng)
                cells.append(f"{yes * 100:.1f}% / {none * 100:.1f}% / {n:.1f}")
            print(f"| {spread} | {gain:.2f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
