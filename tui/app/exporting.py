"""Export from the app: which rows, where to, and the thread that writes the files.

``e`` writes every ended run shown in the table (display order) to the default exports
directory; ``E`` asks for a directory or a ``.csv`` path first, and when that directory does not
exist, whether to make it (:mod:`tui.engine.store.export_dir` makes only what was typed, never through
a link). The three files (CSV, raw CSV, JSON) are written off the UI thread; the result is one
notice (:func:`~tui.app.export_target.exported_message`: the runs written and the summary CSV's rows, the
directory on a line of its own, its folders folded to fit, then the files' names) and a
:class:`~tui.app.messages.RunsExported` message. :class:`ExportActions` is a part of the app; what is
exported and the writing are the controller's (:meth:`~tui.app.controller.LabController.exportable_records`,
:meth:`~tui.app.controller.LabController.write_export`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from textual.app import App

from tui.app.export_target import (
    EXPORTED_TITLE, directory_to_make, export_directory, export_paths, exported_message, file_to_replace,
    notice_text_width,
)
from tui.app.messages import RunsExported
from tui.engine.store.export import anything_to_export

if TYPE_CHECKING:
    from tui.app.controller import LabController
    from tui.app.main_screen import MainScreen
    from tui.engine.store.results import RunRecord

__all__ = ["ExportActions", "export_paths", "export_directory", "directory_to_make", "exported_message"]


class ExportActions:
    """The app's export actions: ``e``, ``E`` and the questions before writing."""

    def __init__(self, app: App[Any], lab: LabController, screen: Callable[[], MainScreen]) -> None:
        self.app, self.lab, self.screen = app, lab, screen

    def export_to(self) -> None:
        """Ask for a directory or a ``.csv`` path, then export there."""
        from tui import paths
        from tui.app.components.dialogs import ExportScreen

        self.app.push_screen(ExportScreen(str(paths.exports_dir())), callback=self._export_chosen)

    def _export_chosen(self, target: str | None) -> None:
        if target is None:
            return
        self.export(target or None)

    def _ask_to_make(self, target: str | None) -> bool:
        from tui.app.components.dialogs import ConfirmScreen
        from tui.engine.store.export import ExportError

        try:
            missing = directory_to_make(target)
        except ExportError as exc:
            self.app.notify(" ".join(str(exc).split()), title="Export failed", severity="error", markup=False)
            return True
        if missing is None:
            return False

        def answered(yes: bool | None) -> None:
            if yes:
                self.export(target, make_directory=True)

        typed = export_directory(target) or ""
        where = typed if str(missing) == typed else f"{typed} ({missing})"
        self.app.push_screen(ConfirmScreen(f"{where} does not exist. Make it and export there?", yes="Make it",
                                           no="Cancel"), callback=answered)
        return True

    def exportable_records(self) -> tuple[list[RunRecord], int]:
        """The ended runs of the table's rows in display order, and how many are skipped (not ended yet)."""
        return self.lab.exportable_records(self.screen().table.run_ids)

    def _ask_to_replace(self, target: str | None, make_directory: bool) -> bool:
        """Ask before a typed ``.csv`` replaces a file that is not a compile-lab export; True when asked."""
        from tui.app.components.dialogs import ConfirmScreen

        path = file_to_replace(target)
        if path is None:
            return False

        def answered(yes: bool | None) -> None:
            if yes:
                self.export(target, make_directory=make_directory, replace=True)

        self.app.push_screen(ConfirmScreen(f"{path} exists and is not a compile-lab export. Replace it with the "
                                           "export?", yes="Replace it", no="Cancel"), callback=answered)
        return True

    def export(self, target: str | None, *, make_directory: bool = False, replace: bool = False) -> None:
        """Export every ended row to ``target`` (None: the default exports directory), off the UI thread; a missing
        typed directory is made (``make_directory``) and a typed file of the user's replaced (``replace``) only
        once the user said yes."""
        records, skipped = self.exportable_records()
        if not records:
            self.app.notify("Nothing to export: no run has ended yet.", title="Export", severity="warning")
            return
        if not anything_to_export(records):
            # The command line's rule too: cancelled runs alone never replace an existing export.
            self.app.notify("Nothing to export: no run has finished (cancelled runs alone are not exported).",
                            title="Export", severity="warning")
            return
        if not make_directory and self._ask_to_make(target):
            return
        if not replace and self._ask_to_replace(target, make_directory):
            return
        self.app.run_worker(lambda: self._write(records, target, skipped, make_directory), thread=True,
                            group="export", exclusive=True, exit_on_error=False, description="export")

    def _write(self, records: list[RunRecord], target: str | None, skipped: int, make_directory: bool) -> None:
        from tui.engine.store.export import ExportError

        app = self.app
        try:
            written = self.lab.write_export(records, target, make_directory=make_directory)
        except (ExportError, OSError, ValueError) as exc:
            message = " ".join(str(exc).split()) or type(exc).__name__
            app.call_from_thread(app.notify, message, title="Export failed", severity="error", markup=False)
            return
        from tui.engine.store.export import samples_left_out
        from tui.engine.store.repeats import group_records

        csv_rows = len(group_records(records))  # what the summary CSV holds: a configuration's processes are one row
        app.call_from_thread(app.post_message, RunsExported(written, len(records)))
        app.call_from_thread(self._notify_exported, len(records), csv_rows, [str(p) for p in written], skipped)
        left_out = samples_left_out(records)  # loaded ones kept from the writers; unreadable: tried again
        if left_out:
            more = f" (+{len(left_out) - 1} more)" if len(left_out) > 1 else ""
            app.call_from_thread(app.notify, left_out[0] + more, title="Export", severity="warning", markup=False,
                                 timeout=10)

    def _notify_exported(self, runs: int, csv_rows: int, written: list[str], skipped: int) -> None:
        width = notice_text_width(*self.app.size)
        self.app.notify(exported_message(runs, csv_rows, written, skipped, width), title=EXPORTED_TITLE,
                        markup=False, timeout=10)
