"""The tuner's driver: the race's stages and the confirmation, run through a RunSession within a budget.

:class:`TuneDriver` submits its runs to a :class:`~tui.engine.run.session.RunSession` (the one
``compile-lab run`` uses: a fresh worker per run, the history, the exports) one at a time, or on a
``pool`` of lanes (a GPU pool of one kind, a Ray cluster's lanes) one per lane at once, each to the
first free lane, so it can decide before each run whether the budget still fits it: a run starts only
when its estimated length (:class:`DurationModel`, from the runs so far), plus the confirmation's
(its waves, :func:`~tui.engine.tune.parallel.confirm_waves`), fits in what is left. A confirmation
that is inconclusive grows, a process a side at a time, while the budget fits it (up to
:data:`~tui.engine.tune.answer.CONFIRM_MAX_REPEATS` a side), in matched pairs on a pool (the winner's and the
default compile's processes beside the same neighbours: :mod:`tui.engine.tune.parallel`).
Every record it makes carries the tune's id (``RunRecord.tune_id``). :meth:`TuneDriver.stop` (or
cancelling :meth:`TuneDriver.run`) ends the search: the best so far is reported as unconfirmed, and
every run that ended stays in the session (history, exports).

The listener (:class:`TuneListener`) hears each stage, each scored candidate and the progress
(incumbent, candidates left, time left): the CLI prints lines, an app pane can draw a leaderboard.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tui.engine.options import RunOptions
from tui.engine.status import RunStatus, ended_reason
from tui.engine.store.results import RunRecord
from tui.engine.store.run_ids import new_run_id
from tui.engine.tune import notes
from tui.engine.tune.answer import (
    BUDGET_RAN_OUT, CONFIRM_MAX_REPEATS, CONFIRM_REPEATS, CONFIRMED, Confirmation, Progress, TuneResult, confirm,
    outcome_of, settled,
)  # fmt: skip
from tui.engine.tune.durations import DurationModel
from tui.engine.tune.listener import TuneListener
from tui.engine.tune.objective import Objective, score
from tui.engine.tune.parallel import DEFAULT, WINNER, confirm_waves, failed_growth, waves_cost
from tui.engine.tune.runs import (
    CANCELLED, gpu_kinds, mark_stopped, ran_count, stopped_run_text, stopped_runs, timed_out_at_the_end,
)  # fmt: skip
from tui.engine.tune.search import (
    CONFIRMATION, MAX_STAGES, Standing, ahead_of_default, challenger, confirm_choices, halve, judge_stage, leader,
    stage_name, stage_plan, winner,
)  # fmt: skip
from tui.engine.tune.space import Candidate, combine

__all__ = ["TuneDriver", "TuneListener", "gpu_kinds"]

CONFIRM_MARGIN = 1.2
"""The race keeps this many times the confirmation's estimate for it: a run that takes longer than its estimate
(the estimate is a mean) would otherwise leave the confirmation no room, and the budget's rest unused."""
CLOSING_S = 3.0
"""Seconds of the budget kept for after the last run: closing the session, the exports, the answer."""
SHARED_FAILURES = ("bad_options", "setup_error", "workload_error")
"""Failure kinds of the default compile's run that every candidate would meet: the run options they all share
were refused (a device this torch has not), the machine could not host a run (the GPU's lock), or the workload
could not be loaded. The search stops on them."""


@dataclass
class _Entry:
    candidate: Candidate
    records: list[RunRecord] = dataclasses.field(default_factory=list)


class TuneDriver:
    """Race ``candidates`` (the default compile first) on ``base`` and confirm the winner; see the module docstring."""

    def __init__(self, session: Any, base: RunOptions, candidates: Sequence[Candidate], objective: Objective,
                 budget_s: float, *, pinned: Mapping[str, Any] | None = None,
                 modes: Mapping[str, Mapping[str, Any]] | None = None, listener: TuneListener | None = None,
                 clock: Callable[[], float] = time.monotonic, tune_id: str | None = None,
                 confirm_repeats: int = CONFIRM_REPEATS, max_confirm_repeats: int = CONFIRM_MAX_REPEATS,
                 max_stages: int = MAX_STAGES, started: float | None = None, pool: Sequence[str] | None = None) -> None:
        self.session = session
        self.pool = tuple(pool or ())
        """The lanes the runs are dealt to, one run per lane at once (a GPU pool of one kind, a cluster's lanes);
        empty: one run at a time."""
        self.base = base
        self.objective = objective
        self.budget_s = budget_s
        self.pinned = dict(pinned or {})
        self.modes = modes
        self.listener = listener or TuneListener()
        self.clock = clock
        self.tune_id = tune_id or new_run_id()
        self.confirm_repeats = confirm_repeats
        self.max_confirm_repeats = max(confirm_repeats, max_confirm_repeats)
        self.max_stages = max_stages
        self.threshold = base.noise_threshold
        self.durations = DurationModel()
        self.entries = {c.name: _Entry(c) for c in candidates}
        self.standings = [Standing(c) for c in candidates]
        self.records: list[RunRecord] = []
        self.names: dict[str, str] = {}  # run id -> the name of the candidate it ran
        self.notes: list[str] = []
        self._started = clock() if started is None else started
        self._stopped: str | None = None
        self._incomplete: str | None = None
        self._cut_short: str | None = None
        self._refused: str | None = None  # why the default compile failed as every candidate would (SHARED_FAILURES)
        self._ran_out: list[str] = []
        """Candidates whose screening run the budget's end cut before its measurement (its timeout: the time left)."""
        self._paced = False
        """Whether the budget was checked against the screening at the runs' pace (:meth:`_say_pace`)."""
        self._needed_said: int | None = None
        """The ``--budget`` minutes a note already said the screening needs (:meth:`_say_pace`)."""
        self._unconfirmable = False
        """Whether the race said that the confirmation no longer fits (:meth:`_say_unconfirmable`)."""
        self._going: dict[str, tuple[float, list[RunRecord]]] = {}  # the stage's: name -> (submitted at, records)

    # ----- time -------------------------------------------------------------------------------

    def time_left(self) -> float:
        """Seconds of the budget left for runs: what is left less :data:`CLOSING_S`."""
        return self.budget_s - CLOSING_S - (self.clock() - self._started)

    def _confirm_iters(self) -> int:
        return stage_plan(1, self.base.iters).iters

    @property
    def lanes(self) -> int:
        """How many runs go at once."""
        return max(1, len(self.pool))

    def _waves_cost(self, repeats: int, first: int = 0, name: str | None = None) -> float | None:
        """:func:`waves_cost` of the confirmation of candidate ``name`` (None: one not run yet)."""
        return waves_cost(self.durations, self._confirm_iters(), {WINNER: name, DEFAULT: self._default.name},
                          repeats, self.lanes, first)

    def _choice_costs(self) -> list[tuple[Standing, float | None]]:
        """Each of :func:`confirm_choices` with its confirmation's estimate (:meth:`_waves_cost`)."""
        return [(s, self._waves_cost(self.confirm_repeats, name=s.name))
                for s in confirm_choices(self.standings, self.threshold)]

    def _to_confirm(self, choices: Sequence[tuple[Standing, float | None]]) -> tuple[Standing, float | None]:
        """What the confirmation judges, of ``choices`` (:meth:`_choice_costs`, not empty), with its estimate: the
        first whose confirmation fits in the time left, else the first."""
        fitting = ((s, cost) for s, cost in choices if cost is not None and cost <= self.time_left())
        return next(fitting, choices[0])

    @property
    def _default(self) -> Candidate:
        return next(e.candidate for e in self.entries.values() if e.candidate.is_default)

    def _confirm_cost(self, choices: Sequence[tuple[Standing, float | None]] | None = None) -> float:
        """The room the race keeps for the confirmation: the cheapest of ``choices`` (None: :meth:`_choice_costs`), a
        not-yet-run candidate's where there are none (0 before any run ended)."""
        choices = self._choice_costs() if choices is None else choices
        if not choices:
            return self._waves_cost(self.confirm_repeats) or 0.0
        return min((cost for _, cost in choices if cost is not None), default=0.0)

    def _fits(self, iters: int, name: str | None = None) -> bool:
        """Whether a run of ``iters`` (of candidate ``name``: its own runs so far estimate it) fits in the time
        left, and the confirmation after it while the race keeps its room (:meth:`_keeps_confirmation`: on a pool,
        only while the confirmation fits after the runs still going)."""
        estimate = self.durations.estimate(iters, name)
        if estimate is None:
            return self.time_left() > 0
        reserve = self._keeps_confirmation()
        return estimate + (self._confirm_cost() * CONFIRM_MARGIN if reserve else 0.0) <= self.time_left()

    def _keeps_confirmation(self) -> bool:
        """Whether the race keeps the confirmation's room: while a challenger it would judge races
        (:meth:`_confirmable`) and it fits in the time left after the runs still going (:meth:`_going_needs`). Once
        it fits no more, the race goes on with the time left rather than ending with the budget unspent; it keeps
        the room again if a cheaper estimate (another winner) makes it fit."""
        return self._confirmable() and self._going_needs() + self._confirm_cost() <= self.time_left()

    def _confirmable(self) -> bool:
        """Whether a challenger the confirmation would judge is in the race: one the stage's judgement keeps (no
        room is kept for one clearly below the default compile: it is never confirmed)."""
        return challenger(judge_stage(self.standings, self.threshold)) is not None

    def _going_needs(self) -> float:
        """How much longer the stage's runs still going need, by their estimates (the longest of them)."""
        now = self.clock()
        return self.durations.still_needed([(r.options.iters, name, now - began)
                                            for name, (began, records) in self._going.items() for r in records])

    def _say_unconfirmable(self) -> None:
        """Say once, as a run starts without the confirmation's room, that the confirmation no longer fits while a
        challenger races (:meth:`_keeps_confirmation`); a run that does not fit ends the race with its own note."""
        if self._unconfirmable or not self.durations.seen or not self._confirmable() or self._keeps_confirmation():
            return
        self._unconfirmable = True
        self._say(notes.unconfirmable(self._confirm_cost(), self.time_left(), self._going_needs()))

    # ----- running ------------------------------------------------------------------------------

    @property
    def _going_on(self) -> bool:
        """Neither stopped nor ended by the default compile's failure that every candidate shares."""
        return self._stopped is None and self._refused is None

    def stop(self, reason: str = "stopped") -> None:
        """End the search now: what runs is cancelled, the best so far is reported unconfirmed."""
        if self._stopped in (None, CANCELLED):
            self._stopped = reason
        self.session.cancel_all(stopped_run_text(reason))

    def options_of(self, candidate: Candidate, iters: int, timed: bool = False, first: bool = True) -> RunOptions:
        """``candidate``'s run options with ``iters``; ``timed``: its timeout within the budget left, in whole seconds
        (at least 1 s; the run's reproduce command shows it);
        not ``first``: no profile pass or trace (a candidate's first run, and the confirmation's, have them)."""
        options = dataclasses.replace(candidate.apply(self.base, self.pinned, self.modes), iters=iters)
        if not first:
            options = dataclasses.replace(options, profile=False, trace=False, torch_trace=False)
        if timed:
            within = math.floor(min(options.timeout_s, self.time_left()))
            options = dataclasses.replace(options, timeout_s=float(max(1, within)))
        return options

    def _submit(self, options_list: Sequence[RunOptions], stage: str, name: str,
                group: tuple[str, int] | None = None) -> list[RunRecord]:
        """Queue ``options_list`` (on the pool's free lanes, if any) as runs of ``stage`` (their ``tune_stage``) of
        candidate ``name``; ``group``: (group id, repeat) of the one run."""
        records = self.session.submit(list(options_list), pool=self.pool or None)
        for record in records:  # before the run starts: the session starts it from the event loop
            record.tune_id, record.tune_stage = self.tune_id, stage
            self.names[record.run_id] = name
            if group is not None:
                record.group_id, record.repeat = group[0] or record.run_id, group[1]
        self.records.extend(records)
        return records

    def _took(self, records: Sequence[RunRecord], began: float) -> None:
        """``records`` (submitted at ``began``) ended: their wall time goes into the duration model, under the
        candidate each ran (``_names``; :meth:`DurationModel.ended` says which count, and how)."""
        self.durations.ended(records, (self.clock() - began) / max(1, len(records)), self.names)

    async def run(self) -> TuneResult:
        """The race and the confirmation (see the module docstring); the result, whatever stopped it."""
        try:
            await self._race()
            if self._going_on:
                return await self._confirmation()
        except asyncio.CancelledError:
            self._stopped = self._stopped or CANCELLED
            raise
        return self.result()

    def result(self, confirmation: Confirmation | None = None, confirmed: Standing | None = None) -> TuneResult:
        """The result as it stands (unconfirmed unless ``confirmation``, of ``confirmed`` against the default
        compile, is given). Says once when the runs ran on GPUs of several kinds (a cluster: Ray picks the GPU)."""
        if len(kinds := gpu_kinds(self.records)) > 1 and (note := notes.several_kinds(kinds)) not in self.notes:
            self._say(note)
        stopped = stopped_runs(self.records) if self._stopped is not None else []
        if stopped:
            self.standings = mark_stopped(self.standings, stopped, self.names)
        best = winner(self.standings, self.threshold)
        outcome = outcome_of(best, confirmation, self._stopped, self._incomplete, self.threshold,
                             challenger_left=challenger(self.standings) is not None,
                             measured=any(s.score.value is not None for s in self.standings))
        if outcome == CONFIRMED and confirmed is not None:
            best = confirmed  # shown faster than the default compile in fresh processes, whoever led the race
        return TuneResult(tune_id=self.tune_id, outcome=outcome, winner=best,
                          winner_options=None if best is None else self.options_of(best.candidate, self.base.iters),
                          confirmation=confirmation, confirmed=confirmed if confirmation is not None else None,
                          standings=tuple(self.standings), notes=(*self.notes, *notes.noisy(self.records)),
                          stopped=self._stopped, incomplete=self._incomplete,
                          cut_short=self._cut_short or self._stopped, elapsed_s=self.clock() - self._started,
                          runs=ran_count(self.records), stopped_runs=len(stopped), threshold=self.threshold,
                          objective=self.objective)

    async def _race(self) -> None:
        for index in range(self.max_stages):
            plan = stage_plan(index, self.base.iters)
            running = [s for s in self.standings if s.alive]
            if index > 0 and len([s for s in running if not s.candidate.is_default]) <= 1 \
                    and not self._races_on(running, plan.iters):
                return
            self.listener.stage_started(index, [s.name for s in running], plan.iters)
            if not await self._run_stage([s.name for s in running], index, plan.iters):
                return
            if index == 0 and self._ran_out:
                self._incomplete = notes.unscreened(len(self._ran_out))
            ahead = ahead_of_default(self.standings, self.threshold)
            self.standings = judge_stage(self.standings, self.threshold)
            if index < self.max_stages - 1:
                self.standings = halve(self.standings, index)
            if index == 0:
                self._add_combination(ahead)

    def _races_on(self, running: Sequence[Standing], iters: int) -> bool:
        """Whether the race goes on with its one challenger left: beside the default compile, where the confirmation
        does not fit and a run of both does (more processes of both tell more than a budget unspent)."""
        if len(running) != 2 or not any(s.candidate.is_default for s in running) \
                or self._confirm_cost() <= self.time_left():
            return False
        need = self.durations.side_by_side(iters, [s.name for s in running], self.lanes)
        return need is not None and need <= self.time_left()

    def _out_of_time(self, index: int, iters: int, note: str) -> None:
        """The race ends at stage ``index`` for the budget: ``note`` says why, as :meth:`_fits` saw it."""
        self._cut_short = BUDGET_RAN_OUT
        unrun = [s for s in self.standings if s.alive and s.stage < index]
        if index == 0:
            self.standings = [dataclasses.replace(s, gone=notes.NOT_SCREENED) if s in unrun else s
                              for s in self.standings]
            self._incomplete = notes.unscreened(len(unrun) + len(self._ran_out))
        self.standings = judge_stage(self.standings, self.threshold)
        self._say(note)
        if index == 0 and unrun:
            self._say_budget_needed(len(unrun), iters)

    def _pace(self, iters: int) -> notes.Pace | None:
        """The figures of the budget notes at the runs' pace so far, for runs of ``iters`` (None before a run)."""
        run = self.durations.estimate(iters)
        return None if run is None else notes.Pace(self.clock() - self._started, run, self.lanes,
                                                   self._confirm_cost() * CONFIRM_MARGIN + CLOSING_S)

    def _say_budget_needed(self, unrun: int, iters: int) -> None:
        """Say what budget would have screened the ``unrun`` candidates too, unless the first run's note said it."""
        pace = self._pace(iters)
        if pace is not None and notes.budget_minutes(pace.needed_s(unrun)) != self._needed_said:
            self._say(notes.budget_needed(pace.needed_s(unrun)))

    def _say_pace(self, unrun: int, iters: int) -> None:
        """Once, as the second run ends (the first the budget's cost can be told from: the first run also paid once
        for a worker without a spare and a cold compile cache, :class:`DurationModel`): say when the budget cannot
        screen the ``unrun`` candidates left and keep the confirmation's room, so a short budget is known early."""
        if self._paced or len(self.durations.seen) < 2 or not self._going_on:
            return
        self._paced = True
        pace = self._pace(iters)
        if pace is not None and pace.needed_s(unrun) > self.budget_s:
            self._needed_said = notes.budget_minutes(pace.needed_s(unrun))
            self._say(notes.pace(pace, unrun, self.budget_s, len(self.standings)))

    def _out_of_time_text(self, index: int, iters: int, name: str) -> str:
        """Why the race ends at stage ``index``: the next run of ``iters``, of ``name`` (and the confirmation kept for
        after it, while :meth:`_keeps_confirmation`) against the time left, as :meth:`_fits` saw it."""
        cost = self._confirm_cost()
        room = notes.Room(cost, cost * CONFIRM_MARGIN) if self._keeps_confirmation() else None
        return notes.out_of_time(stage_name(index), self.time_left(), self.durations.estimate(iters, name), room)

    async def _run_stage(self, names: Sequence[str], index: int, iters: int) -> bool:
        """Run each of ``names`` once, one run per lane at once, each scored as it ends; False when the stage ended
        early: a stop, or the budget (said by :meth:`_out_of_time` once the runs going have ended)."""
        waiting = list(names)
        going = self._going = {}
        out_of_time: str | None = None  # why the next run did not start (the note, as _fits saw it)
        while waiting or going:
            while waiting and len(going) < self.lanes and self._going_on and out_of_time is None:
                out_of_time = self._start(waiting, going, index, iters)
            if not going:
                break
            ended = {r.run_id for r in await self.session.wait_ended(
                [r for _, records in going.values() for r in records], every=False)}
            for name in [n for n, (_, records) in going.items() if all(r.run_id in ended for r in records)]:
                began, records = going.pop(name)
                self._took(records, began)
                self._scored(name, index, records)
                if index == 0:
                    self._say_pace(len(waiting) + len(going), iters)
        if out_of_time is not None and self._going_on:
            self._out_of_time(index, iters, out_of_time)
        return self._going_on and out_of_time is None

    def _start(self, waiting: list[str], going: dict[str, tuple[float, list[RunRecord]]], index: int,
               iters: int) -> str | None:
        """Start the run of ``waiting``'s first candidate into ``going`` if it fits; else why not (the note that ends
        the race, made now: on a pool the runs still going end first, and the time left and the estimates move)."""
        if not self._fits(iters, waiting[0]):
            return self._out_of_time_text(index, iters, waiting[0])
        self._say_unconfirmable()
        name = waiting.pop(0)
        entry = self.entries[name]
        options = self.options_of(entry.candidate, iters, timed=True, first=not entry.records)
        going[name] = (self.clock(), self._submit([options], stage_name(index), name))
        return None

    def _scored(self, name: str, index: int, records: Sequence[RunRecord]) -> None:
        """A run of ``name`` in stage ``index`` ended: its score and standing (a run cancelled by a stop is not)."""
        entry = self.entries[name]
        entry.records.extend(records)
        if all(r.status == RunStatus.CANCELLED for r in records) and self._stopped is not None:
            return
        new = score(entry.records, self.objective)
        if new.processes == 0 and timed_out_at_the_end(records, self.base.timeout_s):
            if index == 0:
                self._ran_out.append(name)
            self._cut_short = BUDGET_RAN_OUT
            self.standings = [dataclasses.replace(s, gone=notes.ran_out_in(stage_name(index)), stage=index)
                              if s.name == name else s for s in self.standings]
            self._progress()
            return
        self.standings = [s.rescored(new, index) if s.name == name else s for s in self.standings]
        standing = next(s for s in self.standings if s.name == name)
        self.listener.candidate_scored(standing)
        if standing.candidate.is_default and standing.score.value is None:
            self._refuse(records)
        self._progress()

    def _refuse(self, records: Sequence[RunRecord]) -> None:
        """The default compile's run failed as every candidate's would (:data:`SHARED_FAILURES`): no more runs
        start, the candidates not run say why, and a note says it; other failures leave the race to go on."""
        failed = next((r for r in records if r.status == RunStatus.FAILED and r.error_kind in SHARED_FAILURES), None)
        if failed is None:
            return
        self._refused = ended_reason(failed.error_kind, failed.error_message)
        self.standings = judge_stage([dataclasses.replace(s, gone=notes.NOT_RUN) if s.alive and s.stage < 0 else s
                                      for s in self.standings], self.threshold)
        self._say(notes.refused(self._refused))

    def _add_combination(self, ahead: Sequence[Standing]) -> None:
        """After the screening: the candidates that each beat the default (``ahead``), combined, join the race."""
        if len(ahead) < 2:
            return
        combined = combine([s.candidate for s in ahead])
        if combined is None or combined.name in self.entries:
            return
        self.entries[combined.name] = _Entry(combined)
        self.standings.append(Standing(combined))
        self._say(notes.combined(combined.name, [s.candidate.name for s in ahead]))

    def _progress(self) -> None:
        best = leader(self.standings)
        self.listener.progress(Progress(incumbent=best, left=sum(s.alive for s in self.standings),
                                        time_left_s=self.time_left(), runs=ran_count(self.records)))

    def _say(self, text: str) -> None:
        self.notes.append(text)
        self.listener.note(text)

    async def _confirmation(self) -> TuneResult:
        choices = self._choice_costs()
        if not choices:
            return self.result()
        best, cost = self._to_confirm(choices)
        default = self._default
        if (cost or 0.0) > self.time_left():
            least = self._confirm_cost(choices)  # the cheapest choice's: none fits
            self._stopped = notes.confirmation_against_left(least, self.time_left(), "does not fit")
            return self.result()
        first, first_cost = choices[0]
        if first is not best:
            self._say(notes.in_place_of(best.name, first.name, first_cost or 0.0, self.time_left(), self.threshold))
        self.listener.confirming(best, self.confirm_repeats)
        runs: dict[str, list[RunRecord]] = {WINNER: [], DEFAULT: []}
        sides = {WINNER: best.candidate, DEFAULT: default}
        repeats = self.confirm_repeats
        if not await self._confirm_waves(confirm_waves(repeats, self.lanes), sides, runs):
            return self.result()
        judged = confirm(runs[WINNER], runs[DEFAULT], self.objective, self.threshold, best.candidate.name)
        first_repeats, stopped = repeats, False
        while (more := self._more_repeats(judged, repeats, best.name)) > repeats:
            self.listener.note(notes.grows(repeats, more))  # live; the answer keeps one note for all the growth
            if not await self._confirm_waves(confirm_waves(more, self.lanes, first=repeats), sides, runs):
                stopped = True  # a stop or the budget: no confirmation
                break
            if (failed := failed_growth(runs, repeats)) is not None:  # every process it added failed
                self.notes.append(failed)
                break
            repeats, judged = more, confirm(runs[WINNER], runs[DEFAULT], self.objective, self.threshold,
                                            best.candidate.name)
        if repeats > first_repeats:
            self.notes.append(notes.grew(first_repeats, repeats))
        return self.result() if stopped else self.result(judged, best)

    def _more_repeats(self, judged: Confirmation, repeats: int, name: str) -> int:
        """The processes a side the confirmation of ``name`` grows to: ``repeats`` (no more) once it is
        :func:`settled` or at its cap; else a process a side (on a pool, a matched pair for every two lanes) where
        those fit the time left."""
        if settled(judged.vs_default, self.threshold) or repeats >= self.max_confirm_repeats:
            return repeats
        more = min(self.max_confirm_repeats, repeats + max(1, self.lanes // 2))
        cost = self._waves_cost(more, first=repeats, name=name)
        return more if cost is not None and cost <= self.time_left() else repeats

    async def _confirm_waves(self, waves: Sequence[Sequence[tuple[int, str]]], sides: Mapping[str, Candidate],
                             runs: dict[str, list[RunRecord]]) -> bool:
        """Run the confirmation's ``waves`` into ``runs``; False when the search stopped (``_stopped`` says why)."""
        iters = self._confirm_iters()
        for wave in waves:
            if self._stopped is not None:
                return False
            if self.time_left() <= 0:
                self._stopped = notes.RAN_OUT_CONFIRMING
                return False
            began, submitted = self.clock(), []
            for repeat, side in wave:
                group = runs[side][0].group_id if runs[side] else ""
                options = self.options_of(sides[side], iters, timed=True, first=repeat == 0)
                submitted.append(self._submit([options], CONFIRMATION, sides[side].name, group=(group or "", repeat)))
                runs[side] += submitted[-1]
            await self.session.wait_ended([r for records in submitted for r in records])
            for records in submitted:
                self._took(records, began)
        kinds = gpu_kinds(runs[WINNER] + runs[DEFAULT])
        if len(kinds) > 1 and self._stopped is None:  # the winner's gain would mix in the hardware's
            self._stopped = notes.confirmed_on_several_kinds(kinds)
        return self._stopped is None
