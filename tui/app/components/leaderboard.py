"""The tune's leaderboard pane: where a search stands, drawn from a :class:`~tui.app.tune_run.Board`.

Data flows down: the screen sets :attr:`Leaderboard.board` (a frozen snapshot, one per step of the
search) and the pane redraws. Requests flow up: its Stop button posts :class:`Leaderboard.StopRequested`,
which the app handles (the search stops; its ended runs stay). The pane shows the stage, the
incumbent with its speedup over eager and interval, the candidates left, the runs and the time left
of the budget, each candidate out of the race with its reason, and the latest note.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import var
from textual.widgets import Button, Static

from tui.present.format import fmt_speedup

if TYPE_CHECKING:
    from tui.app.tune_run import Board

__all__ = ["Leaderboard", "board_lines", "LABEL_WIDTH"]

LABEL_WIDTH = 10


def _line(label: str, value: str, style: str = "") -> Text:
    text = Text(f"{label:<{LABEL_WIDTH}}", style="bold")
    text.append(value, style=style)
    return text


def _incumbent(board: Board) -> str:
    standing = board.incumbent
    if standing is None:
        return "none yet"
    score = standing.score
    processes = f" ({score.processes} processes)" if score.processes > 1 else ""
    return f"{standing.name}  {fmt_speedup(score.value, score.low, score.high)} over eager{processes}"


def _counts(board: Board) -> str:
    parts = [f"{board.left} candidate(s) left", f"{board.runs} run(s)"]
    if board.time_left_s is not None:
        parts.append(f"{max(0.0, board.time_left_s):.0f} s left of {board.budget_s:g} s")
    elif board.done:
        parts.append(f"budget {board.budget_s:g} s")
    return " · ".join(parts)


def board_lines(board: Board) -> list[Text]:
    """The pane's lines above the out list: the stage, the incumbent, the counts (and the answer's first line)."""
    lines = [_line("stage", board.stage, "italic" if board.stopping else ""),
             _line("incumbent", _incumbent(board)),
             _line("left", _counts(board))]
    if board.done:
        lines.append(_line("answer", board.headline, "bold"))
    return lines


class Leaderboard(Vertical):
    """Where the search stands (see the module docstring); ``board`` None: nothing started yet."""

    DEFAULT_CSS = """
    Leaderboard { height: auto; max-height: 60%; border: round $primary; padding: 0 1; }
    Leaderboard #lb-head { height: 1; }
    Leaderboard #lb-title { width: 1fr; text-style: bold; }
    Leaderboard #lb-stop { width: auto; min-width: 10; }
    Leaderboard #lb-status { height: auto; }
    Leaderboard #lb-out { height: auto; max-height: 8; }
    Leaderboard #lb-out-lines { color: $text-muted; }
    Leaderboard.-done #lb-stop { display: none; }
    """

    board: var[Board | None] = var(None, init=False)
    """The search's state now (data down)."""

    class StopRequested(Message):
        """The Stop button was pressed: stop the search (the app's cancel key does the same)."""

    def compose(self) -> ComposeResult:
        """A title with the Stop button, the status lines, the out list, the note."""
        with Horizontal(id="lb-head"):
            yield Static("Tune", id="lb-title", markup=False)
            yield Button("Stop (x)", id="lb-stop", variant="error", compact=True)
        yield Static("", id="lb-status")
        with VerticalScroll(id="lb-out"):
            yield Static("", id="lb-out-lines")

    def on_mount(self) -> None:
        """Draw what is known."""
        self._draw(self.board)

    def watch_board(self, board: Board | None) -> None:
        self._draw(board)

    def _draw(self, board: Board | None) -> None:
        if board is None or not self.is_mounted:
            return
        self.set_class(board.done, "-done")
        self.query_one("#lb-title", Static).update(f"Tune {board.what} · tune id {board.tune_id}")
        self.query_one("#lb-status", Static).update(Text("\n").join(board_lines(board)))
        out = board.out
        rows = [_line("out" if n == 0 else "", f"{name}: {why}") for n, (name, why) in enumerate(out)]
        if board.note:
            rows.append(_line("note", board.note))
        self.query_one("#lb-out-lines", Static).update(Text("\n").join(rows))
        self.query_one("#lb-out").display = bool(rows)

    @on(Button.Pressed, "#lb-stop")
    def _stop(self, event: Button.Pressed) -> None:
        event.stop()
        self.post_message(self.StopRequested())
