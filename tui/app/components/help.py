"""The help screen (F1 or ``?``): what compile-lab measures, the details' tabs and every key binding."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.app.components.details import tabs_help
from tui.app.components.key_footer import KeyFooter

__all__ = ["HelpScreen"]

INTRO = """\
compile-lab times eager PyTorch against torch.compile in a fresh worker process per run:
the first compiled call is reported apart as compile s, warm-up is discarded, and eager and
compiled are then measured in alternating blocks. The speedup is the ratio of medians with a
95% bootstrap interval. The status column gives the verdict: faster or slower (the interval
clears the threshold), no change, inconclusive (the interval is too wide to say; a launch-bound
run's host time from one process, which swings between processes) or noisy (the machine was busy,
the speedup drifted from one word to another, or stalls moved the median: re-run). LB marks a
launch-bound run (host time per call well above the GPU time), followed by its host-inclusive
speedup: what a loop that never synchronises pays.

Pick a workload and options on the left, press r to run (ctrl+r works inside a text field),
w to sweep modes x fullgraph x dynamic. In the picker, Left/Right (or a click on ◂ ▸) step
through a field's choices and Space toggles a check box (✓ on, blank off). Rows update live;
rows marked ↺ come from the history (previous sessions; h shows or hides them). In the table, Left/Right
scroll the columns past status and speedup sideways, a column a press.

The iterations pane plots the selected run's time per iteration: compile and warm-up in grey left
of the dotted line, then eager and compiled in their colours, each chart column's spread dark and its
median bright. A dashed line and a ▶ on the axis mark each side's median, given in the legend. The
plot's range is steady state's: slower iterations show ↑ on the top row, counted per side in the
legend (↑21), and (10.6s↑) gives the slowest compile or warm-up call.

With two GPUs or more, the device field's cuda:all (or the GPUs checked in the sweep dialog) runs
one configuration per GPU at once: the GPU pane marks each busy GPU ▶ with its run, a row's
device column names the GPU it got, and x cancels the selected row's run (else every running one).

u tunes the picker's configuration (its workload, parameters, device, dtype and precision): a
dialog asks the budget, the space (modes, axes, options, all or knob names), the objective
(device or host time) and, optionally, the calls a job makes. The search races torch.compile
configurations in fresh processes, then confirms the leader against the default compile and eager
(compile-lab tune's search; README: Tune). Its screen shows the leaderboard (the stage, the incumbent
with its interval, candidates left and out with the reason, time left), then the answer: the
winner as code in both forms with its speedups and verdicts, or "no configuration beats the default
compile by more than 2%", or unconfirmed with why. y copies the answer, Escape goes back (the search
goes on; u shows it again, U the latest search). x or the Stop button stops the search: the runs that
ended stay, and the answer is the best so far, unconfirmed. Every run is a row and a history line
tagged with the tune id.

{details}
Tab / shift+tab move between panes; Escape leaves a text field."""
"""The help's text; ``{details}``: the details' tabs and their keys (from their one list, tabs_help)."""


def _reflow(text: str) -> str:
    """Join each paragraph's lines so the terminal wraps them at its own width."""
    return "\n\n".join(" ".join(part.split()) for part in text.split("\n\n"))


class HelpScreen(ModalScreen[None]):
    """A scrolling modal with the introduction and a table of keys."""

    BINDINGS = [Binding("escape,q,f1,question_mark", "close", "Close help", id="help.close")]

    def __init__(self, keys: Iterable[tuple[str, str]], data_line: str = "") -> None:
        """``keys`` are (key as shown, what it does) pairs, in display order; ``data_line`` the data dir's size."""
        super().__init__()
        self.keys = list(keys)
        self.data_line = data_line

    def _content(self) -> Group:
        table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("action")
        for key, description in self.keys:
            table.add_row(key, description)
        return Group(Text("compile-lab help", style="bold"), Text(_reflow(INTRO.format(details=tabs_help()))),
                     Text(""), table, *([Text(f"\nData dir {self.data_line}")] if self.data_line else []),
                     Text("\nEscape, q or F1 closes this help.", style="dim"))

    def compose(self) -> ComposeResult:
        """The text in a scrolling box."""
        yield KeyFooter()  # the dialog's own keys, over the screen's beneath it
        with VerticalScroll(classes="dialog help-dialog"):
            yield Static(self._content(), id="help-content")

    def show_data_line(self, line: str) -> None:
        """The data dir's size measured again (it grows with every run) replaces the one shown."""
        if line and line != self.data_line and self.is_attached:
            self.data_line = line
            self.query_one("#help-content", Static).update(self._content())

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)
