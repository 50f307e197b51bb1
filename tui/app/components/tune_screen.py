"""The tune screen: the leaderboard while a search runs, then its answer, to read and to copy.

The answer (:func:`tui.present.tune_answer.answer_text`: the headline, the winner as code in both
forms, its speedups over the default compile and over eager with their verdicts, the candidates)
is in a read-only text area once the search ended, its prose folded to the area's width with a
hanging indent as the CLI prints it, its code folded where it stays Python (a comment into comment
lines, a call after a comma inside its brackets), so rows a terminal's own selection copies still run:
``y`` copies all of it unfolded, and a selection can be copied as in any text area. Escape goes back to the results
table; the search goes on, and the Tune key (``u``) comes back here while it runs. ``r`` and ``a`` (run, re-run)
go back to the table too, where the row they queue shows. ``x`` (the app's cancel key, named Stop here) or the
pane's Stop button stops it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Header, TextArea

from tui.app.components.key_footer import KeyFooter
from tui.app.keys import off_footer
from tui.app.components.leaderboard import Leaderboard
from tui.app.layout import NARROW_WIDTH
from tui.present.tune_answer import fold_answer

if TYPE_CHECKING:
    from tui.app.tune_run import Board

__all__ = ["TuneScreen", "AnswerArea"]


class AnswerArea(TextArea):
    """The answer, read only: prose lines folded to the area's width with a hanging indent (continuation lines
    under their text, not at column 0), refolded when the width changes; code lines soft-wrap as they are."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("", read_only=True, soft_wrap=True, id=id, classes=classes, show_line_numbers=False)
        self._lines: tuple[tuple[str, bool], ...] = ()
        self._folded_to = -1

    def show_answer(self, text: str, lines: tuple[tuple[str, bool], ...]) -> None:
        """Show ``lines`` folded (``text`` as it is where no lines are given, or before the width is known)."""
        self._lines, self._folded_to = lines, -1
        self.load_text(text)
        self._fold()

    def fold_width(self) -> int:
        """The columns a line may take without soft wrapping, with room kept for a vertical scrollbar."""
        scrollbar = 0 if self.show_vertical_scrollbar else self.styles.scrollbar_size_vertical
        return self.wrap_width - scrollbar

    def _fold(self) -> None:
        width = self.fold_width()
        if not self._lines or width <= 0 or width == self._folded_to:
            return
        self._folded_to = width
        self.load_text(fold_answer(self._lines, width))

    def on_resize(self) -> None:
        """Refold to the new width (the area's first size comes once it is shown)."""
        self._fold()


class TuneScreen(Screen):
    """The leaderboard and the answer of one search (see the module docstring)."""

    DEFAULT_CSS = """
    TuneScreen #tune-answer { height: 1fr; border: round $secondary; }
    TuneScreen #tune-answer.-hidden { display: none; }
    """

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="tune.back"),
        Binding("y", "copy_answer", "Copy answer", id="tune.copy"),
        # the app's cancel key, named as the pane's Stop button is: here it is that button
        Binding("x", "stop", "Stop", id="tune.stop"),
        # once the search ended: x (off the footer) stops nothing, and never reaches the app's Cancel of a table row
        Binding("x", "stop_ended", "Stop", show=False),
        # a run's new row shows in the table: run and re-run go back to it first
        Binding("r", "to_table('run')", "Run", show=False),
        Binding("a", "to_table('rerun')", "Re-run", show=False),
        *off_footer("sweep", "tune", "export", "toggle_history", "sort"),  # the footer fits 80 columns whole
    ]

    def __init__(self, board: Board | None = None, running: Callable[[], tuple[str, ...]] | None = None) -> None:
        super().__init__()
        self._board = board
        self._running_lines = running
        """What the search runs now (:meth:`~tui.app.tune_run.TuneRun.running_lines`), read each second."""

    def compose(self) -> ComposeResult:
        """The header, the leaderboard, the answer (hidden until the search ends), the footer."""
        yield Header(show_clock=False, icon="≡")
        leaderboard = Leaderboard(id="leaderboard")
        leaderboard.set_reactive(Leaderboard.board, self._board)
        yield leaderboard
        answer = AnswerArea(id="tune-answer", classes="-hidden")
        answer.border_title = "Answer (y copies it)"
        yield answer
        yield KeyFooter()

    def on_mount(self) -> None:
        """Show the board given, and what runs now, read again each second while the search runs."""
        self.show(self._board)
        if self._running_lines is not None:
            self._show_running()
            self.set_interval(1.0, self._show_running, name="tune-running")

    def _show_running(self) -> None:
        if self._running_lines is not None and self._board is not None and not self._board.done:
            self.query_one(Leaderboard).running = self._running_lines()

    def on_resize(self) -> None:
        """Below 120 columns the footer drops its key padding (as on the main screen)."""
        self.query_one(KeyFooter).compact = self.size.width < NARROW_WIDTH

    @property
    def board(self) -> Board | None:
        """What the screen shows now."""
        return self._board

    @property
    def answer(self) -> str:
        """The answer's text ("" until the search ends)."""
        return self._board.answer if self._board is not None and self._board.done else ""

    def show(self, board: Board | None) -> None:
        """Draw ``board`` (data down): the leaderboard, and the answer once the search ended."""
        self._board = board
        if board is None or not self.query(Leaderboard):  # not composed yet: compose hands it down
            return
        self.query_one(Leaderboard).board = board
        area = self.query_one("#tune-answer", AnswerArea)
        if board.done and area.has_class("-hidden"):
            area.show_answer(board.answer, board.answer_lines)
            area.remove_class("-hidden")
            area.focus()
            self.refresh_bindings()  # the footer: Stop goes, Copy answer comes

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A key is in the footer only while it does something: Stop while the search runs, Copy answer once there
        is an answer (False hides a key; :meth:`show` refreshes the footer as the search ends)."""
        running = self._board is not None and not self._board.done
        if action == "stop":
            return running
        if action == "stop_ended":
            return not running
        if action == "copy_answer":
            return bool(self.answer)
        return True

    async def action_to_table(self, action: str) -> None:
        """``r`` / ``a`` here: back to the table, where the row it queues shows, then the app's ``action``
        (queued behind this screen, the run showed nowhere until the user left it)."""
        self.app.pop_screen()
        await self.app.run_action(action)

    def action_stop(self) -> None:
        """Stop the search, as the pane's Stop button does (the app stops it)."""
        self.post_message(Leaderboard.StopRequested())

    def action_stop_ended(self) -> None:
        """``x`` while no search runs here: nothing to stop (a notice says so)."""
        self.notify("The search has ended: there is nothing to stop.", severity="information")

    def action_copy_answer(self) -> None:
        """Copy the whole answer (OSC 52: most terminals, over SSH too)."""
        if not self.answer:
            self.notify("The answer comes when the search ends.", severity="information")
            return
        self.app.copy_to_clipboard(self.answer)
        self.notify(self.answer.splitlines()[0], title="Answer copied (if your terminal allows it)", markup=False,
                    timeout=6)
