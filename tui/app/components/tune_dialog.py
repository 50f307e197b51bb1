"""The Tune dialog: the search's own settings for the picker's configuration.

Four labelled fields, as ``compile-lab tune`` takes them: the budget (``10m``), the space (``modes``,
``axes``, ``options``, ``all`` or knob names, comma-separated), the objective (device or host time)
and the calls a job makes (optional: the compile time is charged over them). They are checked with
the CLI's own rules (:func:`tui.engine.tune.request.check_request`): a bad field is one line under
the fields, naming it, and the field is marked. While a problem is shown, each change checks the
fields again: the line and the mark go once they are valid (or move to the field still bad). The
dialog dismisses with the :class:`~tui.engine.tune.request.TuneRequest`, or None when cancelled.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from tui.engine.options import OptionsError
from tui.engine.tune.objective import DEVICE, OBJECTIVES
from tui.engine.tune.request import DEFAULT_BUDGET, TuneRequest, check_request
from tui.engine.tune.space import SPACE_GROUPS
from tui.app.components.key_footer import KeyFooter
from tui.app.components.ordered_input import OrderedInput

__all__ = ["TuneDialog", "OBJECTIVE_LABELS"]

OBJECTIVE_LABELS = {"device": "device time per iteration", "host": "host time per call (launch-bound serving)"}
"""What each objective means, as the dialog lists it."""
_FIELDS = ("budget", "space", "objective", "calls")


class TuneDialog(ModalScreen[TuneRequest | None]):
    """Ask the budget, space, objective and calls; ctrl+s (or Enter in a field) starts, Escape cancels."""

    DEFAULT_CSS = """
    TuneDialog { align: center middle; }
    TuneDialog .tune-dialog { max-width: 76; }
    TuneDialog .tune-field { height: auto; margin: 0 0 1 0; }
    TuneDialog .tune-field Label { width: 11; padding: 0 1 0 0; }
    TuneDialog .tune-field Input, TuneDialog .tune-field Select { width: 1fr; }
    TuneDialog #tune-error { color: $error; height: auto; margin: 0 0 1 0; }
    TuneDialog .-invalid { border: tall $error; }
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="tune.cancel"),
        Binding("ctrl+s", "start", "Start tune", id="tune.start"),
    ]

    def __init__(self, what: str, budget: str = DEFAULT_BUDGET, space: str = "all", objective: str = DEVICE,
                 calls: str = "") -> None:
        """``what``: the configuration tuned, in words (the picker's workload, device, dtype, precision)."""
        super().__init__()
        self.what = what
        self.initial = {"budget": budget, "space": space, "objective": objective, "calls": calls}
        self.chosen: dict[str, str] = {}
        """The fields as typed when the dialog was dismissed with a request (empty otherwise)."""
        self.problem = False
        """Whether the error line shows a problem (then each change checks the fields again)."""

    def compose(self) -> ComposeResult:
        """The configuration in words, four labelled fields, the error line and the buttons."""
        init = self.initial
        yield KeyFooter()  # the dialog's own keys, over the screen's beneath it
        with Vertical(classes="dialog tune-dialog"):
            yield Static(f"Tune {self.what}: race torch.compile configurations in fresh processes and confirm "
                         "the fastest against the default compile and eager.", classes="dialog-question",
                         markup=False)
            with Horizontal(classes="tune-field"):
                yield Label("budget", id="tune-budget-label")
                yield OrderedInput(init["budget"], id="tune-budget", compact=True, placeholder="90s, 10m, 1h",
                            tooltip="the whole search's wall-clock time; no run starts that would not fit")
            with Horizontal(classes="tune-field"):
                yield Label("space", id="tune-space-label")
                yield OrderedInput(init["space"], id="tune-space", compact=True,
                            placeholder=f"{', '.join(SPACE_GROUPS)} or knob names, comma-separated")
            with Horizontal(classes="tune-field"):
                yield Label("objective", id="tune-objective-label")
                yield Select([(f"{key}: {OBJECTIVE_LABELS[key]}", key) for key in OBJECTIVES], value=init["objective"],
                             allow_blank=False, id="tune-objective", compact=True)
            with Horizontal(classes="tune-field"):
                yield Label("calls", id="tune-calls-label")
                yield OrderedInput(init["calls"], id="tune-calls", compact=True, placeholder="optional, e.g. 100000",
                            tooltip="a job's calls: each candidate's compile time is charged over them")
            yield Static("", id="tune-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Tune (ctrl+s)", variant="primary", id="tune-start", compact=True)
                yield Button("Cancel (esc)", id="tune-cancel", compact=True)

    def on_mount(self) -> None:
        """Focus the budget."""
        self.query_one("#tune-budget", Input).focus()

    def values(self) -> dict[str, str]:
        """The fields as typed."""
        found = {key: self.query_one(f"#tune-{key}", Input).value for key in ("budget", "space", "calls")}
        found["objective"] = str(self.query_one("#tune-objective", Select).value)
        return found

    def request(self) -> TuneRequest:
        """The fields checked (OptionsError naming the first bad one)."""
        typed = self.values()
        return check_request(typed["objective"], typed["calls"], None, typed["space"].strip() or None,
                             typed["budget"])

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_start()

    @on(Input.Changed)
    @on(Select.Changed)
    def _edited(self) -> None:
        """A field changed while a problem is shown: check again, so a corrected field clears it."""
        if self.problem:
            self._checked(focus=False)

    def _checked(self, focus: bool) -> TuneRequest | None:
        """The request, or None with the first bad field shown in one line and marked (``focus``: focused)."""
        for key in _FIELDS:
            self.query_one(f"#tune-{key}").remove_class("-invalid")
        error = self.query_one("#tune-error", Static)
        try:
            request = self.request()
        except OptionsError as exc:
            error.update(str(exc))
            self.problem = True
            if exc.field in _FIELDS:
                field = self.query_one(f"#tune-{exc.field}")
                field.add_class("-invalid")
                if focus:
                    field.focus()
            return None
        error.update("")
        self.problem = False
        return request

    @on(Button.Pressed, "#tune-start")
    def action_start(self) -> None:
        """Dismiss with the request, or show the first bad field in one line."""
        request = self._checked(focus=True)
        if request is None:
            return
        self.chosen = self.values()
        self.dismiss(request)

    @on(Button.Pressed, "#tune-cancel")
    def action_cancel(self) -> None:
        """Dismiss without tuning."""
        self.dismiss(None)
