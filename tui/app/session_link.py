"""The app's side of its run session: the listener that turns the session's calls into the app's messages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tui.app.messages import RunFinished, RunStarted

if TYPE_CHECKING:
    from tui.app.app import CompileLabApp
    from tui.engine.protocol import Event
    from tui.engine.results import RunRecord

__all__ = ["SessionEvents"]


class SessionEvents:
    """The session's listener: turns its calls into the app's messages (all on the app's loop)."""

    def __init__(self, app: CompileLabApp) -> None:
        self.app = app

    def run_started(self, record: RunRecord) -> None:
        # Here, not in the message's handler: a run that fails at once can be saved (run_saved)
        # before RunStarted is handled, and its row would then go back to "computing".
        self.app._finalized.discard(record.run_id)
        # Before the run's task starts its worker: a GPU lane starts a spare only while its pool has runs waiting.
        self.app.lanes.keep_spares(self.app.session.queue)
        self.app.post_message(RunStarted(record))

    def run_event(self, record: RunRecord, event: Event) -> None:
        self.app.main_screen.run_event(record, event)

    def run_finished(self, record: RunRecord) -> None:
        self.app.post_message(RunFinished(record))

    def run_saved(self, record: RunRecord, problem: str | None) -> None:
        self.app._run_saved(record, problem)

    def data_pruned(self, result: Any) -> None:
        from tui.engine.artifacts import format_bytes

        for note in result.notes:
            self.app.notify(note, title="Data dir", severity="warning", markup=False)
        if not (result.runs or result.errors):
            return
        left = f" {len(result.errors)} file(s) were left: {result.errors[0]}" if result.errors else ""
        self.app.notify(f"The data dir's size cap deleted the files of {result.runs} older run(s) "
                        f"({format_bytes(result.bytes_freed)}); their rows stay.{left}", title="Data dir",
                        severity="warning" if left else "information", markup=False)

    def runs_queued(self, records: list[RunRecord]) -> None:
        # --repeat auto's next round: more processes of groups that have their rows already.
        self.app._known(records)
        self.app.main_screen.mark_dirty(None)
