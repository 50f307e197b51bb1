"""The words of a tune's notes: what the driver says about its budget, its progress and why it stopped.

:class:`~tui.engine.tune.driver.TuneDriver` decides (whether a run fits, when the race ends, whether the
confirmation grows); these functions word what it decided, from the figures it weighed, so that a note always
names the same figures as the check that made it. Seconds are whole unless two figures a note compares round to
the same one (:func:`~tui.engine.tune.durations.seconds_apart`), and the time left never reads below 0 s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tui.engine.store.results import RunRecord
from tui.engine.tune.answer import BUDGET_RAN_OUT
from tui.engine.tune.durations import seconds_apart
from tui.engine.tune.runs import noisy_runs, ran_count

__all__ = ["Room", "Pace", "NOT_SCREENED", "NOT_RUN", "RAN_OUT_CONFIRMING", "confirmation_against_left",
           "unconfirmable", "in_place_of", "budget_minutes", "budget_needed", "pace", "out_of_time", "ran_out_in",
           "unscreened", "refused", "combined", "several_kinds", "confirmed_on_several_kinds", "grows", "grew", "noisy"]

NOT_SCREENED = f"cut: not screened ({BUDGET_RAN_OUT})"
"""Why a candidate the budget left unscreened is out of the race."""
NOT_RUN = "not run: it would fail as the default compile did"
"""Why a candidate is out once the default compile's run failed as every candidate's would."""
RAN_OUT_CONFIRMING = f"{BUDGET_RAN_OUT} during the confirmation"
"""Why the search stopped when the budget ended before a wave of the confirmation."""


@dataclass(frozen=True)
class Room:
    """The confirmation's room as a budget check weighed it: its estimate and what the race keeps for it (the
    estimate with the race's margin)."""

    cost: float
    kept: float


@dataclass(frozen=True)
class Pace:
    """The figures the budget notes weigh at a stage's iterations: the seconds spent so far, a run's estimate, the
    lanes, and the seconds the budget keeps after the race (the confirmation's room with its margin, the closing)."""

    spent: float
    run: float
    lanes: int
    after: float

    def needed_s(self, unrun: int) -> float:
        """The budget that screens ``unrun`` candidates more (a wave of runs per ``lanes`` of them) and keeps the room
        after the race, at this pace (later stages are not counted: it is the least such a search needs)."""
        return self.spent + math.ceil(unrun / self.lanes) * self.run + self.after


def _left(left: float) -> float:
    return max(0.0, left)


def confirmation_against_left(cost: float, left: float, verb: str, going: float = 0.0,
                              what: str = "the confirmation") -> str:
    """"the confirmation (about N s) ``verb`` in the M s left of the budget"; with runs still ``going`` (the seconds
    they still need: the confirmation starts after them), "the confirmation (about N s), after the runs still going
    (about G s more), ``verb`` ..."; ``what`` names the confirmation."""
    left = _left(left)
    places = seconds_apart((going, cost), left)
    after = f", after the runs still going (about {going:.{places}f} s more)," if round(going, places) > 0 else ""
    return f"{what} (about {cost:.{places}f} s){after} {verb} in the {left:.{places}f} s left of the budget"


def unconfirmable(cost: float, left: float, going: float = 0.0) -> str:
    """The note that the race goes on without the confirmation's room, which no longer fits (after the runs still
    ``going``: :func:`confirmation_against_left`)."""
    return (f"{confirmation_against_left(cost, left, 'no longer fits', going)}: the race goes on with the time left, "
            "and its answer will be unconfirmed unless a shorter estimate (another winner) makes it fit again")


def in_place_of(chosen: str, first: str, cost: float, left: float, threshold: float) -> str:
    """The note that the confirmation judges ``chosen`` rather than ``first``, the best challenger of a leading
    default compile, whose confirmation (about ``cost`` s) does not fit in the time ``left``: ``chosen`` is one the
    race did not tell apart from it (:func:`~tui.engine.tune.search.contenders`)."""
    against = confirmation_against_left(cost, left, "does not fit", what=f"the confirmation of {first}")
    return f"{against}: {chosen}, within {threshold * 100:g}% of it in the race, is confirmed in its place"


def budget_minutes(seconds: float) -> int:
    """``seconds`` as the whole minutes ``--budget`` would be given (rounded up)."""
    return math.ceil(seconds / 60)


def budget_needed(needed: float) -> str:
    """The note on the budget that would have screened every candidate and kept the confirmation's room."""
    return (f"to screen every candidate and keep room for the confirmation, this search needs at least about "
            f"{needed:.0f} s (--budget {budget_minutes(needed)}m) at this pace")


def pace(at: Pace, unrun: int, budget_s: float, candidates: int) -> str:
    """The note, as the second run ends, that ``budget_s`` cannot screen the ``candidates`` (``unrun`` of them left)
    at this pace and keep the confirmation's room: the budget that would (:meth:`Pace.needed_s`). A forecast, said
    as one ("may"): the first runs are often the slowest (a candidate's first compile fills its cache), and searches
    forecast a few percent over their budget have screened every candidate (docs/BENCHMARKS.md §13)."""
    needed = at.needed_s(unrun)
    places = seconds_apart((needed,), budget_s)
    return (f"at the runs' pace (about {at.run:.0f} s a run) the {budget_s:g} s budget may not screen all "
            f"{candidates} candidates and keep room for the confirmation: that needs about "
            f"{needed:.{places}f} s (--budget {budget_minutes(needed)}m), so the race may be cut short")


def out_of_time(stage: str, left: float, run: float | None, room: Room | None = None) -> str:
    """Why the race ends in ``stage``: no estimate yet (``run`` None) and no time left, or the next run (and the
    confirmation's ``room`` kept for after it, where the race keeps it) against the time left."""
    left = _left(left)
    if run is None:
        return f"{stage}: no time left for a run ({left:.0f} s left of the budget); the race ends here"
    places = seconds_apart((run,), left)
    what = f"the next run (about {run:.{places}f} s) does not fit"
    if room is not None:
        places = seconds_apart((run, room.kept), left)
        what = (f"the next run (about {run:.{places}f} s) and the confirmation after it (about "
                f"{room.cost:.{places}f} s, kept as {room.kept:.{places}f} s with its margin) do not fit")
    return f"{stage}: {what} in the {left:.{places}f} s left of the budget; the race ends here"


def ran_out_in(stage: str) -> str:
    """Why a candidate whose ``stage`` run the budget's end cut is out: it timed out at the time left."""
    return f"cut: its {stage} run reached the budget's end ({BUDGET_RAN_OUT})"


def unscreened(count: int) -> str:
    """Why the search is incomplete: ``count`` candidates were never screened."""
    return f"{BUDGET_RAN_OUT} before {count} candidate(s) were screened"


def refused(reason: str) -> str:
    """The note that the default compile's run failed for ``reason`` as every candidate's would."""
    return (f"the default compile's run failed ({reason}); every candidate shares its run options and workload, so "
            "no other candidate was run")


def combined(name: str, parts: Sequence[str]) -> str:
    """The note that the candidates ``parts``, which each beat the default compile, join the race combined as ``name``.

    It names the candidates, not their settings: a mode's settings come with it, and need not have beaten the default
    compile alone.
    """
    joined = " + ".join(parts)
    return f"added {name}: {joined}, the {len(parts)} candidates that each beat the default compile, combined"


def several_kinds(kinds: Sequence[str]) -> str:
    """The note that the runs ran on GPUs of several ``kinds``."""
    return (f"the runs ran on GPUs of several kinds ({', '.join(kinds)}), so candidates were compared across "
            "hardware: tune on GPUs of one kind")


def noisy(records: Sequence[RunRecord]) -> tuple[str, ...]:
    """The note that some of the runs that ended read noisy, with the first one's first reason; none when none did.
    The race ranks their figures as any other's, so the answer's order may be the machine's as much as the
    candidates'."""
    found, ran = noisy_runs(records), ran_count(records)
    if not found:
        return ()
    reasons = found[0].summary().noise_reasons
    why = f" (the first: {reasons[0]})" if reasons else ""
    return (f"{len(found)} of the {ran} runs read noisy{why}: their figures carry the machine's noise as well as the "
            "candidates' differences, so the race's order may be the noise's; tune on a quiet machine",)


def confirmed_on_several_kinds(kinds: Sequence[str]) -> str:
    """Why the search stopped when the confirmation's runs ran on GPUs of several ``kinds``."""
    return f"the confirmation's runs ran on GPUs of several kinds ({', '.join(kinds)})"


def grows(repeats: int, more: int) -> str:
    """The note that the confirmation, inconclusive after ``repeats`` processes a side, grows to ``more``."""
    return f"the confirmation is inconclusive after {repeats} + {repeats} processes: {more - repeats} more a side"


def growth_failed(repeats: int, why: str) -> str:
    """The answer's note for a confirmation whose added processes all failed: it is judged on ``repeats`` a side."""
    return f"the confirmation stopped growing at {repeats} + {repeats} processes: every process added failed ({why})"


def grew(first: int, repeats: int) -> str:
    """The answer's one note for a confirmation that grew from ``first`` processes a side to ``repeats``."""
    return (f"the confirmation was inconclusive after {first} + {first} processes and grew to {repeats} + {repeats}, "
            "one wave at a time, while its interval still allowed a gain past the threshold")
