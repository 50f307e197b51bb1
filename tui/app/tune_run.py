"""The app's tune: a :class:`~tui.engine.tune.driver.TuneDriver` over the app's run session (no textual).

:class:`TuneRun` is what the controller holds while a search runs (``LabController.tune``): it asks
the worker's torch which options it has (off the event loop), builds the driver and runs it. Its
runs go through the controller's :class:`~tui.engine.run.session.RunSession` (:class:`_TuneLane`
is the session the driver sees), so each is an ordinary run: a row of the results table, a line
of the history, tagged with the tune's id; the user's own runs may share the queue. Stopping
(:meth:`TuneRun.stop`) cancels only the tune's runs; those that ended stay.

What the leaderboard shows is a :class:`Board`, a frozen snapshot made by :class:`BoardKeeper`
(the driver's listener) after every step; ``on_change`` hears each one (data down to the pane).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tui.engine.options import RunOptions
from tui.engine.store.run_ids import new_run_id
from tui.engine.tune.answer import NOTHING_BEATS, NOTHING_MEASURED, Progress, TuneResult
from tui.engine.tune.driver import TuneDriver
from tui.engine.tune.listener import TuneListener
from tui.engine.runner.torch_probe import probing
from tui.engine.tune.request import DEVICE, PINNED, TuneRequest, plan_refused, plan_search
from tui.engine.tune.search import Standing, ranked, stage_name
from tui.present.format import active_status_text, workload_label
from tui.present.tune_answer import answer_lines, headline

if TYPE_CHECKING:
    from tui.engine.store.results import RunRecord

__all__ = ["TuneRun", "TuneHost", "Board", "BoardKeeper", "STOPPED"]

logger = logging.getLogger(__name__)

_FIELD = {DEVICE: "device: ", PINNED: "option: "}
"""The picker's field a refusal names, before its reason (a space with nothing to race names none)."""

STOPPED = "stopped from the app"
"""Why the search ended when the user stopped it (the answer's "unconfirmed: ...")."""


class TuneHost(Protocol):
    """What a tune needs of the controller (:class:`~tui.app.controller.LabController`; it imports this module)."""

    session: Any
    """The app's RunSession."""
    view: Any
    """The controller's LabView, or None."""

    def known(self, records: list[RunRecord]) -> None:
        """Runs queued outside ``enqueue`` join the model."""


@dataclass(frozen=True)
class Board:
    """Where the search stands: what the leaderboard pane draws."""

    tune_id: str
    what: str
    """The workload, device and objective, in words."""
    budget_s: float
    stage: str = "asking torch which options it has"
    incumbent: Standing | None = None
    standings: tuple[Standing, ...] = ()
    stage_index: int = 0
    """The stage running now (0: the screening); a candidate still in that last ran before it has yet to run in it."""
    time_left_s: float | None = None
    """The budget left for runs at the latest step (None once it ended)."""
    ends_at: float | None = None
    """When the budget for runs ends, on the search's clock (``time.monotonic``): the pane counts down to it."""
    runs: int = 0
    """The runs that ended on their own (:attr:`TuneResult.runs`)."""
    stopped_runs: int = 0
    """The runs a stop cancelled as they ran (:attr:`TuneResult.stopped_runs`)."""
    note: str = ""
    """The latest note (a stage skipped for the budget, a combination added)."""
    done: bool = False
    stopping: bool = False
    headline: str = ""
    """The answer's first line, once the search ended."""
    answer: str = ""
    """The whole answer as text, once the search ended (what ``y`` copies)."""
    answer_lines: tuple[tuple[str, bool], ...] = ()
    """The answer's lines, each with whether it is prose that may fold (:func:`~tui.present.tune_answer.answer_lines`):
    the screen folds them to its width."""

    @property
    def scored(self) -> list[Standing]:
        """The candidates still in the race that have a score, the best first (each listed as soon as it is scored)."""
        return [s for s in ranked(self.standings) if s.alive and not s.score.out and s.score.value is not None]

    @property
    def left(self) -> int:
        """The candidates still in the race (run or not), read from the standings: a stage's drops and cuts show at
        the next step whichever listener call brings it."""
        return sum(1 for s in self.standings if s.alive)

    @property
    def waiting(self) -> int:
        """The candidates still in the race that have yet to run in the stage running now."""
        return sum(1 for s in self.standings if s.alive and s.stage < self.stage_index)

    @property
    def out(self) -> list[tuple[str, str]]:
        """(candidate, why) of each candidate out of the race (a failed run's reason before the stage ends too)."""
        return [(s.name, s.gone or f"out: {s.score.out}") for s in self.standings if s.gone or s.score.out]


class BoardKeeper(TuneListener):
    """The driver's listener: keeps the :class:`Board` and hands each new one to ``on_change``.

    ``standings`` reads the driver's standings as they are (drops and cuts happen between its calls).
    """

    def __init__(self, board: Board, on_change: Callable[[Board], None] | None = None,
                 standings: Callable[[], Sequence[Standing]] = tuple) -> None:
        self.board = board
        self.on_change = on_change
        self.standings = standings

    def update(self, **changes: Any) -> None:
        changes.setdefault("standings", tuple(self.standings()))
        self.board = dataclasses.replace(self.board, **changes)
        if self.on_change is not None:
            self.on_change(self.board)

    def stage_started(self, index: int, names: Sequence[str], iters: int) -> None:
        self.update(stage=f"{stage_name(index)}: {len(names)} candidate(s), {iters} iterations per side",
                    stage_index=index)

    def candidate_scored(self, standing: Standing) -> None:
        self.update()

    def progress(self, progress: Progress) -> None:
        self.update(incumbent=progress.incumbent, time_left_s=progress.time_left_s, runs=progress.runs)

    def confirming(self, standing: Standing, repeats: int) -> None:
        self.update(incumbent=standing, stage=f"confirming {standing.name}: {repeats} fresh processes of it and "
                                              f"{repeats} of the default compile")

    def note(self, text: str) -> None:
        self.update(note=text)


class _TuneLane:
    """The session as the driver sees it: the app's session, limited to the tune's own runs."""

    def __init__(self, tune: TuneRun) -> None:
        self.tune = tune
        self.fresh: list[RunRecord] = []

    def submit(self, options_list: Sequence[RunOptions], pool: Sequence[str] | None = None) -> list[RunRecord]:
        records = self.tune.lab.session.submit(list(options_list), pool=pool)
        self.tune.own.update(r.run_id for r in records)
        self.fresh.extend(records)
        return records

    async def wait_ended(self, records: Sequence[RunRecord], *, every: bool = True) -> list[RunRecord]:
        """Show the runs submitted since the last wait (the driver has tagged them by now), then wait until each
        of ``records`` (``every=False``: one) was saved; those that were, in order."""
        fresh, self.fresh = self.fresh, []
        if fresh:
            self.tune.lab.known(fresh)
            view = self.tune.lab.view
            if view is not None:
                view.show_queued(fresh, [r for r in fresh if r.group_id in (None, r.run_id)], "tune")
        need = len(records) if every else min(1, len(records))
        while True:
            self.tune.saved_event.clear()
            done = [r for r in records if r.run_id in self.tune.saved_ids]
            if len(done) >= need:
                return done
            await self.tune.saved_event.wait()

    def cancel_all(self, reason: str = "cancelled") -> None:
        """Drop the tune's queued runs and cancel its running ones with ``reason`` (the user's own runs stay)."""
        session = self.tune.lab.session
        session.drop_queued(self.tune.own)
        for lane, unit in list(session.running.items()):
            if unit.record.run_id in self.tune.own:
                session.cancel_running(lane, reason)


class TuneRun:
    """One search from the app (see the module docstring); :meth:`run` is its task."""

    def __init__(self, lab: TuneHost, base: RunOptions, request: TuneRequest,
                 on_change: Callable[[Board], None] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.lab, self.base, self.request, self.clock = lab, base, request, clock
        self.tune_id = new_run_id()
        what = f"{workload_label(base)} on {base.device}, objective {request.objective.describe()}"  # as the dialog
        self.keeper = BoardKeeper(Board(self.tune_id, what, request.budget_s), on_change)
        self.driver: TuneDriver | None = None
        self.result: TuneResult | None = None
        self.own: set[str] = set()
        """Run ids of the tune's runs."""
        self.saved_ids: set[str] = set()
        self.saved_event = asyncio.Event()
        self._stop: str | None = None

    @property
    def board(self) -> Board:
        return self.keeper.board

    @property
    def running(self) -> bool:
        return self.result is None

    def running_lines(self) -> tuple[str, ...]:
        """What the search runs now, a line per run: the candidate and its status (``freezing=True: compiling
        12 s``), as the results table shows a running row; () between runs."""
        driver = self.driver
        lines = []
        for unit in list(self.lab.session.running.values()):
            record = unit.record
            if record.run_id not in self.own:
                continue
            name = (driver.names.get(record.run_id) if driver is not None else None) or "a run"
            status = active_status_text(record.status, record.progress(), record.part_elapsed_s(), aligned=False)
            lines.append(f"{name}: {status}")
        return tuple(lines)

    def saved(self, record: RunRecord) -> None:
        """The controller saved ``record`` (its history line is written): one of the tune's runs may be settled."""
        if record.run_id in self.own:
            self.saved_ids.add(record.run_id)
            self.saved_event.set()

    def stop(self, reason: str = STOPPED) -> bool:
        """Stop the search now (its runs cancelled, the best so far unconfirmed); False when it had ended."""
        if not self.running:
            return False
        self._stop = self._stop or reason
        if self.driver is not None:
            self.driver.stop(self._stop)
        self.keeper.update(stopping=True, stage="stopping: the tune's runs are cancelled")
        return True

    def close(self) -> None:
        """The app closes: nothing is told from now on, and the search stops."""
        self.keeper.on_change = None
        self.stop("the app closed")

    async def task(self) -> None:
        """:meth:`run` as a task of the app's (the result is on the board)."""
        await self.run()

    async def run(self) -> TuneResult:
        """Ask torch, race, confirm; the result (also on the board as the answer), whatever stopped it."""
        began = self.clock()
        plan = await probing(plan_search, self.base, self.request.knobs)  # the app's closing kills the probe
        driver = TuneDriver(_TuneLane(self), self.base, plan.candidates, self.request.objective,
                            self.request.budget_s, pinned=self.base.inductor_options, modes=plan.modes,
                            listener=self.keeper, clock=self.clock, tune_id=self.tune_id, started=began)
        driver.notes.extend(plan.notes)
        self.driver = driver
        self.keeper.board = dataclasses.replace(self.keeper.board, ends_at=self.clock() + driver.time_left())
        self.keeper.standings = lambda: driver.standings
        refusal = plan_refused(plan, self.base.device)
        if plan.notes and (refusal is None or refusal[0] not in _FIELD):  # refused: its reason alone, as the CLI
            self.keeper.note(plan.notes[-1])
        empty = None if refusal is None else _FIELD.get(refusal[0], "") + refusal[1]
        if self._stop is not None or empty is not None:  # nothing to try: no run, the answer says why
            driver.stop(self._stop or empty or "")
        try:
            result = await driver.run()
        except asyncio.CancelledError:
            driver.stop(self._stop or "the app closed")
            self._finish(driver.result(), plan.modes)
            raise
        except Exception as exc:  # the search's own failure: said on the board, logged with its traceback
            logger.exception("the tune failed")
            driver.stop(f"the search failed: {exc}")
            result = driver.result()
        self._finish(result, plan.modes)
        return result

    def _finish(self, result: TuneResult, modes: Any) -> None:
        self.result = result
        stage = {NOTHING_BEATS: "nothing beats the default compile",
                 NOTHING_MEASURED: "nothing measured"}.get(result.outcome, f"ended: {result.outcome}")
        lines = answer_lines(result, modes)
        self.keeper.update(done=True, stopping=False, stage=stage, time_left_s=None, ends_at=None, runs=result.runs,
                           stopped_runs=result.stopped_runs,
                           incumbent=result.winner, standings=result.standings,
                           headline=headline(result), answer="\n".join(line for line, _ in lines),
                           answer_lines=tuple(lines))
