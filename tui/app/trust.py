"""No hidden state: what the app shows and asks before it runs options that did not come from the user now.

In the app, ``python`` and inductor options have no picker field: they can only come from the
saved config or a history row, never from the user in this session. They start programs (an
interpreter; a compiler named by ``cpp.cxx`` and the flags it gets), so before the first run
that uses them the app shows their exact values and asks (:class:`TrustActions`, a mixin of the
app). A yes holds for those exact values until the app quits; a no runs nothing. Re-running a row
that was not run in this session (a history row) always shows its full options first.

The other options without a picker field (``seed``, ``target_ci``, ``profile``...) are shown
under the picker when they differ from their defaults (:func:`also_text`), and every option is
in the Options section of a row's details.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Callable, Iterable

from rich.text import Text
from textual.widgets import Static

from tui.engine.options import RunOptions
from tui.engine.stored_options import code_settings, hidden_settings
from tui.typed import printable

if TYPE_CHECKING:
    from tui.app.app import CompileLabApp
    from tui.engine.results import RunRecord

__all__ = ["TrustActions", "also_line", "also_text", "options_table", "unconfirmed"]

Setting = tuple[str, str]


def unconfirmed(options_list: Iterable[RunOptions], confirmed: set[Setting]) -> list[Setting]:
    """The program settings of ``options_list`` not yet confirmed in this session, each once, in order."""
    pending: list[Setting] = []
    for options in options_list:
        for setting in code_settings(options):
            if setting not in confirmed and setting not in pending:
                pending.append(setting)
    return pending


def also_text(options: RunOptions) -> Text:
    """``also: block_size=20 timeout_s=30.0 python=/x/y`` (empty when every hidden option is its default).

    Settings that start a program are bold.
    """
    pairs = hidden_settings(options)
    if not pairs:
        return Text()
    code = {name for name, _ in code_settings(options)}
    text = Text("also:", style="dim")
    for name, value in pairs:
        text.append(" ")
        text.append(f"{name}={printable(value)}", style="bold" if name in code else "")
    return text


def also_line(options: RunOptions) -> Static:
    """The picker's ``#picker-also`` line for the options it starts from (not displayed when empty)."""
    text = also_text(options)
    line = Static(text, id="picker-also", markup=False)
    line.display = bool(text.plain)
    return line


def options_table(options: RunOptions) -> str:
    """Every option of a run, one ``name  value`` line each; settings that start a program marked."""
    code = dict(code_settings(options))
    width = max(len(f.name) for f in dataclasses.fields(options))
    lines = []
    for spec in dataclasses.fields(options):
        value = getattr(options, spec.name)
        if spec.name == "inductor_options" and value:
            lines += [f"{name:<{width}}  {printable(shown)}   <- starts a program" for name, shown in code.items()
                      if name != "python"]  # fmt: skip
            continue
        mark = "   <- starts a program" if spec.name in code else ""
        lines.append(f"{spec.name:<{width}}  {printable(_shown(spec.name, value))}{mark}")
    return "\n".join(lines)


def _shown(name: str, value: object) -> str:
    """An option's value as the table shows it: text as it is, ``auto``/``unset`` for None, else JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return "auto" if name == "dynamic" else "unset"
    return json.dumps(value, sort_keys=True, default=repr)


def _settings_lines(pending: list[Setting]) -> str:
    return "\n".join(f"  {name} = {printable(value)}" for name, value in pending)


class TrustActions:
    """Asking before options from a file run (a mixin of :class:`~tui.app.app.CompileLabApp`)."""

    def queue_confirmed(
        self: CompileLabApp,
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

        It needs one when it holds a program setting (:func:`unconfirmed`) that was not confirmed
        in this session, or when ``show`` is given (a re-run: its full options are shown). ``source``
        says where the options came from (``the saved config /path``). ``then(records)`` runs
        after queueing. ``pool``: the GPUs the runs are dealt to (``cuda:all``; :meth:`enqueue`).
        """
        from tui.app.components.dialogs import ConfirmScreen

        if isinstance(self.screen, ConfirmScreen):
            return  # one question at a time: a second key press does not stack another
        pending = unconfirmed(options_list, self.confirmed_code)
        if not pending and show is None:
            self._queue_now(options_list, origin, then, repeats, pool)
            return
        question = self._trust_question(pending, source, rerun=show is not None)

        def answered(yes: bool | None) -> None:
            if not yes:
                self.notify("Nothing was queued." + (" The settings that start a program stay unconfirmed."
                                                      if pending else ""), title="Not run", markup=False)  # fmt: skip
                return
            self.confirmed_code.update(pending)
            self._queue_now(options_list, origin, then, repeats, pool)

        details = options_table(show) if show is not None else ""
        yes = "Re-run" if show is not None else "Run"
        self.push_screen(ConfirmScreen(question, yes=yes, no="Don't run", details=details), callback=answered)

    def _queue_now(self: CompileLabApp, options_list: list[RunOptions], origin: str,
                   then: Callable[[list[RunRecord]], None] | None, repeats: int | str = 1,
                   pool: tuple[str, ...] = ()) -> None:
        if self.cluster is not None:  # every run goes to the Ray cluster (compile-lab --cluster)
            self.run_worker(self._queue_on_cluster(options_list, origin, then, repeats), group="queue-pool",
                            exit_on_error=False, description="connect to the cluster, then queue")
            return
        if pool:  # each GPU's cores are asked of NVML first, off the UI thread
            self.run_worker(self._queue_on_pool(options_list, origin, then, repeats, pool), group="queue-pool",
                            exit_on_error=False, description="pin the pool's lanes, then queue")
            return
        self._queued(self.enqueue(options_list, origin=origin, repeats=repeats), then)

    async def _queue_on_pool(self: CompileLabApp, options_list: list[RunOptions], origin: str,
                             then: Callable[[list[RunRecord]], None] | None, repeats: int | str,
                             pool: tuple[str, ...]) -> None:
        async with self.lanes.lock:
            await self.lanes.pin(pool)
            self._queued(self.enqueue(options_list, origin=origin, repeats=repeats, pool=pool), then)

    async def _queue_on_cluster(self: CompileLabApp, options_list: list[RunOptions], origin: str,
                                then: Callable[[list[RunRecord]], None] | None, repeats: int | str) -> None:
        from tui.engine.cluster.link import on_cluster
        from tui.engine.cluster import ClusterError

        assert self.cluster is not None
        options_list = [on_cluster(options) for options in options_list]
        async with self.lanes.lock:
            first = self.cluster.runner is None
            try:
                lanes = await self.cluster.lanes(options_list, getattr(self.runner, "worker_argv", None))
            except ClusterError as exc:
                self.notify(str(exc), title="Not run: the cluster", severity="error", markup=False)
                return
            if first:
                self.notify(f"Runs go to the Ray cluster at {self.cluster.address}: {len(lanes)} at once.",
                            title="Cluster", markup=False)
            self._queued(self.enqueue(options_list, origin=origin, repeats=repeats, pool=lanes), then)

    def _queued(self: CompileLabApp, records: list[RunRecord], then: Callable[[list[RunRecord]], None] | None) -> None:
        if records:  # queued by a key press (run, sweep, re-run): the table follows the runs again
            self.main_screen.follow_runs(records)
        if then is not None:
            then(records)

    def _trust_question(self: CompileLabApp, pending: list[Setting], source: str, *, rerun: bool) -> str:
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
