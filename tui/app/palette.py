"""What the app lists for the user: the command palette's entries and the help screen's keys."""

from __future__ import annotations

from typing import Any
from collections.abc import Iterator

from textual.app import App, SystemCommand
from textual.binding import Binding

from tui.app.export_target import export_labels

__all__ = ["help_keys", "lab_commands", "COMMANDS"]

EXTRA_KEYS = [
    ("enter", "Details of the selected row"),
    ("tab / shift+tab", "Next / previous field or pane"),
    ("ctrl+p", "Command palette (every action)"),
    ("ctrl+q", "Quit"),
]
"""Keys the help lists that are not the app's own bindings."""


HELP_DESCRIPTIONS = {
    "cancel_current": "Cancel: a running tune; else the selected row's run if it is running, else every running "
                      "run (several at once with cuda:all); the queue goes on",
    "cancel_all": "Cancel all: every running run, and the queue dropped",
    "tune": "Tune: race torch.compile configurations on the picker's workload, device, dtype and precision, and "
            "confirm the fastest (a leaderboard, then the answer as code; x stops it, y copies the answer)",
    "show_tune": "Show tune: the latest search's leaderboard and answer",
}
"""What the help says for bindings whose footer word is too short to explain them (by binding id)."""


def _own_keys(app: App[Any], screen: object) -> list[Binding]:
    """The bindings of ``screen`` (the details, the tune screen) that are its own: not the app's keys it binds off
    its footer (:func:`tui.app.keys.off_footer`), which do there what they do on the main screen."""
    actions = {f"app.{binding.action}" for binding in app.BINDINGS if isinstance(binding, Binding)}
    return [binding for binding in vars(type(screen)).get("BINDINGS", ())
            if isinstance(binding, Binding) and binding.action not in actions]


def help_keys(app: App[Any], screen: object = None) -> list[tuple[str, str]]:
    """(key, description) of every binding of the app, then ``EXTRA_KEYS``, for the help screen. ``screen``: the
    screen the help opens from: its own keys come first, and the app's keys it takes for itself are left out
    (on the details ``r`` reloads and ``q`` goes back: the help must not say they run and quit). A key of the
    screen's that repeats an earlier one's words is its pair, said by that one's key display (``←→ Tab``)."""
    own = _own_keys(app, screen)
    own = [binding for number, binding in enumerate(own)
           if binding.description not in {earlier.description for earlier in own[:number]}]
    taken = {key.strip() for binding in own for key in binding.key.split(",")}
    keys = []
    for binding in [*own, *app.BINDINGS]:
        if not isinstance(binding, Binding) or (binding not in own and binding.key.split(",")[0].strip() in taken):
            continue
        names = [key.strip() for key in binding.key.split(",") if binding in own or key.strip() not in taken]
        shown = binding.key_display or ", ".join(app.get_key_display(Binding(key, "")) for key in names)
        keys.append((shown, HELP_DESCRIPTIONS.get(binding.id or "", binding.description)))
    return keys + EXTRA_KEYS


COMMANDS = [
    ("Run", "Run the picker's configuration (r)", "run"),
    ("Sweep", "Queue modes x fullgraph x dynamic combinations (w)", "sweep"),
    ("Cancel current run", "Stop the selected row's run if it runs, else every running one; the queue goes on (x)",
     "cancel_current"),
    ("Cancel all", "Stop every running benchmark and clear the queue (X)", "cancel_all"),
    ("Serial / parallel", "One run at a time even over several GPUs (the CLI's --serial), or one per GPU at once",
     "toggle_serial"),
    ("Tune this configuration", "Race torch.compile configurations on the picker's workload, device, dtype and "
     "precision and confirm the fastest (u)", "tune"),
    ("Show tune", "The latest search's leaderboard and answer (U)", "show_tune"),
    ("Re-run selected", "Queue the selected row's options again (a)", "rerun"),
    ("Details", "Every statistic of the selected row (enter)", "details"),
    ("Export", f"All ended rows to {export_labels()} (e)", "export"),
    ("Export to...", "Export to a directory you type (E)", "export_to"),
    ("Toggle history", "Show or hide previous sessions' runs (h)", "toggle_history"),
    ("Sort by next column", "Cycle the sort column (s)", "sort"),
    ("Reverse sort", "Flip the sort direction (S)", "sort_reverse"),
    ("Columns", "Show or hide the results table's columns (c)", "choose_columns"),
    ("Mark baseline", "The selected row becomes the baseline; a vs base column compares (m)", "mark_baseline"),
    ("Mark session as baseline", "Every row of the selected row's session is the baseline (M)",
     "mark_session_baseline"),
    ("Clear baseline", "No baseline: the vs base column goes", "clear_baseline"),
    ("Compare with baseline…", "compile-lab compare's table of the rows against the baseline", "compare_baseline"),
    ("Toggle sidebar", "Hide or show the run options column (b)", "toggle_sidebar"),
    ("Zoom", "Maximize the focused pane or restore it (z)", "zoom"),
    ("Options", "Focus the run options picker (o)", "focus_picker"),
    ("Trace next runs", "Cycle: no traces, the profile pass as a Chrome trace, TORCH_TRACE too (t)", "cycle_trace"),
    ("tlparse report", "Make the selected run's tlparse report from its TORCH_TRACE logs", "tlparse"),
    ("Help", "Keys and what compile-lab measures (F1, ?)", "help"),
]
"""The command palette's compile-lab entries: (title, help, the app's action without ``action_``), in order."""


def lab_commands(app: App[Any]) -> Iterator[SystemCommand]:
    """Every compile-lab action as a command palette entry (after Textual's own)."""
    for title, help_text, action in COMMANDS:
        yield SystemCommand(title, help_text, getattr(app, f"action_{action}"))
