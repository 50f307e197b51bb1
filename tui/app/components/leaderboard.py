"""The tune's leaderboard pane: where a search stands, drawn from a :class:`~tui.app.tune_run.Board`.

Data flows down: the screen sets :attr:`Leaderboard.board` (a frozen snapshot, one per step of the
search) and the pane redraws. Requests flow up: its Stop button posts :class:`Leaderboard.StopRequested`,
which the app handles (the search stops; its ended runs stay). The pane shows the stage, the
incumbent with its speedup over eager and interval, the candidates still in the race and how many of
them have yet to run in this stage, the runs and the time left of the budget, each candidate scored
and still in the race with its speedup (listed as soon as its run ends), each candidate out of the
race with its reason, and the latest note; once the search ended, its stage and runs (the answer
below it lists every candidate).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import var
from textual.widgets import Button, Static

from tui.present.format import fmt_speedup
from tui.present.tune_answer import runs_text

if TYPE_CHECKING:
    from tui.app.tune_run import Board
    from tui.engine.tune.search import Standing

__all__ = ["Leaderboard", "board_rows", "list_rows", "LABEL_WIDTH"]

LABEL_WIDTH = 10


def _grid(rows: list[tuple[str, str, str]]) -> Table:
    """Label and value per row, a value that wraps indented under its own column."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=LABEL_WIDTH - 1, style="bold", no_wrap=True)
    grid.add_column(ratio=1)
    for label, value, style in rows:
        grid.add_row(label, Text(value, style=style))
    return grid


def _speedup(standing: Standing, what: str = "") -> str:
    """``name  1.19× [1.17, 1.21]`` with ``what`` after the interval, then the processes when more than one."""
    score = standing.score
    processes = f" ({score.processes} processes)" if score.processes > 1 else ""
    return f"{standing.name}  {fmt_speedup(score.value, score.low, score.high)}{what}{processes}"


def _incumbent(board: Board) -> str:
    standing = board.incumbent
    return "none yet" if standing is None else _speedup(standing, " over eager")


def _counts(board: Board, now: float | None) -> str:
    if board.done:
        return f"{runs_text(board.runs, board.stopped_runs)} · budget {board.budget_s:g} s"
    race = f"{board.left} in the race"
    if board.waiting:  # "left" alone reads as "not yet run": the two counts say each
        race += f", {board.waiting} not yet run" + (" in this stage" if board.stage_index else "")
    parts = [race, f"{board.runs} run(s)"]
    left = board.ends_at - now if board.ends_at is not None and now is not None else board.time_left_s
    if left is not None:
        parts.append(f"{max(0.0, left):.0f} s left of {board.budget_s:g} s")
    return " · ".join(parts)


def board_rows(board: Board, now: float | None = None, running: Sequence[str] = ()) -> list[tuple[str, str, str]]:
    """(label, value, style) of the pane's status: the stage, the incumbent while it runs, the counts (the time
    left counted down to ``board.ends_at`` at ``now``, a ``time.monotonic`` value; else the latest step's), and
    while it runs the ``running`` lines (:meth:`~tui.app.tune_run.TuneRun.running_lines`), a row each."""
    rows = [("stage", board.stage, "italic" if board.stopping else "")]
    if not board.done:
        rows.append(("incumbent", _incumbent(board), ""))
    rows.append(("runs" if board.done else "progress", _counts(board, now), ""))
    if not board.done:
        rows += [("running" if n == 0 else "", line, "") for n, line in enumerate(running)]
    return rows


def list_rows(board: Board) -> list[tuple[str, str, str]]:
    """(label, value, style) of the pane's lists: each candidate scored and still in the race with its speedup over
    eager, the best first; each candidate out with its reason; the latest note."""
    rows = [("scored" if n == 0 else "", _speedup(standing), "") for n, standing in enumerate(board.scored)]
    rows += [("out" if n == 0 else "", f"{name}: {why}", "") for n, (name, why) in enumerate(board.out)]
    if board.note:
        rows.append(("note", board.note, ""))
    return rows


class Leaderboard(Vertical):
    """Where the search stands (see the module docstring); ``board`` None: nothing started yet."""

    DEFAULT_CSS = """
    Leaderboard { height: auto; max-height: 100%; border: round $primary; padding: 0 1; }
    Leaderboard.-done { max-height: 60%; }
    Leaderboard #lb-head { height: 1; }
    Leaderboard #lb-title { width: 1fr; text-style: bold; text-wrap: nowrap; text-overflow: ellipsis; }
    Leaderboard #lb-stop { width: auto; min-width: 10; }
    Leaderboard #lb-status { height: auto; }
    Leaderboard #lb-out { height: auto; max-height: 1fr; }
    Leaderboard #lb-out-lines { color: $text-muted; }
    Leaderboard.-done #lb-stop { display: none; }
    """

    board: var[Board | None] = var(None, init=False)
    """The search's state now (data down)."""
    running: var[tuple[str, ...]] = var((), init=False)
    """What the search runs now, a line per run (data down, set by the screen each second)."""

    class StopRequested(Message):
        """The Stop button was pressed: stop the search (the app's cancel key does the same)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._title = Static("Tune", id="lb-title", markup=False)
        self._status = Static("", id="lb-status")
        self._out_lines = Static("", id="lb-out-lines")
        self._out = VerticalScroll(self._out_lines, id="lb-out")

    def compose(self) -> ComposeResult:
        """A title with the Stop button, the status lines, the out list, the note."""
        with Horizontal(id="lb-head"):
            yield self._title
            yield Button("Stop (x)", id="lb-stop", variant="error", compact=True)
        yield self._status
        yield self._out

    def on_mount(self) -> None:
        """Draw what is known; count the time left down once a second."""
        self._draw(self.board)
        self.set_interval(1.0, self._count_down, name="tune-time-left")

    def _count_down(self) -> None:
        board = self.board
        if board is not None and not board.done and board.ends_at is not None:
            self._draw_status(board)

    def watch_running(self) -> None:
        board = self.board
        if board is not None and not board.done:
            self._draw_status(board)

    def _draw_status(self, board: Board) -> None:
        """The status lines (:func:`board_rows`), the time left counted to now, what runs now."""
        self._status.update(_grid(board_rows(board, time.monotonic(), self.running)))

    def watch_board(self, board: Board | None) -> None:
        self._draw(board)

    def _draw(self, board: Board | None) -> None:
        if board is None:
            return
        self.set_class(board.done, "-done")
        self._title.update(f"Tune {board.what}")
        self.border_subtitle = f"tune id {board.tune_id}"
        self._draw_status(board)
        rows = list_rows(board)
        self._out_lines.update(_grid(rows))
        self._out.display = bool(rows) and not board.done  # the answer lists every candidate

    @on(Button.Pressed, "#lb-stop")
    def _stop(self, event: Button.Pressed) -> None:
        event.stop()
        self.post_message(self.StopRequested())
