"""Choosing the results table's columns: the dialog, the table and the config (a mixin of the App)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.app.table_columns import encode_choice

if TYPE_CHECKING:
    from tui.app.app import CompileLabApp

__all__ = ["ColumnActions"]


class ColumnActions:
    """``c`` (and the palette's "Columns"): show or hide the table's columns, remembered in the config."""

    def action_choose_columns(self: CompileLabApp) -> None:
        """Open the column chooser for the table's columns now."""
        from tui.app.components.columns_dialog import ColumnsScreen

        if isinstance(self.screen, ColumnsScreen):
            return
        self.push_screen(ColumnsScreen(self.table.column_choice), callback=self._columns_chosen)

    def _columns_chosen(self: CompileLabApp, choice: dict[str, bool] | None) -> None:
        if choice is None:
            return
        self.table.choose_columns(choice)
        self.config.columns = encode_choice(self.table.column_choice)
        self._save_config()  # a choice made in a dialog is kept at once, not only at a clean quit
