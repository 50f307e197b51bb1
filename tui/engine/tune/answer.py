"""The tune's answer: the confirmation's statistics, the outcome, and the result every front end shows.

The confirmation (:func:`confirm`) judges the winner's fresh processes against the default
compile's with ``compile-lab compare``'s rule (:func:`tui.engine.compare.judge.judge_pair`: each
side's processes, then their block pairs, resampled; the ratio of the speedups for the device
objective, each process's eager normalising its compiled time; the compiled host time per call
for the host objective), and against eager with the group's interval across processes
(:func:`tui.engine.store.repeats.summarize_group`). The words and the threshold are the verdict's
(:mod:`tui.engine.measure.verdict`, ``RunOptions.noise_threshold``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tui.engine.compare.judge import CompareSettings, judge_pair
from tui.engine.compare.matching import Pair, config_key
from tui.engine.measure.verdict import FASTER, INCONCLUSIVE, NO_CHANGE, SLOWER
from tui.engine.options import RunOptions
from tui.engine.status import RunStatus
from tui.engine.store.repeats import summarize_group
from tui.engine.store.results import RunRecord
from tui.engine.tune.objective import DEVICE, Objective, typical_ms
from tui.engine.tune.search import Standing

__all__ = ["CONFIRM_REPEATS", "CONFIRM_MAX_REPEATS",
           "CONFIRMED", "NOTHING_BEATS", "NOTHING_MEASURED", "BUDGET_RAN_OUT", "UNCONFIRMED", "Against",
           "Confirmation", "Progress", "TuneResult", "confirm", "outcome_of", "no_more_than", "settled",
           "faster_within", "slower_within", "nothing_beats_text"]

CONFIRM_REPEATS = 3
"""Fresh processes of the winner, and as many of the default compile, interleaved."""
CONFIRM_MAX_REPEATS = 12
"""While the confirmation is inconclusive and the budget fits more, it adds a process a side (a matched pair
on a pool: one a lane) up to this many a side. More than ``--repeat auto``'s cap
(:data:`~tui.engine.store.repeats.AUTO_MAX_PROCESSES`): a tune's question sits on the threshold's edge, where
five a side rarely settle it, and the budget bounds the cost. The figure's grounds (the processes a ±2%
interval needs, and the rates of each answer by cap: ``benchmarks/confirm_looks.py``) are in
docs/BENCHMARKS.md, "Tune on the CPU"."""

CONFIRMED, NOTHING_BEATS, UNCONFIRMED = "confirmed", "nothing beats default", "unconfirmed"
NOTHING_MEASURED = "nothing measured"
"""No candidate has a time, the default compile included: every run failed, so nothing can be said of any."""
BUDGET_RAN_OUT = "the budget ran out"
"""Why candidates still in the race did not run again when the budget ended the race."""


def _plainly_inconclusive(against: Against) -> bool:
    """``inconclusive`` by its interval alone: one made so for a reason (a drift: compare's rule) claims nothing."""
    return against.verdict == INCONCLUSIVE and not against.reasons


def no_more_than(against: Against, threshold: float) -> bool:
    """Whether an ``inconclusive`` reading still rules out a gain of more than ``threshold``: its interval's high
    end is within ``1 + threshold``. The verdict's word is two-sided (``no change`` needs both ends inside the
    band); "nothing beats the default by more than t" is a claim about the high end alone. A reading made
    inconclusive for a reason (a process's speedup that drifted: compare's rule) claims nothing."""
    return _plainly_inconclusive(against) and against.high is not None and against.high <= 1 + threshold


def settled(against: Against, threshold: float) -> bool:
    """Whether a confirmation reading ``against`` the default compile is settled, so more processes are not added:
    it is not inconclusive; or inconclusive for a reason (a drift: the process stays in it, and keeps it so
    whatever is added); or its interval already rules out a gain past ``threshold`` (:func:`no_more_than`)."""
    return not _plainly_inconclusive(against) or no_more_than(against, threshold)


def faster_within(against: Against, threshold: float) -> bool:
    """Whether an ``inconclusive`` reading is faster all the same, though not shown to be more than ``threshold``
    faster: its interval lies above 1 (low end above 1) and reaches past ``1 + threshold``, so it is neither
    ``faster`` (the low end past ``1 + threshold``) nor within the band. A reading inconclusive for a reason (a
    drift) claims nothing."""
    return (_plainly_inconclusive(against) and against.low is not None and against.high is not None
            and against.low > 1 and against.high > 1 + threshold)


def slower_within(against: Against, threshold: float) -> bool:
    """:func:`faster_within`'s mirror: an ``inconclusive`` reading whose interval lies below 1 (high end below 1) and
    reaches past ``1 - threshold``, so slower all the same, though not shown to be more than ``threshold`` slower."""
    return (_plainly_inconclusive(against) and against.low is not None and against.high is not None
            and against.high < 1 and against.low < 1 - threshold)


def nothing_beats_text(threshold: float) -> str:
    """The answer when no configuration is shown faster than the default compile by more than the threshold."""
    return f"no configuration beats the default compile by more than {threshold * 100:g}%"


@dataclass(frozen=True)
class Against:
    """How many times faster than a reference (higher: faster), its 95% interval and the verdict's word."""

    gain: float | None = None
    low: float | None = None
    high: float | None = None
    verdict: str | None = None
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Confirmation:
    """The winner's fresh processes against the default compile's and against eager."""

    vs_default: Against = Against()
    vs_eager: Against = Against()
    default_vs_eager: Against = Against()
    winner_runs: tuple[str, ...] = ()
    default_runs: tuple[str, ...] = ()
    processes: tuple[int, int] = (0, 0)
    """Done processes: the winner's, the default compile's."""
    compile_s: tuple[float | None, float | None] = (None, None)
    """Mean compile time: the winner's, the default compile's."""
    peak_mb: tuple[float | None, float | None] = (None, None)
    """Mean compiled peak memory: the winner's, the default compile's."""
    amortized_gain: float | None = None
    """With ``--calls``: default's (per-call time + compile / calls) over the winner's; no interval."""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Progress:
    """Where the search stands after a run: the incumbent, the candidates still in, the time left."""

    incumbent: Standing | None
    left: int
    time_left_s: float
    runs: int
    """The runs that ended on their own (:attr:`TuneResult.runs`)."""


@dataclass(frozen=True)
class TuneResult:
    """Everything the search found (see :func:`outcome_of` for ``outcome``)."""

    tune_id: str
    outcome: str
    winner: Standing | None
    winner_options: RunOptions | None
    confirmation: Confirmation | None
    standings: tuple[Standing, ...]
    confirmed: Standing | None = None
    """The candidate the confirmation ran against the default compile: the race's winner, or where the
    default compile led, its best challenger (None without a confirmation)."""
    notes: tuple[str, ...] = ()
    stopped: str | None = None
    incomplete: str | None = None
    """Why some candidates were never screened (the budget), None when every one was."""
    cut_short: str | None = None
    """Why candidates still in the race did not run in its last stage: ``BUDGET_RAN_OUT`` when the budget ended
    the race, else the stop that ended it (Ctrl-C, the app's Stop); None when the race ran to its end."""
    elapsed_s: float = 0.0
    runs: int = 0
    """The runs that ended on their own (done or failed); a run a stop cancelled is in :attr:`stopped_runs`."""
    stopped_runs: int = 0
    """The runs a stop cancelled as they ran (the queued ones it dropped never ran, and are in neither count)."""
    threshold: float = 0.02
    objective: Objective = field(default_factory=Objective)

    @property
    def cut_before_measuring(self) -> bool:
        """Nothing was measured because the budget's end cut every run it started (not because they failed)."""
        return self.outcome == NOTHING_MEASURED and self.cut_short == BUDGET_RAN_OUT


def _mean(values: Sequence[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return statistics.fmean(found) if found else None


def _vs_eager(done: Sequence[RunRecord], kind: str) -> Against:
    if not done:
        return Against()
    group = summarize_group(done)
    if kind != DEVICE and group.host_speedup is not None:
        return Against(group.host_speedup, group.host_speedup_xproc_ci_low, group.host_speedup_xproc_ci_high,
                       group.host_verdict, group.host_noise_reasons)
    return Against(group.speedup, group.speedup_xproc_ci_low, group.speedup_xproc_ci_high, group.verdict,
                   group.noise_reasons)


def _amortized(winner: Sequence[RunRecord], default: Sequence[RunRecord], objective: Objective) -> float | None:
    if not objective.calls:
        return None
    costs = []
    for runs in (default, winner):
        per_call, compile_s = typical_ms(runs, "compiled", objective.kind), _mean([r.compile_s for r in runs])
        if per_call is None or compile_s is None:
            return None
        costs.append(per_call + compile_s * 1e3 / objective.calls)
    return costs[0] / costs[1] if costs[1] > 0 else None


def confirm(winner_runs: Sequence[RunRecord], default_runs: Sequence[RunRecord], objective: Objective,
            threshold: float, name: str = "challenger") -> Confirmation:
    """The confirmation's statistics (see the module docstring); ``name``: the confirmed candidate's, as its
    processes' reasons name it (``max-autotune process 2 of 3: ...``)."""
    done_w = [r for r in winner_runs if r.status == RunStatus.DONE]
    done_d = [r for r in default_runs if r.status == RunStatus.DONE]
    metric = "speedup" if objective.kind == DEVICE else "host"
    vs_default, notes = Against(), list[str]()
    if done_w and done_d:
        options = done_w[0].options
        settings = CompareSettings(metric=metric, threshold=threshold, noise_limits=dict(options.noise_limits))
        pair = Pair(key=config_key(done_w[0]), base=tuple(done_d), new=tuple(done_w),
                    names=("default compile", name))
        judged = judge_pair(pair, settings)
        change = judged.change(metric)
        notes.extend(judged.notes)
        if change is not None:
            vs_default = _gain(change, metric)
    else:
        notes.append("a side of the confirmation has no done run: "
                     + "; ".join(f"{r.status}: {r.error_message}" for r in (*winner_runs, *default_runs)
                                 if r.status != RunStatus.DONE))
    return Confirmation(
        vs_default=vs_default, vs_eager=_vs_eager(done_w, objective.kind),
        default_vs_eager=_vs_eager(done_d, objective.kind),
        winner_runs=tuple(r.run_id for r in winner_runs), default_runs=tuple(r.run_id for r in default_runs),
        processes=(len(done_w), len(done_d)),
        compile_s=(_mean([r.compile_s for r in done_w]), _mean([r.compile_s for r in done_d])),
        peak_mb=(_mean([r.memory.compiled_peak_mb for r in done_w]),
                 _mean([r.memory.compiled_peak_mb for r in done_d])),
        amortized_gain=_amortized(done_w, done_d, objective), notes=tuple(notes))


def _gain(change: Any, metric: str) -> Against:
    """A compare :class:`~tui.engine.compare.judge.Change` as how many times faster NEW is (a time's ratio inverted)."""
    if metric == "speedup":
        return Against(change.ratio, change.ratio_low, change.ratio_high, change.verdict, change.reasons)

    def inverse(x: float | None) -> float | None:
        return None if x is None or x <= 0 else 1 / x

    return Against(inverse(change.ratio), inverse(change.ratio_high), inverse(change.ratio_low), change.verdict,
                   change.reasons)


def outcome_of(best: Standing | None, confirmation: Confirmation | None, stopped: str | None,
               incomplete: str | None = None, threshold: float = 0.02, challenger_left: bool = False,
               measured: bool = True) -> str:
    """:data:`CONFIRMED` (the confirmation says faster: with ``--calls`` the compile time's charge keeps it
    ahead by more than ``threshold``); :data:`NOTHING_BEATS` (the confirmation of the best challenger says no
    change or slower, or is inconclusive with its interval's high end within ``1 + threshold``
    (:func:`no_more_than`), or no challenger is left in the race: every one failed or was clearly worse; and
    every candidate was screened: ``incomplete`` None); else :data:`UNCONFIRMED` (stopped, a candidate never
    screened, a confirmation noisy or inconclusive, or a challenger left that no confirmation judged:
    ``challenger_left``, the default's lead in the race alone claims nothing); :data:`NOTHING_MEASURED` when no
    candidate has a time (``measured`` False: every run failed) and nothing stopped the search."""
    if not measured and stopped is None and confirmation is None:
        return NOTHING_MEASURED
    if confirmation is not None:
        verdict = confirmation.vs_default.verdict
        amortized = confirmation.amortized_gain
        if verdict == FASTER and (amortized is None or amortized > 1 + threshold):
            return CONFIRMED
        ruled_out = verdict in (NO_CHANGE, SLOWER, FASTER) or no_more_than(confirmation.vs_default, threshold)
        if ruled_out and incomplete is None:
            return NOTHING_BEATS
        return UNCONFIRMED
    if stopped is None and incomplete is None and not challenger_left and (best is None or best.candidate.is_default):
        return NOTHING_BEATS
    return UNCONFIRMED
