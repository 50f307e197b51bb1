"""Baselines (issue 15 item 3): mark rows as the baseline, the ``vs base`` column, the compare view (a part of the App).

``m`` marks the selected row as the baseline (again: clears it), ``M`` every row of the selected
row's session, and the palette has both, "Clear baseline" and "Compare with baseline…". Which rows
compare with which baseline runs, and the words, are :mod:`tui.app.baselines`' rules. The pairs are
judged off the UI thread (a previous session's runs have their timing blocks read from disk there,
and dropped again after), each time the baseline changes or one of this session's runs is saved.
The choice lasts the session (it is not saved in the config).
"""

from __future__ import annotations

import asyncio
import io
import logging
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Sequence

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.app.baselines import SETTINGS, baseline_summary, judge_all, not_a_baseline
from tui.engine.compare import Comparison, PairResult
from tui.app.components.key_footer import KeyFooter

if TYPE_CHECKING:
    from tui.app.controller import LabController
    from tui.app.main_screen import MainScreen
    from tui.engine.store.results import RunRecord

__all__ = ["BaselineActions", "BaselineCompareScreen", "baseline_summary", "NO_TIMED_ROW"]

NO_TIMED_ROW = "no run of this session is done: it has no times to compare"
"""Why ``M`` refuses a session whose runs all failed or were cancelled (one line at 80 columns after its title)."""


class BaselineActions:
    """The app's baseline actions over the controller's :class:`~tui.app.baselines.BaselineState`."""

    def __init__(self, app: App[Any], lab: LabController, screen: Callable[[], MainScreen]) -> None:
        self.app, self.lab, self.screen = app, lab, screen

    def mark(self) -> None:
        """The selected row becomes the baseline (pressed on the baseline alone, it clears it); a row that ended
        without times (failed, cancelled) is refused, saying why."""
        row = self.screen().table.selected_run_id
        if row is None:
            self.app.notify("No row selected", title="Baseline", severity="warning")
            return
        refused = not_a_baseline(self.lab.group_members(row))
        if refused is not None and self.lab.baseline.rows != (row,):
            self.app.notify(refused, title="Baseline", severity="warning", markup=False)
            return
        self.set_baseline(() if self.lab.baseline.rows == (row,) else (row,))

    def mark_session(self) -> None:
        """Every row of the selected row's session (this one's, or a previous one's) becomes the baseline, but for
        the rows that ended without times (:func:`~tui.app.baselines.not_a_baseline`, as ``m`` refuses them); a
        session with none left is refused, saying why."""
        table, lab = self.screen().table, self.lab
        row = table.selected_run_id
        record = lab.row_record(row) if row is not None else None
        if row is None or record is None:
            self.app.notify("No row selected", title="Baseline", severity="warning")
            return
        history = table.is_history(row)
        rows = [r for r in lab.all_rows() if (table.has_run(r) or table.is_history(r))
                and table.is_history(r) == history
                and getattr(lab.row_record(r), "session_id", None) == record.session_id]
        timed = tuple(r for r in rows if not_a_baseline(lab.group_members(r)) is None)
        if not timed:
            self.app.notify(NO_TIMED_ROW, title="Baseline", severity="warning", markup=False)
            return
        self.set_baseline(timed)

    def set_baseline(self, rows: Sequence[str]) -> None:
        """Make ``rows`` the baseline (empty: none) and compare every other row with it."""
        self.lab.baseline.mark(rows)
        if rows:
            count = len(rows)
            self.app.notify(f"{count} row{'s' if count != 1 else ''} marked as the baseline (m again on it, or the "
                            "palette's Clear baseline, clears it)", title="Baseline", markup=False)
        self.refresh()

    def refresh(self) -> None:
        """The ``vs base`` cells for the rows now: at once for what is known, then the pairs judged off the UI
        thread."""
        state = self.lab.baseline
        cells, base, jobs = state.cells(self.lab.all_rows(), self.lab.group_members)
        self.screen().table.show_vs_base(cells)
        if jobs:
            self.app.run_worker(self._judged(base, jobs, state.generation), group="baseline", exit_on_error=False)

    async def _judged(self, base: list[RunRecord], jobs: dict[str, list[RunRecord]], generation: int) -> None:
        results: dict[str, PairResult | None] = {}
        try:
            results = await asyncio.to_thread(judge_all, base, jobs)
        except Exception:  # the rows say they were not compared
            logging.getLogger(__name__).exception("the baseline's comparisons failed")
        if self.lab.baseline.judged(generation, jobs, results):
            self.refresh()

    def row_saved(self, record: RunRecord) -> None:
        """A run of this session was saved: its row (and its group's) is judged again."""
        if self.lab.baseline.row_saved(self.lab.row_of(record)):
            self.refresh()

    def compare(self) -> None:
        """``compile-lab compare``'s table of every compared row against the baseline, in a modal screen."""
        state = self.lab.baseline
        if not state.rows:
            self.app.notify("Mark a baseline first (m on a row, M for its session)", title="Baseline",
                            severity="warning")
            return
        pairs = tuple(result for result in state.results.values() if result is not None)
        comparison = Comparison(base="the baseline", new="the table's rows", settings=SETTINGS, pairs=pairs)
        self.app.push_screen(BaselineCompareScreen(comparison, busy=state.busy))


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

        buffer = io.StringIO()
        console = Console(file=buffer, width=max(60, self.app.size.width - 6), force_terminal=True,
                          color_system="truecolor")
        if self.comparison.pairs:
            print_comparison(self.comparison, console)
        else:
            console.print("No row is comparable with the baseline (same workload, parameters and device).")
        if self.busy:
            console.print("Some rows are still being compared; open this again in a moment.", style="dim")
        self.text = Text.from_ansi(buffer.getvalue())
        """What the view shows."""
        yield KeyFooter()  # the dialog's own keys, over the screen's beneath it
        with Vertical(classes="dialog"):
            with VerticalScroll():
                yield Static(self.text, id="baseline-compare")
            yield Static("Escape: close", classes="dim-hint")

    async def action_dismiss(self, result: None = None) -> None:
        """Close the view."""
        self.dismiss(result)
