"""What the app lists for the user: the command palette's entries and the help screen's keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from textual.app import SystemCommand
from textual.binding import Binding

if TYPE_CHECKING:
    from tui.app.app import CompileLabApp

__all__ = ["help_keys", "lab_commands"]

EXTRA_KEYS = [
    ("enter", "Details of the selected row"),
    ("tab / shift+tab", "Next / previous field or pane"),
    ("ctrl+p", "Command palette (every action)"),
    ("ctrl+q", "Quit"),
]
"""Keys the help lists that are not the app's own bindings."""


HELP_DESCRIPTIONS = {
    "cancel_current": "Cancel: the selected row's run if it is running, else every running run (several at "
                      "once with cuda:all); the queue goes on",
    "cancel_all": "Cancel all: every running run, and the queue dropped",
}
"""What the help says for bindings whose footer word is too short to explain them (by binding id)."""


def help_keys(app: CompileLabApp) -> list[tuple[str, str]]:
    """(key, description) of every binding of the app, then ``EXTRA_KEYS``, for the help screen."""
    keys = []
    for binding in app.BINDINGS:
        if isinstance(binding, Binding):
            shown = ", ".join(app.get_key_display(Binding(k.strip(), "")) for k in binding.key.split(","))
            keys.append((shown, HELP_DESCRIPTIONS.get(binding.id or "", binding.description)))
    return keys + EXTRA_KEYS


def lab_commands(app: CompileLabApp) -> Iterator[SystemCommand]:
    """Every compile-lab action as a command palette entry (after Textual's own)."""
    yield SystemCommand("Run", "Run the picker's configuration (r)", app.action_run)
    yield SystemCommand("Sweep", "Queue modes x fullgraph x dynamic combinations (w)", app.action_sweep)
    yield SystemCommand("Cancel current run", "Stop the selected row's run if it runs, else every running one; "
                        "the queue goes on (x)", app.action_cancel_current)
    yield SystemCommand("Cancel all", "Stop every running benchmark and clear the queue (X)", app.action_cancel_all)
    yield SystemCommand("Serial / parallel", "One run at a time even over several GPUs (the CLI's --serial), or "
                        "one per GPU at once", app.action_toggle_serial)
    yield SystemCommand("Re-run selected", "Queue the selected row's options again (a)", app.action_rerun)
    yield SystemCommand("Details", "Every statistic of the selected row (enter)", app.action_details)
    yield SystemCommand("Export", "All ended rows to CSV, raw CSV and JSON (e)", app.action_export)
    yield SystemCommand("Export to...", "Export to a directory you type (E)", app.action_export_to)
    yield SystemCommand("Toggle history", "Show or hide previous sessions' runs (h)", app.action_toggle_history)
    yield SystemCommand("Sort by next column", "Cycle the sort column (s)", app.action_sort)
    yield SystemCommand("Reverse sort", "Flip the sort direction (S)", app.action_sort_reverse)
    yield SystemCommand("Columns", "Show or hide the results table's columns (c)", app.action_choose_columns)
    yield SystemCommand("Mark baseline", "The selected row becomes the baseline; a vs base column compares (m)",
                        app.action_mark_baseline)
    yield SystemCommand("Mark session as baseline", "Every row of the selected row's session is the baseline (M)",
                        app.action_mark_session_baseline)
    yield SystemCommand("Clear baseline", "No baseline: the vs base column goes", app.action_clear_baseline)
    yield SystemCommand("Compare with baseline…", "compile-lab compare's table of the rows against the baseline",
                        app.action_compare_baseline)
    yield SystemCommand("Toggle sidebar", "Hide or show the run options column (b)", app.action_toggle_sidebar)
    yield SystemCommand("Zoom", "Maximize the focused pane or restore it (z)", app.action_zoom)
    yield SystemCommand("Options", "Focus the run options picker (o)", app.action_focus_picker)
    yield SystemCommand("Trace next runs", "Cycle: no traces, the profile pass as a Chrome trace, TORCH_TRACE too (t)",
                        app.action_cycle_trace)
    yield SystemCommand("tlparse report", "Make the selected run's tlparse report from its TORCH_TRACE logs",
                        app.action_tlparse)
    yield SystemCommand("Help", "Keys and what compile-lab measures (F1, ?)", app.action_help)
