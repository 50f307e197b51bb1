"""Baselines (issue 15 item 3): mark rows as the baseline, the ``vs base`` column, the compare view (a mixin of the App).

``m`` marks the selected row as the baseline (again: clears it), ``M`` every row of the selected
row's session, and the palette has both, "Clear baseline" and "Compare with baseline…". Which rows
compare with which baseline runs, and the words, are :mod:`tui.app.baselines`' rules. The pairs are
judged off the UI thread (a previous session's runs have their timing blocks read from disk there,
and dropped again after), each time the baseline changes or one of this session's runs is saved.
The choice lasts the session (it is not saved in the config).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from typing import TYPE_CHECKING, Sequence

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.app.baselines import BASELINE_CELL, NO_MATCH_CELL, PENDING_CELL, SAME_FIELDS, SETTINGS, judge_row, summary_text, vs_base_cell
from tui.engine.compare import Comparison, PairResult
from tui.engine.compare.matching import field_values

if TYPE_CHECKING:
    from tui.app.app import CompileLabApp
    from tui.engine.results import RunRecord

__all__ = ["BaselineActions", "BaselineCompareScreen", "baseline_summary"]


def _same(record: RunRecord) -> tuple[str, ...]:
    values = field_values(record)
    return tuple(values[name] for name in SAME_FIELDS)


def _judge_all(base: list[RunRecord], jobs: dict[str, list[RunRecord]]) -> dict[str, PairResult | None]:
    """Every row's result; stored samples read here are released after (memory stays flat)."""
    stored = [r for r in base + [m for members in jobs.values() for m in members] if not r.samples_loaded]
    results: dict[str, PairResult | None] = {}
    try:
        for row, members in jobs.items():
            try:
                results[row] = judge_row(base, members)
            except Exception:  # a view never dies on data: the row says it was not compared
                results[row] = None
    finally:
        for record in stored:
            record.release_samples()
    return results


class BaselineActions:
    """The app's baseline: its rows, each compared row's result, the column (see the module docstring)."""

    baseline_rows: tuple[str, ...] = ()
    """The rows marked as the baseline (empty: none)."""
    baseline_results: dict[str, PairResult | None] = {}
    """Each compared row's result (None: it has no comparable baseline run or could not be judged)."""
    _baseline_generation = 0
    _baseline_busy = False

    @property
    def baseline_busy(self) -> bool:
        """Whether rows are being compared with the baseline now."""
        return self._baseline_busy

    def _baseline_records(self: CompileLabApp) -> list[RunRecord]:
        return [member for row in self.baseline_rows for member in self.group_members(row)]

    def _all_rows(self: CompileLabApp) -> list[str]:
        return list(dict.fromkeys(self.row_of(record) for record in self.records.values()))

    def action_mark_baseline(self: CompileLabApp) -> None:
        """The selected row becomes the baseline (pressed on the baseline alone, it clears it)."""
        row = self.table.selected_run_id
        if row is None:
            self.notify("No row selected", title="Baseline", severity="warning")
            return
        self.set_baseline(() if self.baseline_rows == (row,) else (row,))

    def action_mark_session_baseline(self: CompileLabApp) -> None:
        """Every row of the selected row's session (this one's, or a previous one's) becomes the baseline."""
        row = self.table.selected_run_id
        record = self.row_record(row) if row is not None else None
        if record is None:
            self.notify("No row selected", title="Baseline", severity="warning")
            return
        history = self.table.is_history(row)
        rows = [r for r in self._all_rows() if self.table.has_run(r) or self.table.is_history(r)]
        self.set_baseline(tuple(r for r in rows if self.table.is_history(r) == history
                                and getattr(self.row_record(r), "session_id", None) == record.session_id))

    def action_clear_baseline(self: CompileLabApp) -> None:
        """No baseline: the ``vs base`` column goes."""
        self.set_baseline(())

    def set_baseline(self: CompileLabApp, rows: Sequence[str]) -> None:
        """Make ``rows`` the baseline (empty: none) and compare every other row with it."""
        self.baseline_rows = tuple(rows)
        self.baseline_results = {}
        if rows:
            count = len(self.baseline_rows)
            self.notify(f"{count} row{'s' if count != 1 else ''} marked as the baseline (m again on it, or the palette's "
                        "Clear baseline, clears it)", title="Baseline", markup=False)
        self.refresh_baseline()

    def refresh_baseline(self: CompileLabApp) -> None:
        """The ``vs base`` cells for the rows now: at once for what is known, then the pairs judged off the UI thread."""
        self._baseline_generation += 1
        if not self.baseline_rows:
            self._baseline_busy = False
            self.table.show_vs_base(None)
            return
        base = self._baseline_records()
        keys = {_same(record) for record in base}
        cells, jobs = {row: BASELINE_CELL for row in self.baseline_rows}, {}
        for row in self._all_rows():
            if row in cells:
                continue
            members = [m for m in self.group_members(row) if m.status == "done"]
            if not members or _same(members[0]) not in keys:
                cells[row] = NO_MATCH_CELL
            elif row in self.baseline_results:
                cells[row] = vs_base_cell(self.baseline_results[row])
            else:
                cells[row], jobs[row] = PENDING_CELL, members
        self.table.show_vs_base(cells)
        if jobs:
            self._baseline_busy = True
            self.run_worker(self._baseline_judged(base, jobs, self._baseline_generation), group="baseline",
                            exit_on_error=False)

    async def _baseline_judged(self: CompileLabApp, base: list[RunRecord], jobs: dict[str, list[RunRecord]],
                               generation: int) -> None:
        results: dict[str, PairResult | None] = {}
        with contextlib.suppress(Exception):
            results = await asyncio.to_thread(_judge_all, base, jobs)
        if generation != self._baseline_generation:
            return  # the baseline or the rows changed meanwhile: that refresh's judging is the one to show
        self.baseline_results = {**self.baseline_results, **{row: results.get(row) for row in jobs}}
        self._baseline_busy = False
        self.refresh_baseline()

    def _baseline_row_saved(self: CompileLabApp, record: RunRecord) -> None:
        """A run of this session was saved: its row (and its group's) is judged again."""
        if self.baseline_rows:
            row = self.row_of(record)
            self.baseline_results.pop(row, None)
            if row in self.baseline_rows:
                self.baseline_results = {}  # the baseline itself gained a process
            self.refresh_baseline()

    def action_compare_baseline(self: CompileLabApp) -> None:
        """``compile-lab compare``'s table of every compared row against the baseline, in a modal screen."""
        if not self.baseline_rows:
            self.notify("Mark a baseline first (m on a row, M for its session)", title="Baseline", severity="warning")
            return
        pairs = tuple(result for result in self.baseline_results.values() if result is not None)
        comparison = Comparison(base="the baseline", new="the table's rows", settings=SETTINGS, pairs=pairs)
        self.push_screen(BaselineCompareScreen(comparison, busy=self.baseline_busy))


class BaselineCompareScreen(ModalScreen[None]):
    """The compared rows against the baseline, as ``compile-lab compare`` prints them; Escape closes it."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close", id="baseline.close")]

    def __init__(self, comparison: Comparison, busy: bool = False) -> None:
        super().__init__()
        self.comparison = comparison
        self.busy = busy
        self.text = Text()

    def compose(self) -> ComposeResult:
        """The table rendered by the command line's renderer."""
        from rich.console import Console

        from tui.present.compare_render import print_comparison

        console = Console(file=io.StringIO(), width=max(60, self.app.size.width - 6), force_terminal=True,
                          color_system="truecolor")
        if self.comparison.pairs:
            print_comparison(self.comparison, console)
        else:
            console.print("No row is comparable with the baseline (same workload, parameters and device).")
        if self.busy:
            console.print("Some rows are still being compared; open this again in a moment.", style="dim")
        self.text = Text.from_ansi(console.file.getvalue())
        """What the view shows."""
        with Vertical(classes="dialog"):
            with VerticalScroll():
                yield Static(self.text, id="baseline-compare")
            yield Static("Escape: close", classes="dim-hint")

    async def action_dismiss(self, result: None = None) -> None:
        """Close the view."""
        self.dismiss(result)


def baseline_summary(app: object, record: RunRecord) -> list[RenderableType]:
    """The details' "vs baseline" line of ``record``'s row in ``app``, or nothing (no baseline, or not comparable)."""
    rows = getattr(app, "baseline_rows", ())
    if not rows:
        return []
    run_id = record.run_id
    text = summary_text(getattr(app, "baseline_results", {}).get(run_id), is_baseline=run_id in rows)
    return [] if text is None else [Text(text, style="cyan")]
