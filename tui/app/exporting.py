"""Export from the app: which rows, where to, and the thread that writes the files.

``e`` writes every ended run shown in the table (display order) to the default exports
directory; ``E`` asks for a directory or a ``.csv`` path first. The three files (CSV, raw CSV,
JSON) are written off the UI thread; the result is one notification and a
:class:`~tui.app.messages.RunsExported` message. :class:`ExportActions` is mixed into
:class:`~tui.app.app.CompileLabApp`, whose ``records``, ``table`` and ``computing`` it reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work

from tui.app.format import TERMINAL_STATUSES
from tui.app.messages import RunsExported

if TYPE_CHECKING:
    from tui.app.app import CompileLabApp
    from tui.engine.results import RunRecord

__all__ = ["ExportActions", "export_paths"]


def export_paths(target: str | None, defaults: Any) -> dict[str, Path]:
    """The three export files: defaults, in a typed directory, or next to a typed ``.csv`` path.

    Every one is checked before anything is written (ExportTargetError: a link, a device, a pipe,
    compile-lab's own data...), so an export is written whole or not at all; a typed directory
    inside compile-lab's data is refused before it is made.
    """
    from tui.engine.export import ExportTargetError, check_target, data_file_role

    base = defaults()
    if not target:
        destinations = base
    elif Path(target).expanduser().suffix.lower() == ".csv":
        path = Path(target).expanduser()
        stem = path.with_suffix("")
        destinations = {"csv": path, "raw_csv": stem.with_name(stem.name + "-raw.csv"), "json": stem.with_suffix(".json")}
    else:
        path = Path(target).expanduser()
        role = data_file_role(path)
        if role is not None:
            raise ExportTargetError(path, role)
        path.mkdir(parents=True, exist_ok=True)
        destinations = {key: path / value.name for key, value in base.items()}
    for destination in destinations.values():
        check_target(destination)
    return destinations


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

    def _export(self: CompileLabApp, target: str | None) -> None:
        records, skipped = self.exportable_records()
        if not records:
            self.notify("Nothing to export: no run has ended yet.", title="Export", severity="warning")
            return
        if not any(record.status in ("done", "failed") for record in records):
            # The command line's rule too: cancelled runs alone never replace an existing export.
            self.notify("Nothing to export: no run has finished (cancelled runs alone are not exported).",
                        title="Export", severity="warning")
            return
        self._export_worker(records, target, skipped)

    @work(thread=True, group="export", exclusive=True, exit_on_error=False, description="export")
    def _export_worker(self: CompileLabApp, records: list[RunRecord], target: str | None, skipped: int) -> None:
        from tui.engine.export import ExportError, default_export_paths, write_csv, write_json, write_raw_csv

        try:
            destinations = export_paths(target, default_export_paths)
            write_csv(records, destinations["csv"])
            write_raw_csv(records, destinations["raw_csv"])
            write_json(records, destinations["json"])
        except (ExportError, OSError, ValueError) as exc:
            message = " ".join(str(exc).split()) or type(exc).__name__
            self.call_from_thread(self.notify, message, title="Export failed", severity="error", markup=False)
            return
        paths_written = [destinations["csv"], destinations["raw_csv"], destinations["json"]]
        self.call_from_thread(self.post_message, RunsExported(paths_written, len(records)))
        note = f" ({skipped} unfinished row(s) skipped)" if skipped else ""
        self.call_from_thread(
            self.notify,
            f"{len(records)} run(s) -> {destinations['csv']} (+ -raw.csv, .json){note}",
            title="Exported",
            markup=False,
            timeout=10,
        )
