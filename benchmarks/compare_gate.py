"""How often does ``compare``'s CI gate fail a configuration against itself, by processes a side?

Draws seeded pairs of disjoint groups of K processes (BASE, NEW) from the stored quiet runs of one configuration
(the calibration collections of docs/BENCHMARKS.md section 10: the truth is "no change") and judges each pair with
``compare``'s own judge and gate at its defaults (metric ``compiled``, or ``--metric``; threshold 2%, fail above
5%), for K = 1, 2 and 3. Per collection and configuration: the pairs whose gated verdict is ``slower`` or
``faster`` (a confident wrong word), and the pairs the gate fails. Its output is docs/BENCHMARKS.md section 29.

    PYTHONPATH=$PWD python3 benchmarks/compare_gate.py DIR [DIR ...] [--pairs 40] [--sizes 1,2,3] [--metric speedup]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate_judge import records_by_config  # noqa: E402

from tui.engine.compare.judge import CompareSettings, judge_pair  # noqa: E402
from tui.engine.compare.matching import Pair, config_key  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--tag", default="quiet", help="the runs' tag in the collection (quiet, busy)")
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--sizes", default="1,2,3")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--metric", default="compiled", help="the gated metric (compare's --metric)")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    settings = CompareSettings(metric=args.metric)
    print("| collection | configuration | " + " | ".join(f"K={k}: wrong word / gate fails" for k in sizes) + " |")
    print("|---|---|" + "---:|" * len(sizes))
    for folder in args.dirs:
        for config, records in sorted(records_by_config(folder, args.tag).items()):
            cells = []
            for size in sizes:
                if len(records) < 2 * size:
                    cells.append("–")
                    continue
                rng = random.Random(args.seed)
                wrong = fails = judged = 0
                for _ in range(args.pairs):
                    draw = rng.sample(records, 2 * size)
                    pair = Pair(key=config_key(draw[0]), base=tuple(draw[:size]), new=tuple(draw[size:]),
                                names=("BASE", "NEW"))
                    result = judge_pair(pair, settings)
                    judged += 1
                    wrong += result.verdict in ("faster", "slower")
                    fails += bool(result.fails)
                cells.append(f"{wrong} / {fails} of {judged}")
            print(f"| {Path(folder).name} | {config} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
