"""Small modal dialogs: a yes/no confirmation and the export-path prompt."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from tui.app.export_target import export_labels
from tui.app.components.key_footer import KeyFooter
from tui.app.components.ordered_input import OrderedInput

__all__ = ["ConfirmScreen", "ExportScreen"]


class ConfirmScreen(ModalScreen[bool]):
    """Ask a yes/no question; dismisses with True (y / Enter on Yes) or False (n / Escape).

    ``details`` (e.g. a run's full options, one per line) is shown below the question, as
    text, in a pane that scrolls when it is taller than the screen allows.
    """

    DEFAULT_CSS = """
    ConfirmScreen .dialog-details {
        height: 1fr;
        min-height: 4;
        margin: 0 0 1 0;
        border: round $primary-muted;
    }
    """

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str, yes: str = "Yes", no: str = "No", details: str = "") -> None:
        super().__init__()
        self.question = question
        self.yes_label = yes
        self.no_label = no
        self.details = details

    def compose(self) -> ComposeResult:
        """The question and two buttons."""
        yield KeyFooter()  # the dialog's own keys, over the screen's beneath it
        with Vertical(classes="dialog") as dialog:
            if self.details:  # as tall as the screen allows; the details scroll, the buttons stay
                dialog.styles.height = "90%"
            yield Static(self.question, classes="dialog-question", markup=False)
            if self.details:
                with VerticalScroll(classes="dialog-details"):
                    yield Static(self.details, id="confirm-details", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.yes_label} (y)", variant="error", id="yes", compact=True)
                yield Button(f"{self.no_label} (n)", variant="primary", id="no", compact=True)

    def on_mount(self) -> None:
        """Focus No: the safe answer."""
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        """Dismiss with ``value``."""
        self.dismiss(value)


class ExportScreen(ModalScreen[str | None]):
    """Ask where to export; dismisses with the typed directory ("" = the default) or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="export.cancel")]

    def __init__(self, default_dir: str) -> None:
        super().__init__()
        self.default_dir = default_dir

    def compose(self) -> ComposeResult:
        """The prompt and the path input."""
        yield KeyFooter()  # the dialog's own keys, over the screen's beneath it
        with Vertical(classes="dialog"):
            # a Static wraps: a Label is one line, cut at 80 columns
            yield Static(f"Export all ended rows ({export_labels()}) to a directory or a .csv path:", markup=False,
                         id="export-question")
            yield OrderedInput(placeholder=self.default_dir, id="export-path")
            yield Static("Enter: export   Escape: cancel   (empty = the default above; a directory that does not "
                         "exist is made only after you say yes)", classes="dim-hint")

    @on(Input.Submitted, "#export-path")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        """Close without exporting."""
        self.dismiss(None)
