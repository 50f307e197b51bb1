"""A whole comparison of BASE and NEW: its pairs, its unmatched rows, the gate's verdict and exit code."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tui.engine.compare.judge import (
    COMPARED, NOT_MEASURED, CompareSettings, PairResult, UnmatchedRow, judge_pair, unmatched_row,
)
from tui.engine.compare.matching import pair_up
from tui.engine.store.results import RunRecord
from tui.engine.measure.verdict import VERDICTS
from tui.typed import JsonRecord

__all__ = ["Comparison", "compare", "failure_line", "EXIT_PASS", "EXIT_FAIL", "NOTHING_COMPARED", "NOTHING_MEASURED"]

EXIT_PASS, EXIT_FAIL = 0, 1


def failure_line(name: str, pair: PairResult, settings: CompareSettings) -> str | None:
    """Why one pair fails the gate, ``name`` first (``3 pointwise n=512``); None when it passes."""
    if not pair.fails:
        return None
    gated = pair.change(pair.metric)
    if pair.broke and pair.status != COMPARED:
        return f"{name}: {pair.status} where the baseline measured (a configuration that stopped working)"
    if pair.broke:
        total = pair.new_failed + pair.new_processes
        return f"{name}: {pair.new_failed} of NEW's {total} processes failed, where none of the baseline's did"
    if pair.accuracy_broke:
        return f"{name}: the compiled output failed the accuracy check, where the baseline's passed"
    if pair.status != COMPARED:
        return f"{name}: {pair.status} (--strict)"
    if pair.verdict == "slower" and gated is not None and gated.slowdown is not None:  # the only slower that fails
        return f"{name}: {gated.metric} slower by {gated.slowdown:.1%} (above --fail-above {settings.fail_above:g}%)"
    return f"{name}: {pair.verdict} (--strict)"


NOTHING_COMPARED = "nothing was compared: no configuration is on both sides (--ignore leaves fields out of the match)"
"""The gate's failure when BASE and NEW share no configuration (the comparisons across kinds: no cell compared)."""
NOTHING_MEASURED = ("nothing was compared: no configuration on both sides was measured on both (each row's status "
                    "says why; a side whose samples were pruned has nothing to compare)")
"""The gate's failure when no shared configuration was compared and a side was not measured (not failed): a
baseline whose samples were all pruned would otherwise pass a CI job that compared nothing. A side that failed
stays the row's own matter (a failed baseline fails only under ``--strict``)."""


@dataclass(frozen=True)
class Comparison(JsonRecord):
    """BASE against NEW: one :class:`PairResult` per matched configuration and the rows on one side only."""

    base: str = ""
    """What BASE is (a file or a history selection, as given)."""
    new: str = ""
    settings: CompareSettings = field(default_factory=CompareSettings)
    pairs: tuple[PairResult, ...] = ()
    unmatched: tuple[UnmatchedRow, ...] = ()
    problems: tuple[str, ...] = ()
    """What loading the runs reported (a field that took its default, ...)."""

    def failures(self) -> tuple[str, ...]:
        """Why the gate fails, one line per pair or row (empty: it passes). A comparison with no pair fails: a gate
        that compared nothing (BASE and NEW of other configurations, a wrong file) must not pass a CI job."""
        if not self.pairs:
            return (NOTHING_COMPARED,)
        lines = [line for number, pair in enumerate(self.pairs, 1)
                 if (line := failure_line(f"{number} {pair.label}", pair, self.settings)) is not None]
        if all(pair.status != COMPARED for pair in self.pairs) and any(
                pair.status.endswith(NOT_MEASURED) for pair in self.pairs):
            lines.append(NOTHING_MEASURED)
        for number, row in enumerate(self.unmatched, len(self.pairs) + 1):
            if row.fails:
                lines.append(f"{number} {row.label}: only in {row.side.upper()} (--strict)")
        return tuple(lines)

    @property
    def exit_code(self) -> int:
        """1 when the gate fails (:meth:`failures`), else 0."""
        return EXIT_FAIL if self.failures() else EXIT_PASS

    def counts(self) -> dict[str, int]:
        """How many pairs got each verdict (verdict order), then ``not compared`` and ``unmatched``."""
        counts = {word: sum(p.verdict == word for p in self.pairs) for word in VERDICTS}
        counts["not compared"] = sum(p.status != COMPARED for p in self.pairs)
        counts["unmatched"] = len(self.unmatched)
        return {word: count for word, count in counts.items() if count}


def compare(base: Iterable[RunRecord], new: Iterable[RunRecord], settings: CompareSettings | None = None, *,
            base_name: str = "BASE", new_name: str = "NEW", problems: Iterable[str] = ()) -> Comparison:
    """Match BASE's runs with NEW's (:func:`~tui.engine.compare.matching.pair_up`) and judge every pair."""
    settings = settings or CompareSettings()
    pairs, unmatched = pair_up(base, new, settings.ignore)
    return Comparison(base=base_name, new=new_name, settings=settings,
                      pairs=tuple(judge_pair(pair, settings) for pair in pairs),
                      unmatched=tuple(unmatched_row(row, settings) for row in unmatched),
                      problems=tuple(problems))  # fmt: skip
