"""Choosing the results table's columns: the dialog, the table and the config (a part of the App)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from textual.app import App

from tui.app.table_columns import encode_choice

if TYPE_CHECKING:
    from tui.app.controller import LabController
    from tui.app.main_screen import MainScreen

__all__ = ["ColumnActions"]


class ColumnActions:
    """``c`` (and the palette's "Columns"): show or hide the table's columns, remembered in the config."""

    def __init__(self, app: App[Any], lab: LabController, screen: Callable[[], MainScreen]) -> None:
        self.app, self.lab, self.screen = app, lab, screen

    def choose(self) -> None:
        """Open the column chooser for the table's columns now."""
        from tui.app.components.columns_dialog import ColumnsScreen

        if isinstance(self.app.screen, ColumnsScreen):
            return
        self.app.push_screen(ColumnsScreen(self.screen().table.column_choice), callback=self._chosen)

    def _chosen(self, choice: dict[str, bool] | None) -> None:
        if choice is None:
            return
        table = self.screen().table
        table.choose_columns(choice)
        self.lab.config.columns = encode_choice(table.column_choice)
        self.lab.save_config()  # a choice made in a dialog is kept at once, not only at a clean quit
