"""``compile-lab tune``'s output: progress lines on stderr; the answer (code, figures, runner-up table) on stdout.

The answer's wording is :mod:`tui.present.tune_answer`'s (the app shows the same).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from tui.engine.tune.answer import Progress, TuneResult
from tui.engine.tune.listener import TuneListener
from tui.engine.tune.search import Standing, stage_name
from tui.present.format import fmt_speedup, hanging_lines
from tui.present.tune_answer import (
    STANDING_COLUMNS, against_text, closing_line, code_lines, figure_lines, lead_lines, result_rows, shows_screened,
    standing_rows,
)  # fmt: skip

__all__ = ["TuneLines", "print_answer", "against_text", "standing_rows"]


def _say(console: Any, text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _say_folded(console: Any, text: str) -> None:
    """``text`` folded to the console's width with a hanging indent (:func:`~tui.present.format.hanging_lines`)."""
    _say(console, "\n".join(hanging_lines(text, max(40, console.width))))


class TuneLines(TuneListener):
    """One line per event of the search on stderr, flushed as it happens (``quiet``: errors only)."""

    def __init__(self, console: Any, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet
        self.said: set[str] = set()
        """The notes said as the search went (the answer says the others: :func:`print_answer`)."""

    def _line(self, text: str) -> None:
        if not self.quiet:
            _say(self.console, text)

    def note(self, text: str) -> None:
        self._line(f"note: {text}")
        if not self.quiet:
            self.said.add(text)

    def error(self, text: str) -> None:
        _say(self.console, f"compile-lab: error: {text}")

    def stage_started(self, index: int, names: Sequence[str], iters: int) -> None:
        self._line(f"{stage_name(index)}: {len(names)} candidate(s), {iters} iterations per side, one fresh "
                   "process each")

    def candidate_scored(self, standing: Standing) -> None:
        score = standing.score
        state = f" ({standing.gone})" if standing.gone else ""
        if score.out:
            self._line(f"  {standing.name}: out: {score.out}")
            return
        self._line(f"  {standing.name}: {fmt_speedup(score.value, score.low, score.high)} over eager "
                   f"({score.processes} {'process' if score.processes == 1 else 'processes'}){state}")

    def progress(self, progress: Progress) -> None:
        leader = progress.incumbent.name if progress.incumbent is not None else "none yet"
        self._line(f"    leader {leader}; {progress.left} in the race; {max(0.0, progress.time_left_s):.0f} s left; "
                   f"{progress.runs} run(s)")

    def confirming(self, standing: Standing, repeats: int) -> None:
        self._line(f"confirming {standing.name}: {repeats} fresh processes of it and {repeats} of the default "
                   "compile, interleaved")


NAME_SHARE = 0.4
"""The most of the terminal's width the candidate column takes: the interval and the standing need the rest."""


def _name_width(names: Sequence[str], terminal: int) -> int:
    """The candidate column's width: its widest setting (``key=value``), so that a name wraps between its settings,
    at most :data:`NAME_SHARE` of the terminal (a wider setting breaks after its ``=``: :func:`_name_cell`)."""
    most = int(terminal * NAME_SHARE)

    def needs(setting: str) -> int:
        return len(setting) if len(setting) <= most else max(len(part) + 1 for part in setting.split("=", 1))

    widest = max((needs(setting) for name in names for setting in name.split()), default=0)
    return max(len(STANDING_COLUMNS[0]), min(widest, most))


def _name_cell(name: str, width: int) -> str:
    """``name`` with each setting wider than ``width`` broken after its ``=`` (its key whole on one line)."""
    return " ".join(setting.replace("=", "=\n", 1) if len(setting) > width else setting for setting in name.split())


def print_answer(result: TuneResult, console: Any, modes: Mapping[str, Mapping[str, Any]] | None = None,
                 quiet: bool = False, kept: tuple[str | None, bool] = (None, True), said: Collection[str] = ()) -> None:
    """The answer: the outcome, the code, the figures, the runner-up table and the notes, then where the runs are
    kept (``kept``: the ``--json`` file or None, and whether the history has them: :func:`closing_line`).

    The notes are the confirmation's and those of the search that the progress lines did not say (``said``:
    :attr:`TuneLines.said`), such as the one that found the runs noisy, known only once the search ended."""
    from rich.table import Table

    from tui.present.fold_text import WholeWordText

    for line in lead_lines(result):
        _say_folded(console, line)
    for line in code_lines(result, modes):  # code is never folded: it is pasted as it is
        _say(console, line)
    for line in figure_lines(result):
        _say_folded(console, line)
    if quiet:
        return
    table = Table(title="Candidates (speedup over eager in their own processes)", title_justify="left")
    rows = result_rows(result)
    # Where the race ended after its screening, the screened figure is the latest one's: one column says it,
    # and the standing's prose gets the room.
    screened = shows_screened(result.standings)
    width = _name_width([row[0] for row in rows], console.width)
    table.add_column(STANDING_COLUMNS[0], width=width, overflow="fold")
    if screened:
        table.add_column(STANDING_COLUMNS[1], no_wrap=True)
    for column in STANDING_COLUMNS[2:]:  # they share the rest, folding where they must
        table.add_column(column, overflow="fold", ratio=1)
    for name, first, latest, standing in rows:  # a name in a standing folds at its separators, not mid-word
        table.add_row(_name_cell(name, width), *([first] if screened else []), latest, WholeWordText(standing))
    console.print(table)
    for note in [*(result.confirmation.notes if result.confirmation else ()), *result.notes]:
        if note not in said:
            _say_folded(console, f"note: {note}")
    _say_folded(console, closing_line(result, *kept))
