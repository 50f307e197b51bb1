"""Does ``compare``'s drift rule cry wolf? Same-configuration pairs of stored runs, judged under four drift rules.

A process whose speedup drifted past ``max_drift`` within its run: ``compare`` (and a tune's confirmation, which
uses its statistic) called the pair ``noisy`` whatever words the drift's two ends read, while a run's own
verdict notes a drift whose two ends read the same word. This script draws seeded pairs of disjoint groups of
``--size`` processes (BASE, NEW) from the stored runs of one configuration (the calibration collections of
docs/BENCHMARKS.md section 10: the truth is "no change") and judges each pair with ``compare``'s judge under:

* ``noise``: the rule until section 24, any drift past the limit a noise reason;
* ``own word``: a drift a noise reason only where it changes the process's own word over eager (the run's rule);
* ``pair word``: as ``own word``, and noisy where the drift changes the pair's word (NEW's speedup over BASE's,
  read at the drift's first and last quarter as a point), the analogue of the run's rule for a comparison;
* ``inconclusive``: the engine's rule since section 24, a drift past the limit caps the pair at inconclusive,
  naming it (:func:`tui.engine.compare.judge._drifts`).

Per collection, configuration and rule: pairs ``noisy``, pairs ``noisy`` for a drift alone, pairs
``inconclusive`` for a drift, and pairs whose word is confidently wrong (``faster`` or ``slower``, the truth
being the same configuration on both sides).

    python benchmarks/compare_drift.py DIR [DIR ...] [--tag quiet] [--pairs 40] [--size 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate_judge import records_by_config  # noqa: E402

from tui.engine.compare import judge as judge_module  # noqa: E402
from tui.engine.compare.judge import CompareSettings, judge_pair  # noqa: E402
from tui.engine.compare.matching import Pair, config_key  # noqa: E402
from tui.engine.measure import verdict as verdict_module  # noqa: E402

RULES = ("noise", "own word", "pair word", "inconclusive")


def _any_drift_assess(eager, compiled, low, high, machine, policy, what="time", host=False, paired_drift=True):
    """The rule until section 24: the speedup's drift past the limit is a noise reason, whatever its words."""
    checks = verdict_module.assess(eager, compiled, low, high, machine, policy, what, host, paired_drift=False)
    said = verdict_module.past_drift(eager, compiled, policy, what)
    return checks + verdict_module.Assessment((said,)) if said else checks


def _own_word_assess(eager, compiled, low, high, machine, policy, what="time", host=False, paired_drift=True):
    """The run's rule: a drift is a reason only where its two ends read different words over eager."""
    return verdict_module.assess(eager, compiled, low, high, machine, policy, what, host, paired_drift=True)


def _drifts(records, settings):
    """Each process's speedup drift past the limit (eager and compiled device series), None where within it."""
    side = judge_module._side("x", records, settings)
    limit = settings.policy(settings.threshold).max_drift
    found = []
    for process in side.processes:
        eager, compiled = process.series[("eager", "iter")], process.series[("compiled", "iter")]
        drift = verdict_module.speedup_drift(eager, compiled) if eager and compiled else None
        found.append(drift if drift is not None and abs(drift.change) > limit else None)
    return found


def _pair_word_noisy(base, new, change, settings) -> bool:
    """A drifting process whose drift's two ends give the pair different words (as points)."""
    t = settings.threshold
    word = verdict_module.point_word
    for drift in _drifts(new, settings):
        if drift is not None and word(drift.first / change.base, t) != word(drift.last / change.base, t):
            return True
    for drift in _drifts(base, settings):
        if drift is not None and word(change.new / drift.first, t) != word(change.new / drift.last, t):
            return True
    return False


def judged(base, new, rule: str):
    """``compare``'s change of the speedup for ``base`` against ``new`` (records) under ``rule``."""
    pair = Pair(key=config_key(base[0]), base=tuple(base), new=tuple(new), names=("BASE", "NEW"))
    settings = CompareSettings(metric="speedup", threshold=0.02)
    if rule == "inconclusive":
        return judge_pair(pair, settings).change("speedup")
    assess = _any_drift_assess if rule == "noise" else _own_word_assess
    with mock.patch.object(judge_module, "assess", assess), mock.patch.object(judge_module, "_drifts",
                                                                               lambda *a: []):
        change = judge_pair(pair, settings).change("speedup")
    if rule == "pair word" and change is not None and change.verdict != "noisy" and change.base and change.new \
            and _pair_word_noisy(base, new, change, settings):
        return dataclasses.replace(change, verdict="noisy", reasons=("a drift that changes the pair's word",))
    return change


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--tag", default="quiet", help="the runs' tag in the collection (quiet, busy)")
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--size", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("| collection | configuration | rule | pairs | noisy | noisy for a drift alone | inconclusive for a drift "
          "| confident-wrong |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for folder in args.dirs:
        for config, records in sorted(records_by_config(folder, args.tag).items()):
            if len(records) < 2 * args.size:
                continue
            rng = random.Random(args.seed)
            draws = [rng.sample(records, 2 * args.size) for _ in range(args.pairs)]
            for rule in RULES:
                noisy = drift_only = capped = wrong = 0
                for draw in draws:
                    change = judged(draw[: args.size], draw[args.size:], rule)
                    if change is None:
                        continue
                    drifted = bool(change.reasons) and all("drift" in reason for reason in change.reasons)
                    if change.verdict == "noisy":
                        noisy += 1
                        drift_only += drifted
                    elif change.verdict == "inconclusive":
                        capped += drifted
                    elif change.verdict in ("faster", "slower"):
                        wrong += 1
                print(f"| {Path(folder).name} | {config} | {rule} | {len(draws)} | {noisy} | {drift_only} | {capped} "
                      f"| {wrong} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
