"""The Tune action (``u``, the palette's "Tune this configuration"): a search from the picker's configuration.

:class:`TuneActions` is a part of the app. It reads the picker's workload, parameters, device, dtype
and precision (and the rest of its run options; the search sets the backend, mode, fullgraph and
dynamic itself), asks the search's settings in the :class:`~tui.app.components.tune_dialog.TuneDialog`,
and starts the search on the controller (:meth:`~tui.app.controller.LabController.start_tune`), which
owns it. The :class:`~tui.app.components.tune_screen.TuneScreen` shows its leaderboard, then its
answer. While a search runs, ``u`` shows it again (``U`` shows the latest search, ended or not; after a
restart, whose searches are gone with the app, it names the newest stored tune and where its runs are), and
the cancel keys (``x``, ``X``) or the pane's Stop button stop it: its ended runs stay in the table
and the history, and the answer is the best so far, unconfirmed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from textual.app import App

from tui.engine.options import DEFAULT_MODE, OptionsError, RunOptions
from tui.present.format import fmt_when, workload_label, workload_word

if TYPE_CHECKING:
    from tui.app.controller import LabController
    from tui.app.main_screen import MainScreen
    from tui.app.queueing import QueueActions
    from tui.app.tune_run import Board
    from tui.engine.store.results import RunRecord
    from tui.engine.tune.request import TuneRequest

__all__ = ["TuneActions", "tune_base", "stored_tune_note"]

REFUSED = "Tune refused"
NO_SEARCH = "No search in this app yet"


def tune_base(options: RunOptions) -> RunOptions:
    """``options`` as the search's base: the backend, mode, fullgraph and dynamic it searches at their defaults,
    no traces (``compile-lab tune`` takes no flag for them)."""
    return dataclasses.replace(options, backend="inductor", mode=DEFAULT_MODE, fullgraph=False, dynamic=None,
                               trace=False, torch_trace=False)


def stored_tune_note(records: Iterable[RunRecord], history_shown: bool) -> str | None:
    """What ``U`` says when this app ran no search: the newest tune among ``records`` (the history's runs loaded),
    its workload, runs and when it ran, and what shows it (its leaderboard and answer are the search's, not
    stored); None when no run of ``records`` belongs to a tune."""
    tuned = [record for record in records if record.tune_id]
    if not tuned:
        return None
    newest = max(tuned, key=lambda record: record.created)
    runs = [record for record in tuned if record.tune_id == newest.tune_id]
    first = min(runs, key=lambda record: record.created)
    where = "in the table" if history_shown else "in the history (h shows it)"
    return (f"tune {newest.tune_id} ({workload_word(first.options)}, {len(runs)} run(s), {fmt_when(first.created)}) "
            f"is the newest stored: its runs are {where}, its answer is not kept; compile-lab report "
            f"tune:{newest.tune_id} makes its page.")


class TuneActions:
    """The app's Tune action, its stop and its screen (see the module docstring)."""

    def __init__(self, app: App[Any], lab: LabController, screen: Callable[[], MainScreen],
                 queueing: QueueActions) -> None:
        self.app, self.lab, self.screen, self.queueing = app, lab, screen, queueing
        self.last_values: dict[str, str] = {}
        """The dialog's fields as typed for the last search started (the next dialog opens with them)."""

    def quit_question(self) -> str | None:
        """What quitting stops while a search runs: it, and the user's own runs queued or running beside it (None
        without a search)."""
        tune = self.lab.tune
        if tune is None or not tune.running:
            return None
        from tui.engine.status import ACTIVE_STATUSES

        own = [r for r in self.lab.queue if r.run_id not in tune.own]
        own += [r for r in self.lab.records.values() if r.status in ACTIVE_STATUSES and r.run_id not in tune.own]
        beside = f" and {len(own)} run(s) of yours" if own else ""
        return f"A tune is searching{beside}. Stop {'them' if own else 'it'} (ended runs stay in the history) and quit?"

    def tune(self) -> None:
        """Show the running search, or ask the settings of a new one for the picker's configuration."""
        if self.lab.tune is not None and self.lab.tune.running:
            self.show()
            return
        base = self._base()
        if base is None:
            return
        from tui.app.components.tune_dialog import TuneDialog

        what = f"{workload_label(base)} on {base.device}, {base.dtype}, precision {base.precision}"
        dialog = TuneDialog(what, **self.last_values)
        self.app.push_screen(dialog, callback=lambda request: self._chosen(base, request, dialog.chosen))

    def _base(self) -> RunOptions | None:
        """The picker's options as the search's base, validated; None when refused (a notice says why)."""
        picker = self.screen().picker
        try:
            options, pool = self.queueing.split_pool(picker.current_options())
            options = tune_base(options).validated()
            if pool:
                raise OptionsError("device", "the app's Tune runs on one device (allowed: cpu, cuda or cuda:N)")
        except OptionsError as exc:
            picker.mark_invalid(exc)
            self.app.notify(str(exc), title=REFUSED, severity="error", markup=False)
            return None
        picker.clear_invalid()
        problem = self._refusal(options)
        if problem:
            self.app.notify(problem, title=REFUSED, severity="error", markup=False)
            return None
        return options

    def _refusal(self, options: RunOptions) -> str | None:
        """Why the app does not tune ``options`` (settings not confirmed, a cluster), else None."""
        if self.lab.cluster is not None:
            return "The app's Tune runs on this machine, and this app sends every run to the cluster."
        pending = self.lab.unconfirmed([options])
        if pending:
            names = ", ".join(name for name, _ in pending)
            return (f"Settings from the saved config start programs ({names}): run the configuration once with r "
                    "and confirm them, then tune.")
        return None

    def _chosen(self, base: RunOptions, request: TuneRequest | None, typed: dict[str, str]) -> None:
        if request is None:
            return
        if self.lab.start_tune(base, request, on_change=self._changed) is None:
            self.app.notify("A search runs already: u shows it.", title=REFUSED, severity="warning", markup=False)
            return
        self.last_values = typed
        self.screen().make_room_for_results()  # its rows tell candidates apart by their options
        self.show()

    def _changed(self, board: Board) -> None:
        """Each step of the search: the tune screen redraws (when it is on top), and the end is a notice."""
        from tui.app.components.tune_screen import TuneScreen

        if isinstance(self.app.screen, TuneScreen):
            self.app.screen.show(board)
        elif board.done:
            self.app.notify(f"{board.headline}. U shows the answer.", title="Tune ended", markup=False, timeout=10)

    def show(self) -> None:
        """Show the search's screen (the latest search's, ended or not)."""
        from tui.app.components.tune_screen import TuneScreen

        if self.lab.tune is None:
            stored = stored_tune_note(self.lab.records.values(), self.screen().show_history)
            if stored is None:
                self.app.notify("No search yet: u tunes the picker's configuration.", severity="information")
            else:
                self.app.notify(stored, title=NO_SEARCH, severity="information", markup=False, timeout=15)
            return
        if not isinstance(self.app.screen, TuneScreen):
            self.app.push_screen(TuneScreen(self.lab.tune.board, self.lab.tune.running_lines))

    def stop(self) -> bool:
        """Stop the running search (a notice); False when none runs."""
        if not self.lab.stop_tune():
            return False
        self.app.notify("The search stops: its ended runs stay, and the answer is the best so far, unconfirmed.",
                        title="Tune", markup=False)
        return True
