"""Export from the app: which rows, where to, and the thread that writes the files.

``e`` writes every ended run shown in the table (display order) to the default exports
directory; ``E`` asks for a directory or a ``.csv`` path first, and when that directory does not
exist, whether to make it (:mod:`tui.engine.export_dir` makes only what was typed, never through
a link). The three files (CSV, raw CSV, JSON) are written off the UI thread; the result is one
notification, its path on a line of its own and shortened from the left to fit the toast, and a
:class:`~tui.app.messages.RunsExported` message. :class:`ExportActions` is mixed into
:class:`~tui.app.app.CompileLabApp`, whose ``records``, ``table`` and ``computing`` it reads.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work

from tui.present.format import TERMINAL_STATUSES
from tui.app.messages import RunsExported

if TYPE_CHECKING:
    from tui.app.app import CompileLabApp
    from tui.engine.results import RunRecord

__all__ = ["ExportActions", "export_paths", "export_directory", "directory_to_make", "fit_path", "exported_message"]

#: Columns of a toast's text: Textual's Toast is 60 wide, at most half of its rack (the screen
#: less the rack's scroll bar), less its padding (1 each side) and its coloured left border.
TOAST_WIDTH, TOAST_MAX_SHARE, TOAST_RACK_GUTTER, TOAST_FRAME = 60, 0.5, 2, 3


def _is_csv(target: str) -> bool:
    return Path(target).expanduser().suffix.lower() == ".csv"


def export_directory(target: str | None) -> str | None:
    """The directory a typed target names, as typed: itself, or a ``.csv`` path's folder (None: the default)."""
    if not target:
        return None
    if _is_csv(target):
        return os.path.dirname(target) or None  # a bare file name: the current directory
    return target


def directory_to_make(target: str | None) -> Path | None:
    """The typed directory when it does not exist yet (the app asks before making it), else None.

    ExportTargetError first for a directory inside compile-lab's own data, which is never offered.
    """
    from tui.engine.export import ExportTargetError, data_file_role
    from tui.engine.export_dir import missing_directory

    directory = export_directory(target)
    if directory is None:
        return None
    role = data_file_role(Path(directory).expanduser())
    if role is not None:
        raise ExportTargetError(Path(directory).expanduser(), role)
    return missing_directory(directory)


def export_paths(target: str | None, defaults: Any, *, make_directory: bool = False) -> dict[str, Path]:
    """The three export files: defaults, in a typed directory, or next to a typed ``.csv`` path.

    Every one is checked before anything is written (ExportTargetError: a link, a device, a pipe,
    compile-lab's own data, a directory this user cannot write: the command line's rule,
    :func:`~tui.engine.export.check_output`), so an export is written whole or not at all; a typed directory
    inside compile-lab's data is refused before it is made. A missing typed directory is made only
    with ``make_directory`` (the user said yes), else ExportError names it.
    """
    from tui.engine.export import ExportError, check_output
    from tui.engine.export_dir import create_directory

    base = defaults()
    missing = directory_to_make(target)
    if missing is not None:
        if not make_directory:
            raise ExportError(f"{export_directory(target)}: no such directory (allowed: an existing directory; "
                              "E offers to make it)")
        create_directory(export_directory(target) or "")
    if not target:
        destinations = base
    elif _is_csv(target):
        path = Path(target).expanduser()
        stem = path.with_suffix("")
        destinations = {"csv": path, "raw_csv": stem.with_name(stem.name + "-raw.csv"), "json": stem.with_suffix(".json")}
    else:
        path = Path(target).expanduser()
        destinations = {key: path / value.name for key, value in base.items()}
    for destination in destinations.values():
        check_output(destination)
    return destinations


def fit_path(path: str, width: int) -> str:
    """``path`` whole when it fits in ``width`` columns, else its end after a ``…`` (the file name is what matters)."""
    if len(path) <= width:
        return path
    return "…" + path[len(path) - max(1, width - 1):]


def exported_message(count: int, csv_path: str, skipped: int, screen_width: int) -> str:
    """The export toast's text: what was written, then the CSV's path on a line of its own that fits the toast."""
    width = min(TOAST_WIDTH, int((screen_width - TOAST_RACK_GUTTER) * TOAST_MAX_SHARE)) - TOAST_FRAME
    note = f" ({skipped} unfinished row(s) skipped)" if skipped else ""
    return f"{count} run(s) -> CSV, -raw.csv and .json{note}:\n{fit_path(csv_path, width)}"


class ExportActions:
    """The app's export actions (a mixin of :class:`~tui.app.app.CompileLabApp`)."""

    def action_export(self: CompileLabApp) -> None:
        """Export every ended run in the table to the default exports directory."""
        self._export(None)

    def action_export_to(self: CompileLabApp) -> None:
        """Ask for a directory (or a .csv path), then export there."""
        from tui import paths

        from tui.app.components.dialogs import ExportScreen

        self.push_screen(ExportScreen(str(paths.exports_dir())), callback=self._export_chosen)

    def _export_chosen(self: CompileLabApp, target: str | None) -> None:
        if target is None:
            return
        self._export(target or None)

    def _ask_to_make(self: CompileLabApp, target: str | None) -> bool:
        """True when ``target``'s directory is missing: the question is asked, and a yes exports there."""
        from tui.app.components.dialogs import ConfirmScreen
        from tui.engine.export import ExportError

        try:
            missing = directory_to_make(target)
        except ExportError as exc:
            self.notify(" ".join(str(exc).split()), title="Export failed", severity="error", markup=False)
            return True
        if missing is None:
            return False

        def answered(yes: bool | None) -> None:
            if yes:
                self._export(target, make_directory=True)

        typed = export_directory(target) or ""
        where = typed if str(missing) == typed else f"{typed} ({missing})"
        self.push_screen(ConfirmScreen(f"{where} does not exist. Make it and export there?", yes="Make it", no="Cancel"),
                         callback=answered)
        return True

    def exportable_records(self: CompileLabApp) -> tuple[list[RunRecord], int]:
        """(ended runs shown in the table in display order, how many unfinished runs were skipped).

        A group's row stands for its processes: each one that ended is exported (the CSV makes
        them one row again).
        """
        records, skipped = [], 0
        for run_id in self.table.run_ids:
            for record in self.group_members(run_id):
                if record.status in TERMINAL_STATUSES and not self.computing(record):
                    records.append(record)
                else:
                    skipped += 1
        return records, skipped

    def _export(self: CompileLabApp, target: str | None, *, make_directory: bool = False) -> None:
        records, skipped = self.exportable_records()
        if not records:
            self.notify("Nothing to export: no run has ended yet.", title="Export", severity="warning")
            return
        if not any(record.status in ("done", "failed") for record in records):
            # The command line's rule too: cancelled runs alone never replace an existing export.
            self.notify("Nothing to export: no run has finished (cancelled runs alone are not exported).",
                        title="Export", severity="warning")
            return
        if not make_directory and self._ask_to_make(target):
            return
        self._export_worker(records, target, skipped, make_directory)

    @work(thread=True, group="export", exclusive=True, exit_on_error=False, description="export")
    def _export_worker(self: CompileLabApp, records: list[RunRecord], target: str | None, skipped: int,
                       make_directory: bool = False) -> None:
        from tui.engine.export import ExportError, default_export_paths, write_csv, write_json, write_raw_csv

        try:
            destinations = export_paths(target, default_export_paths, make_directory=make_directory)
            write_csv(records, destinations["csv"])
            write_raw_csv(records, destinations["raw_csv"])
            write_json(records, destinations["json"])
        except (ExportError, OSError, ValueError) as exc:
            message = " ".join(str(exc).split()) or type(exc).__name__
            self.call_from_thread(self.notify, message, title="Export failed", severity="error", markup=False)
            return
        paths_written = [destinations["csv"], destinations["raw_csv"], destinations["json"]]
        self.call_from_thread(self.post_message, RunsExported(paths_written, len(records)))
        self.call_from_thread(self._notify_exported, len(records), str(destinations["csv"]), skipped)

    def _notify_exported(self: CompileLabApp, count: int, csv_path: str, skipped: int) -> None:
        """The toast, sized for the screen as it is now (on the UI thread)."""
        self.notify(exported_message(count, csv_path, skipped, self.size.width), title="Exported", markup=False,
                    timeout=10)
