"""The race, as pure logic: who leads, who is clearly worse, who goes on, what each stage runs, who wins.

Racing with successive halving (docs/METHOD.md, "Tuning"):

1. **Screening** (stage 0): every candidate once, one short run in a fresh process.
2. After each stage a candidate is **out** when it failed (its reason kept), and **dropped** when it is
   clearly worse than the incumbent (the candidate with the best point estimate): its interval's high
   end lies below the incumbent's low end by more than the verdict's threshold t
   (:func:`clearly_worse`), so a candidate is never dropped for a gap the answer would call no change.
3. The rest are ranked and the lower half is **cut** (:func:`halve`; at least :data:`KEEP_AT_LEAST`
   stay); the survivors run again in the next stage with twice the iterations, one more fresh
   process each (a candidate's score pools all its processes: the interval becomes one across
   processes from the second stage on).
4. The race ends when one candidate besides the default compile is left, after :data:`MAX_STAGES`
   stages, or when the budget says so. The **winner** is the leader (:func:`winner`: within the
   threshold of the best point estimate, the smallest peak memory, then the fewest settings, then the shortest
   compile).
5. The winner is then **confirmed** in fresh processes against the default compile (the driver's
   job): the race picked the luckiest of many noisy candidates (the winner's curse), so its own
   numbers never decide. Where the default compile leads, its best :func:`challenger` is confirmed
   against it instead: "nothing beats the default" is a claim too (or, where that one's confirmation
   does not fit the time left, one of its :func:`contenders` that does).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from tui.engine.tune.objective import Score
from tui.engine.tune.space import Candidate

__all__ = ["Standing", "StagePlan", "KEEP_AT_LEAST", "MAX_STAGES", "clearly_worse", "leader", "judge_stage",
           "halve", "stage_plan", "stage_name", "CONFIRMATION", "winner", "ranked", "ahead_of_default", "challenger",
           "contenders", "confirm_choices", "less_memory", "compiles_quicker", "halved", "HALVED", "tie_breaks",
           "set_aside_by", "MEMORY", "SETTINGS", "COMPILE"]

KEEP_AT_LEAST = 2
"""Halving never leaves fewer candidates than this (when as many are in)."""
MAX_STAGES = 3
"""Stages of the race (screening included) before the winner is confirmed."""


@dataclass(frozen=True)
class Standing:
    """A candidate in the race: its latest score, and why it left the race (None: still in)."""

    candidate: Candidate
    score: Score = Score()
    gone: str | None = None
    """``out: <reason>`` (it failed), ``dropped: ...`` (clearly worse) or ``cut: ...`` (halving, budget)."""
    stage: int = -1
    """The last stage it ran in (-1: never ran)."""
    screened: Score | None = None
    """Its score after the screening (stage 0)."""
    stopped: str | None = None
    """The part of the search (``screening``, ``stage 2``, ``confirmation``) whose run of it a stop cancelled as it
    ran (None: none): such a candidate was not "never run", its run was stopped."""

    @property
    def alive(self) -> bool:
        return self.gone is None

    @property
    def name(self) -> str:
        return self.candidate.name

    def rescored(self, new: Score, index: int) -> Standing:
        """This standing with ``new``, its score after a run of stage ``index`` (the screening's is ``screened``)."""
        return dataclasses.replace(self, score=new, stage=index, screened=new if index == 0 else self.screened)


@dataclass(frozen=True)
class StagePlan:
    """What a stage runs: each survivor once more, with ``iters`` measured iterations per side."""

    index: int
    iters: int


def clearly_worse(score: Score, incumbent: Score, threshold: float = 0.0) -> bool:
    """``score``'s interval lies wholly below the incumbent's, apart by more than ``threshold``: its high end
    below the incumbent's low end / (1 + threshold)."""
    if score.high is None or incumbent.low is None:
        return False
    return score.high * (1 + threshold) < incumbent.low


def leader(standings: Iterable[Standing]) -> Standing | None:
    """The live candidate with the best point estimate (None when none has one)."""
    scored = [s for s in standings if s.alive and s.score.value is not None]
    return max(scored, key=lambda s: s.score.value or 0.0, default=None)


def judge_stage(standings: Sequence[Standing], threshold: float = 0.02) -> list[Standing]:
    """Put out the failed and drop the clearly worse (against the leader, apart by more than ``threshold``),
    each with its reason."""
    judged = [dataclasses.replace(s, gone=f"out: {s.score.out}") if s.alive and s.score.out else s
              for s in standings]
    best = leader(judged)
    if best is None:
        return judged
    result = []
    for standing in judged:
        if standing.alive and standing is not best and clearly_worse(standing.score, best.score, threshold):
            why = f"dropped: below {best.name} (≤ {standing.score.high:.3f}× vs ≥ {best.score.low:.3f}×)"
            standing = dataclasses.replace(standing, gone=why)
        result.append(standing)
    return result


def ranked(standings: Iterable[Standing]) -> list[Standing]:
    """Live candidates first, best point estimate first; then the gone ones, the furthest in the race first and
    within a stage the best first (a failed or never-run candidate, without a figure, after those with one)."""
    items = list(standings)
    alive = sorted((s for s in items if s.alive), key=lambda s: -(s.score.value or 0.0))
    gone = sorted((s for s in items if not s.alive), key=lambda s: (-s.stage, -(s.score.value or 0.0)))
    return alive + gone


HALVED = "cut: ranked"
"""How the reason of a candidate :func:`halve` cut begins."""


def halved(standing: Standing) -> bool:
    """Whether :func:`halve` cut ``standing`` (not dropped as clearly worse, not failed)."""
    return standing.gone is not None and standing.gone.startswith(HALVED)


def halve(standings: Sequence[Standing], stage: int) -> list[Standing]:
    """Cut the lower half of the live candidates by point estimate (at least :data:`KEEP_AT_LEAST` stay)."""
    alive = [s for s in ranked(standings) if s.alive]
    keep = max(min(KEEP_AT_LEAST, len(alive)), math.ceil(len(alive) / 2))
    cut = {id(s): rank for rank, s in enumerate(alive, 1) if rank > keep}
    after = "the screening" if stage == 0 else stage_name(stage)  # the names the progress lines use
    return [dataclasses.replace(s, gone=f"{HALVED} {cut[id(s)]} of {len(alive)} after {after}")
            if id(s) in cut else s for s in standings]


def stage_name(index: int) -> str:
    """Stage ``index`` in words: ``screening`` (0), then ``stage 2``, ``stage 3``, ... (a run's ``tune_stage``)."""
    return "screening" if index == 0 else f"stage {index + 1}"


CONFIRMATION = "confirmation"
"""The ``tune_stage`` of the confirmation's runs (the winner's and the default compile's)."""


def stage_plan(index: int, base_iters: int) -> StagePlan:
    """Stage ``index``: twice the iterations of the one before (the screening runs ``base_iters``)."""
    return StagePlan(index, base_iters * 2 ** index)


def ahead_of_default(standings: Sequence[Standing], threshold: float) -> list[Standing]:
    """Live candidates (not the default) whose point estimate beats the default compile's by more than ``threshold``."""
    default = next((s for s in standings if s.candidate.is_default), None)
    if default is None or default.score.value is None:
        return []
    bar = default.score.value * (1 + threshold)
    return [s for s in standings if s.alive and not s.candidate.is_default
            and s.score.value is not None and s.score.value > bar]


def challenger(standings: Sequence[Standing]) -> Standing | None:
    """The best live candidate other than the default compile (None when none is left in the race)."""
    return next((s for s in ranked(standings) if s.alive and not s.candidate.is_default
                 and s.score.value is not None), None)


def contenders(standings: Sequence[Standing], threshold: float) -> list[Standing]:
    """The challengers a "nothing beats the default" confirmation may judge: the best (:func:`challenger`) first,
    then the others not told apart from it (within ``threshold`` of its point estimate), live or cut by
    :func:`halve` (a cut means fewer runs to spend, never worse), in :func:`ranked`'s order; empty when no
    challenger is left. The driver confirms the first whose confirmation fits the time left and keeps the room of
    the cheapest: the race cannot rank them, and confirming an autotuning leader that does not fit leaves the whole
    answer unconfirmed where a challenger as fast, by the race's reading, with a short compile fits."""
    best = challenger(standings)
    if best is None or best.score.value is None:
        return []
    bar = best.score.value / (1 + threshold)
    return [s for s in ranked(standings) if (s.alive or halved(s)) and not s.candidate.is_default
            and s.score.value is not None and s.score.value >= bar]


def confirm_choices(standings: Sequence[Standing], threshold: float) -> list[Standing]:
    """What the confirmation may judge against the default compile, the one preferred first: the race's winner;
    where the default compile wins, its :func:`contenders` ("nothing beats the default" is confirmed too)."""
    best = winner(standings, threshold)
    if best is None:
        return []
    return contenders(standings, threshold) if best.candidate.is_default else [best]


def winner(standings: Sequence[Standing], threshold: float) -> Standing | None:
    """The race's winner: among live candidates within ``threshold`` of the best point estimate, those no other of
    them beats by its tie-breaks (:func:`tie_breaks`: less compiled peak memory, then fewer settings, then a shorter
    compile), and of those the best point estimate."""
    close = _close(standings, threshold)
    if not close:
        return None
    *_, (_, kept) = tie_breaks(close)
    return max(kept, key=lambda s: s.score.value or 0.0)


def set_aside_by(standings: Sequence[Standing], threshold: float, name: str) -> str | None:
    """The tie-break (:data:`MEMORY`, :data:`SETTINGS`, :data:`COMPILE`) that set candidate ``name`` aside from the
    winner's choice; None where it was not among the close candidates or no tie-break set it aside."""
    close = _close(standings, threshold)
    if name not in {s.name for s in close}:
        return None
    return next((step for step, kept in tie_breaks(close) if name not in {s.name for s in kept}), None)


MEMORY, SETTINGS, COMPILE = "memory", "settings", "compile"
"""The winner's tie-breaks, in their order (:func:`tie_breaks`)."""


def tie_breaks(close: Sequence[Standing]) -> Iterator[tuple[str, list[Standing]]]:
    """The winner's tie-breaks over the ``close`` candidates, each narrowing the one before: those no other has less
    memory than (:func:`less_memory`), of those the ones with the fewest settings, of those the ones no other
    compiles quicker than (:func:`compiles_quicker`). Both comparisons have a slack, so "no other beats it" can keep
    a candidate that a third one beats and the second does not (never none)."""
    lean = [s for s in close if not any(less_memory(other, s) for other in close)]
    yield MEMORY, lean
    fewest = min(len(s.candidate.settings) for s in lean)
    simple = [s for s in lean if len(s.candidate.settings) == fewest]
    yield SETTINGS, simple
    yield COMPILE, [s for s in simple if not any(compiles_quicker(other, s) for other in simple)]


def _close(standings: Sequence[Standing], threshold: float) -> list[Standing]:
    """The live candidates within ``threshold`` of the best point estimate (none when none has one)."""
    best = leader(standings)
    if best is None or best.score.value is None:
        return []
    bar = best.score.value / (1 + threshold)
    return [s for s in standings if s.alive and s.score.value is not None and s.score.value >= bar]


MEMORY_SLACK = (1.0, 0.01)
"""Peaks this close (1 MiB and 1% above the smaller) count as equal memory: the tie-break weighs real differences,
not a kilobyte of allocator noise."""


def less_memory(one: Standing, other: Standing) -> bool:
    """Whether ``one``'s compiled peak memory is below ``other``'s by more than :data:`MEMORY_SLACK` (both measured)."""
    return _below_by_slack(one.score.peak_mb, other.score.peak_mb, MEMORY_SLACK)


COMPILE_SLACK = (1.0, 0.25)
"""Compile times this close (1 s and 25% above the shorter) count as equal: one process's compile varies by a few
tenths of a second, and a tie-break by it would pick by that noise."""


def compiles_quicker(one: Standing, other: Standing) -> bool:
    """Whether ``one``'s mean compile time is below ``other``'s by more than :data:`COMPILE_SLACK` (both measured):
    among configurations the race cannot tell apart, a 50 s compile buys nothing a 1 s one does not."""
    return _below_by_slack(one.score.compile_s, other.score.compile_s, COMPILE_SLACK)


def _below_by_slack(mine: float | None, theirs: float | None, slack: tuple[float, float]) -> bool:
    """Whether ``mine`` is below ``theirs`` by more than ``slack`` (an amount, and a share of ``mine``), both known."""
    if mine is None or theirs is None:
        return False
    amount, share = slack
    return theirs > mine * (1 + share) + amount
