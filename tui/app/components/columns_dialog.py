"""The column chooser: which of the results table's columns show (``c``, or "Columns" in the palette).

It lists every available column of :data:`tui.app.table_columns.TABLE_COLUMNS` by priority (the
order they take on screen), ``✓`` for shown, with the highlighted column's meaning in full under the
list (a narrow terminal cuts it in the list's line), and dismisses with the whole choice (column key ->
shown) or None when cancelled. The app applies it to the table and keeps it in the config.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, SelectionList, Static
from textual.widgets.selection_list import Selection

from tui.app.components.marks import MarkedSelectionList
from tui.app.table_columns import COLUMNS_BY_KEY, TABLE_COLUMNS, default_choice
from tui.app.components.key_footer import KeyFooter

__all__ = ["ColumnsScreen"]

_HEADER_WIDTH = 17
"""Wide enough for the longest header (``speedup [95% CI]``), so the meanings line up."""


class ColumnsScreen(ModalScreen[dict[str, bool] | None]):
    """Show or hide columns: space toggles, ctrl+s applies, ``d`` checks the defaults, Escape cancels."""

    DEFAULT_CSS = """
    ColumnsScreen .columns-dialog {
        height: 90%;
        max-width: 110;
    }
    ColumnsScreen #columns-list {
        height: 1fr;
        border: round $primary 50%;
        padding: 0;
    }
    ColumnsScreen #columns-meaning {
        height: 2;
        color: $text-muted;
    }
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="columns.cancel"),
        Binding("ctrl+s", "apply", "Apply", id="columns.apply"),
        Binding("d", "defaults", "Defaults", id="columns.defaults"),
    ]

    def __init__(self, choice: Mapping[str, bool]) -> None:
        """``choice``: the table's columns now (column key -> shown)."""
        super().__init__()
        self.initial = {**default_choice(), **choice}

    def compose(self) -> ComposeResult:
        """The hint, the list of columns and the buttons."""
        yield KeyFooter()  # the dialog's own keys, over the screen's beneath it
        with Vertical(classes="dialog columns-dialog"):
            yield Static("Columns of the results table, in the order they take (the first stay on screen when it is "
                         "narrow). Space toggles, ctrl+s applies, d: the defaults, escape: cancel.", markup=False)
            yield Static("Option columns (workload to flags) appear where rows differ; what every row shares is said "
                         "once, in the pane's title.", classes="dim-hint", markup=False)
            selections = [
                Selection(Text(f"{column.header:<{_HEADER_WIDTH}} {'always shown: ' if column.required else ''}"
                               f"{column.meaning}"),
                          column.key, self.initial[column.key] or column.required, id=column.key,
                          disabled=column.required)
                for column in TABLE_COLUMNS if column.available
            ]
            yield MarkedSelectionList(*selections, id="columns-list", compact=True)
            yield Static(id="columns-meaning", markup=False)  # the highlighted column's meaning, whole
            with Horizontal(classes="dialog-buttons"):
                yield Button("Apply (ctrl+s)", variant="primary", id="columns-apply", compact=True)
                yield Button("Defaults (d)", id="columns-defaults", compact=True)
                yield Button("Cancel (esc)", id="columns-cancel", compact=True)

    def on_mount(self) -> None:
        """Focus the list."""
        self.query_one("#columns-list", SelectionList).focus()

    @on(SelectionList.SelectionHighlighted, "#columns-list")
    def _show_meaning(self, event: SelectionList.SelectionHighlighted[str]) -> None:
        """Say the highlighted column's meaning in full: a narrow dialog cuts it in the list."""
        column = COLUMNS_BY_KEY[event.selection.value]
        required = "always shown: " if column.required else ""
        self.query_one("#columns-meaning", Static).update(f"{column.header}: {required}{column.meaning}")

    def choice(self) -> dict[str, bool]:
        """Every available column -> checked now (a column that cannot be hidden is always True)."""
        selected = set(self.query_one("#columns-list", SelectionList).selected)
        return {column.key: column.required or column.key in selected for column in TABLE_COLUMNS if column.available}

    @on(Button.Pressed, "#columns-apply")
    def action_apply(self) -> None:
        """Dismiss with the choice."""
        self.dismiss(self.choice())

    @on(Button.Pressed, "#columns-defaults")
    def action_defaults(self) -> None:
        """Check each column's default (applied with ctrl+s)."""
        widget = self.query_one("#columns-list", SelectionList)
        widget.deselect_all()
        for key, shown in default_choice().items():
            if shown:
                widget.select(key)

    @on(Button.Pressed, "#columns-cancel")
    def action_cancel(self) -> None:
        """Dismiss without a change."""
        self.dismiss(None)
