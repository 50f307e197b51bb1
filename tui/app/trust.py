"""No hidden state: what the app shows and asks before it runs options that did not come from the user now.

In the app, ``python`` and inductor options have no picker field: they come from the saved config or a
history row, or (``python`` alone) from the sweep dialog's A/B field, where the user types them now and
nothing is asked of them (:meth:`~tui.app.queueing.QueueActions.sweep`). They start programs (an
interpreter; a compiler named by ``cpp.cxx`` and the flags it gets), so before the first run
that uses them the app shows their exact values and asks (:class:`TrustActions`, a part of
the app). A yes holds for those exact values until the app quits; a no runs nothing. Re-running a row
that was not run in this session (a history row) always shows its full options first.

The other options without a picker field (``seed``, ``target_ci``, ``profile``...) are shown
under the picker when they differ from their defaults (:func:`tui.app.components.option_text.also_text`), and
every option is in the Options section of a row's details.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from collections.abc import Awaitable, Callable

from textual.app import App

from tui.app.components.option_text import options_table
from tui.engine.options import RunOptions
from tui.typed import printable

if TYPE_CHECKING:
    from tui.app.controller import LabController, Setting
    from tui.app.main_screen import MainScreen
    from tui.engine.store.results import RunRecord

__all__ = ["TrustActions"]


def _settings_lines(pending: list[Setting]) -> str:
    return "\n".join(f"  {name} = {printable(value)}" for name, value in pending)


class TrustActions:
    """Asking before options from a file run, then queueing them (locally, on a pool of GPUs, on a cluster)."""

    def __init__(self, app: App[Any], lab: LabController, screen: Callable[[], MainScreen]) -> None:
        self.app, self.lab, self.screen = app, lab, screen

    def queue_confirmed(
        self,
        options_list: list[RunOptions],
        origin: str,
        *,
        source: str,
        show: RunOptions | None = None,
        then: Callable[[list[RunRecord]], None] | None = None,
        repeats: int | str = 1,
        pool: tuple[str, ...] = (),
    ) -> None:
        """Queue ``options_list`` (each in ``repeats`` processes) now, or after a yes when it needs one.

        It needs one when it holds a program setting (:meth:`~tui.app.controller.LabController.unconfirmed`)
        that was not confirmed in this session, or when ``show`` is given (a re-run: its full options are
        shown). ``source`` says where the options came from (``the saved config /path``). ``then(records)``
        runs after queueing. ``pool``: the GPUs the runs are dealt to (``cuda:all``; :meth:`enqueue`).
        """
        from tui.app.components.dialogs import ConfirmScreen

        if isinstance(self.app.screen, ConfirmScreen):
            return  # one question at a time: a second key press does not stack another
        pending = self.lab.unconfirmed(options_list)
        if not pending and show is None:
            self._queue_now(options_list, origin, then, repeats, pool)
            return
        question = self._trust_question(pending, source, rerun=show is not None)

        def answered(yes: bool | None) -> None:
            if not yes:
                self.app.notify("Nothing was queued." + (" The settings that start a program stay unconfirmed."
                                                          if pending else ""), title="Not run", markup=False)
                return
            self.lab.confirmed_code.update(pending)
            self._queue_now(options_list, origin, then, repeats, pool)

        details = options_table(show) if show is not None else ""
        yes = "Re-run" if show is not None else "Run"
        self.app.push_screen(ConfirmScreen(question, yes=yes, no="Don't run", details=details), callback=answered)

    def _queue_now(self, options_list: list[RunOptions], origin: str,
                   then: Callable[[list[RunRecord]], None] | None, repeats: int | str = 1,
                   pool: tuple[str, ...] = ()) -> None:
        lab = self.lab
        if lab.cluster is not None:  # every run goes to the Ray cluster (compile-lab --cluster)
            self.app.run_worker(self._queue_later(lab.enqueue_on_cluster(options_list, origin, repeats), then),
                                group="queue-pool", exit_on_error=False,
                                description="connect to the cluster, then queue")
            return
        if pool:  # each GPU's cores are asked of NVML first, off the UI thread
            self.app.run_worker(self._queue_later(lab.enqueue_on_pool(options_list, origin, repeats, pool), then),
                                group="queue-pool", exit_on_error=False, description="pin the pool's lanes, then queue")
            return
        self._queued(lab.enqueue(options_list, origin=origin, repeats=repeats), then)

    async def _queue_later(self, queueing: Awaitable[list[RunRecord]],
                           then: Callable[[list[RunRecord]], None] | None) -> None:
        records = await queueing
        if records:  # none: the cluster refused (said in a notice) or the app is closing
            self._queued(records, then)

    def _queued(self, records: list[RunRecord], then: Callable[[list[RunRecord]], None] | None) -> None:
        if records:  # queued by a key press (run, sweep, re-run): the table follows the runs again
            self.screen().follow_runs(records)
        if then is not None:
            then(records)

    def _trust_question(self, pending: list[Setting], source: str, *, rerun: bool) -> str:
        if rerun:
            head = f"Re-run with these options? They come from {source}."
            if not pending:
                return head
            return (f"{head}\n\nThese settings start programs:\n{_settings_lines(pending)}\n"
                    "A yes holds for these values until compile-lab quits.")  # fmt: skip
        return (f"These settings come from {source}, not from you in this session, and they start "
                f"programs:\n{_settings_lines(pending)}\n"
                "Run with them? A yes holds for these values until compile-lab quits. To run without "
                "them, quit and remove them from that file.")  # fmt: skip
