"""The app's keys, as one table: the footer shows the ones with ``show`` in this order, the help and the
palette read them from the app's bindings."""

from __future__ import annotations

from textual.binding import Binding, BindingType

__all__ = ["APP_KEYS", "off_footer"]

APP_KEYS: list[BindingType] = [
    Binding("r", "run", "Run", id="run", tooltip="Run the picker's configuration"),
    Binding("ctrl+r", "run", "Run (in a text field)", id="run_ctrl", show=False),
    Binding("w", "sweep", "Sweep", id="sweep", tooltip="Queue modes x fullgraph x dynamic"),
    Binding("u", "tune", "Tune", id="tune", tooltip="Find the fastest torch.compile configuration"),
    Binding("x", "cancel_current", "Cancel", id="cancel_current"),
    Binding("X", "cancel_all", "Cancel all", id="cancel_all", show=False),
    # the footer shows keys in this order and drops the last ones first at 80 columns
    Binding("f1,question_mark", "help", "Help", id="help"),
    Binding("q", "quit", "Quit", id="quit"),
    Binding("a", "rerun", "Re-run", id="rerun", show=False, tooltip="Queue the selected row's options again"),
    Binding("e", "export", "Export", id="export"),
    Binding("E", "export_to", "Export to...", id="export_to", show=False),
    Binding("h", "toggle_history", "History", id="toggle_history"),
    Binding("s", "sort", "Sort", id="sort", show=False),  # the footer fits 80 columns whole; help lists it
    Binding("S", "sort_reverse", "Reverse sort", id="sort_reverse", show=False),
    Binding("c", "choose_columns", "Columns", id="choose_columns", show=False,
            tooltip="Show or hide the results table's columns"),
    Binding("m", "mark_baseline", "Baseline", id="mark_baseline", show=False,
            tooltip="Mark the selected row as the baseline (again: clear it)"),
    Binding("M", "mark_session_baseline", "Session as baseline", id="mark_session_baseline", show=False),
    Binding("o", "focus_picker", "Options", id="focus_picker", show=False),
    Binding("b", "toggle_sidebar", "Sidebar", id="toggle_sidebar", show=False,
            tooltip="Hide or show the run options column"),
    Binding("z", "zoom", "Zoom", id="zoom", show=False, tooltip="Maximize the focused pane, or restore it"),
    Binding("escape", "focus_table", "To the table", id="focus_table", show=False),
    Binding("t", "cycle_trace", "Trace next runs", id="cycle_trace", show=False,
            tooltip="Cycle: no traces, the Chrome trace of the profile pass, and TORCH_TRACE too"),
    Binding("U", "show_tune", "Show tune", id="show_tune", show=False),
]


def off_footer(*actions: str) -> list[BindingType]:
    """The app's keys of ``actions``, for a screen's BINDINGS: they work there (as ``app.`` actions), off its
    footer, which with the screen's own keys would overflow 80 columns (its last key cut to a stray letter)."""
    return [Binding(b.key, f"app.{b.action}", b.description, show=False)
            for b in APP_KEYS if isinstance(b, Binding) and b.action in actions]
