"""Baselines in the app: which rows a baseline compares with, and the words of the ``vs base`` column.

The user marks rows as the baseline (``m``: the selected row; ``M``: every row of the selected
row's session). A row is compared with the baseline runs of the same workload, parameters and
device kind (``cpu``, ``cuda``): "the same configuration except what you changed". Among those, the
baseline runs whose configuration (every field of :data:`~tui.engine.compare.MATCH_FIELDS`) differs
from the row's in the fewest fields are its side of the pair, so a whole session marked as the
baseline compares each row with its own configuration there, and one marked run compares with
every run of its workload whatever their options. The pair is judged by ``compile-lab compare``'s
rule (:func:`~tui.engine.compare.judge.judge_pair`: the compiled median's change with a bootstrap
interval, and its verdict word). Runs that are part of the baseline are not compared with it.

Imports no textual (the judging runs off the UI thread).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable, Sequence

from rich.console import RenderableType
from rich.text import Text

from tui.app.components.result_cells import Cell
from tui.present.format import MISSING, VERDICT_STYLES
from tui.engine.compare import MATCH_FIELDS, CompareSettings, Pair, PairResult, pair_up
from tui.engine.compare.judge import COMPARED, judge_pair
from tui.engine.compare.matching import field_values
from tui.engine.store.results import RunRecord
from tui.engine.measure.verdict import FASTER, NO_CHANGE, SLOWER
from tui.engine.status import RunStatus

__all__ = ["SAME_FIELDS", "SETTINGS", "BASELINE_CELL", "PENDING_CELL", "baseline_pair", "judge_row", "vs_base_words",
           "vs_base_cell", "summary_text", "BaselineState", "judge_all", "baseline_summary", "not_a_baseline"]

SAME_FIELDS = ("workload", "params", "device")
"""The fields a row must share with a baseline run to be compared with it."""
SETTINGS = CompareSettings(ignore=tuple(name for name in MATCH_FIELDS if name not in SAME_FIELDS))
"""``compile-lab compare``'s defaults (compiled time, 2% threshold), matching on :data:`SAME_FIELDS` only."""

BASELINE_CELL = Cell("◆ baseline", "bold", sort_key=0.0, justify="right")
"""The baseline's own rows say so in words (not by colour alone)."""
PENDING_CELL = Cell("…", "dim", justify="right")
NO_MATCH_CELL = Cell(MISSING, "dim", justify="right")


def not_a_baseline(members: Sequence[RunRecord]) -> str | None:
    """Why a row (``members``: its runs) cannot be the baseline, or None when it can.

    A row whose runs all ended without one done has no times: as the baseline it would leave every
    ``vs base`` cell "–". A row still queued or running can be marked (its times come when it is done).
    One line, short enough for the notice line at 80 columns after its "Baseline: " title.
    """
    if not members or any(m.status == RunStatus.DONE for m in members):
        return None
    if not all(m.status in (RunStatus.FAILED, RunStatus.CANCELLED) for m in members):
        return None
    word = "failed" if any(m.status == RunStatus.FAILED for m in members) else "cancelled"
    return f"a {word} run has no times to compare: mark a done run"


def _distance(a: dict[str, str], b: dict[str, str]) -> int:
    return sum(a[name] != b[name] for name in MATCH_FIELDS)


def baseline_pair(base: Sequence[RunRecord], members: Sequence[RunRecord]) -> Pair | None:
    """The pair of a row (``members``: its runs) with the nearest baseline runs (module docstring); None: none."""
    mine = {r.run_id for r in members}
    base = [r for r in base if r.run_id not in mine]
    if not base or not members:
        return None
    pairs, _ = pair_up(base, members, SETTINGS.ignore)
    if not pairs:
        return None
    pair = pairs[0]
    row_fields = field_values(members[0])
    distances = {r.run_id: _distance(field_values(r), row_fields) for r in pair.base}
    nearest = min(distances.values())
    chosen = tuple(r for r in pair.base if distances[r.run_id] == nearest)
    return pair_up(chosen, members, SETTINGS.ignore)[0][0]


def judge_row(base: Sequence[RunRecord], members: Sequence[RunRecord]) -> PairResult | None:
    """The row's change against the baseline (loads stored samples: call it off the UI thread)."""
    pair = baseline_pair(base, members)
    return None if pair is None else judge_pair(pair, SETTINGS)


def _percent(slowdown: float) -> str:
    value = slowdown * 100
    return f"{value:+.0f}%" if abs(value) >= 10 else f"{value:+.1f}%"


def vs_base_words(result: PairResult | None) -> tuple[str, str]:
    """The column's text and style: ``+6.8% slower``, ``-12% faster``, ``~ no change``, ``noisy``, ..."""
    if result is None:
        return MISSING, "dim"
    if result.status != COMPARED or result.verdict is None:
        return "not compared", "dim"
    verdict = result.verdict
    style = VERDICT_STYLES.get(verdict, "")
    if verdict in (FASTER, SLOWER) and result.slowdown is not None:
        return f"{_percent(result.slowdown)} {verdict}", style
    if verdict == NO_CHANGE:
        return "~ no change", style
    return verdict, style


def vs_base_cell(result: PairResult | None) -> Cell:
    """The ``vs base`` cell of a compared row (sorted by how much slower it is)."""
    if result is None:
        return NO_MATCH_CELL
    text, style = vs_base_words(result)
    return Cell(text, style, sort_key=result.slowdown, justify="right")


def summary_text(result: PairResult | None, is_baseline: bool = False) -> str | None:
    """The details' "vs baseline" line: the change, its interval, the verdict and its notes."""
    if is_baseline:
        return "vs baseline: this row is (part of) the baseline"
    if result is None:
        return None
    words, _ = vs_base_words(result)
    line = f"vs baseline: {words}"
    change = result.change(result.metric)
    if change is not None and change.base is not None and change.new is not None:
        line += f" (compiled median {change.base:.4g} → {change.new:.4g} ms"
        if change.ratio_low is not None and change.ratio_high is not None:
            line += f", ratio 95% CI [{change.ratio_low:.3f}, {change.ratio_high:.3f}]"
        line += ")"
    line += f"; baseline runs {', '.join(result.base_runs)}"
    for note in (*result.differences, *(change.reasons if change is not None else ()), *result.notes):
        line += f"\n  {note}"
    return line


def same_key(record: RunRecord) -> tuple[str, ...]:
    """What a row must share with a baseline run to be compared with it (:data:`SAME_FIELDS`)."""
    values = field_values(record)
    return tuple(values[name] for name in SAME_FIELDS)


def judge_all(base: list[RunRecord], jobs: dict[str, list[RunRecord]]) -> dict[str, PairResult | None]:
    """Every row's result (blocking); stored samples read here are released after (memory stays flat)."""
    import logging

    stored = [r for r in base + [m for members in jobs.values() for m in members] if not r.samples_loaded]
    results: dict[str, PairResult | None] = {}
    try:
        for row, members in jobs.items():
            try:
                results[row] = judge_row(base, members)
            except Exception:  # a view never dies on data: the row says it was not compared
                logging.getLogger(__name__).exception("row %s could not be compared with the baseline", row)
                results[row] = None
    finally:
        for record in stored:
            record.release_samples()
    return results


@dataclass
class BaselineState:
    """The rows marked as the baseline and each compared row's result (the session's; not saved)."""

    rows: tuple[str, ...] = ()
    """The rows marked as the baseline (empty: none)."""
    results: dict[str, PairResult | None] = field(default_factory=dict)
    """Each compared row's result (None: it has no comparable baseline run or could not be judged)."""
    generation: int = 0
    """Counts the refreshes: a judging started before the last one is not shown."""
    busy: bool = False
    """Whether rows are being compared with the baseline now."""

    def mark(self, rows: Sequence[str]) -> None:
        """``rows`` are the baseline now (empty: none); every result is judged again."""
        self.rows = tuple(rows)
        self.results = {}

    def cells(self, all_rows: Sequence[str], members: Callable[[str], list[RunRecord]],
              ) -> tuple[dict[str, Cell] | None, list[RunRecord], dict[str, list[RunRecord]]]:
        """The ``vs base`` cells now (None: no baseline), the baseline's runs and the rows still to judge."""
        self.generation += 1
        if not self.rows:
            self.busy = False
            return None, [], {}
        base = [member for row in self.rows for member in members(row)]
        keys = {same_key(record) for record in base}
        cells: dict[str, Cell] = {row: BASELINE_CELL for row in self.rows}
        jobs: dict[str, list[RunRecord]] = {}
        for row in all_rows:
            if row in cells:
                continue
            done = [m for m in members(row) if m.status == RunStatus.DONE]
            if not done or same_key(done[0]) not in keys:
                cells[row] = NO_MATCH_CELL
            elif row in self.results:
                cells[row] = vs_base_cell(self.results[row])
            else:
                cells[row], jobs[row] = PENDING_CELL, done
        self.busy = bool(jobs)
        return cells, base, jobs

    def judged(self, generation: int, jobs: dict[str, list[RunRecord]], results: dict[str, PairResult | None]) -> bool:
        """The results of a judging started at ``generation``; False when a later refresh made them stale."""
        if generation != self.generation:
            return False
        self.results = {**self.results, **{row: results.get(row) for row in jobs}}
        self.busy = False
        return True

    def row_saved(self, row: str) -> bool:
        """A run of the row ``row`` was saved: its result is judged again; returns whether there is a baseline."""
        if not self.rows:
            return False
        self.results.pop(row, None)
        if row in self.rows:
            self.results = {}  # the baseline itself gained a process
        return True


def baseline_summary(app: object, record: RunRecord) -> list[RenderableType]:
    """The details' "vs baseline" line of ``record``'s row in ``app`` (its ``lab``'s baseline), or nothing."""
    state = getattr(getattr(app, "lab", None), "baseline", None)
    if state is None or not state.rows:
        return []
    run_id = record.run_id
    text = summary_text(state.results.get(run_id), is_baseline=run_id in state.rows)
    return [] if text is None else [Text(text, style="cyan")]
