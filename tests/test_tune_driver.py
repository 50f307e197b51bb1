"""The tuner's driver on a real RunSession with an in-process runner and a fake clock: the racing, the
confirmation in fresh processes, failures with their reasons, the budget, a stop."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import re

import pytest
from fakes import fake_worker_argv

from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.run.kept import CANCELLED_THEN, kept_events
from tui.engine.run.session import RunSession
from tui.engine.tune.answer import (
    CONFIRM_MAX_REPEATS, CONFIRMED, NOTHING_BEATS, NOTHING_MEASURED, UNCONFIRMED, nothing_beats_text,
)
from tui.engine.runner import WorkerRunner
from tui.engine.tune.driver import CLOSING_S, TuneDriver
from tui.engine.tune.durations import seconds_apart
from tui.engine.tune.listener import TuneListener
from tui.engine.tune.objective import Objective
from tui.engine.tune.search import stage_name
from tui.engine.tune.space import Candidate

BASE = RunOptions(workload="pointwise", params={"n": 512}, device="cpu", iters=80, block_size=10, profile=False)
FREEZE, AUTOTUNE, WRAPPER, FUSION = (Candidate((("freezing", True),)), Candidate((("mode", "max-autotune"),)),
                                     Candidate((("cpp_wrapper", True),)), Candidate((("aggressive_fusion", True),)))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _key(options: RunOptions) -> str:
    if options.mode != "default":
        return options.mode
    return " ".join(f"{k}={v}" for k, v in sorted(options.inductor_options.items())) or "default"


class TimedRunner:
    """Fills each record in place: eager 2 ms, the compiled time ``times[key]`` (default 1 ms; a pair: the time
    and the compile time, else 0.5 s; a function of the configuration's run count), or a failure; each run
    moves the clock on by ``seconds`` (``before``: a hook called as each run starts)."""

    keep_spare = False
    drifts: dict[int, float] = {}
    """Run number (1: the first) -> how much its compiled time grows from its first block to its last."""

    def __init__(self, clock: Clock, times: dict, seconds: float = 10.0, before=None) -> None:
        self.clock, self.times, self.seconds, self.before = clock, times, seconds, before
        self.runs: list[RunOptions] = []

    async def run(self, record, on_event=None):
        self.runs.append(record.options)
        if self.before is not None:
            self.before(len(self.runs))
        self.clock.now += self.seconds
        record.apply(make_event("started", 0.0, env={"torch": "2.13.0"}))
        compiled = self.times.get(_key(record.options), 1.0)
        if callable(compiled):  # by the how-manieth run of this configuration it is (1: its screening)
            compiled = compiled(sum(_key(o) == _key(record.options) for o in self.runs))
        compiled, compile_s = compiled if isinstance(compiled, tuple) else (compiled, 0.5)
        if compiled == "fail":
            record.fail("compile_error", "compile failed: fake inductor error")
            return record
        if compiled == "timeout":  # a run that outlasts its limit (the budget's end, or its own --timeout)
            record.fail("timeout", f"timed out after {record.options.timeout_s:g} s (timeout_s) while diagnosing")
            return record
        if compiled == "refused":  # the run options every candidate shares
            record.fail("bad_options", "device: cuda is not available: no CUDA (allowed: cpu)")
            return record
        rng = random.Random(len(self.runs))
        record.apply(make_event("phase", 0.1, phase="measuring"))
        grows = self.drifts.get(len(self.runs), 0.0)
        for index in range(8):
            drifted = (1.0 if compiled == "recompile" else compiled) * (1 + grows * index / 7)
            for side, ms in (("eager", 2.0), ("compiled", drifted)):
                values = [ms * (1 + rng.uniform(-0.01, 0.01)) for _ in range(10)]
                record.apply(make_event("block", 1.0 + index, side=side, stage="measure", index=index,
                                        clock="perf_counter", ms=values, host_ms_per_call=sum(values) / 10))
        diagnostics = {"recompiles_during_measure": 2} if compiled == "recompile" else {}
        record.apply(make_event("measured", 9.0, compile_s=compile_s, diagnostics=diagnostics,
                                accuracy={"passed": True}, memory={}, warnings=[]))
        await self.after_measured(record)
        return record

    async def after_measured(self, record) -> None:
        """What the worker does after its measurement: the profile pass, then ``finished``."""
        record.apply(make_event("finished", 9.0))

    async def aclose(self) -> None:
        pass

    def kill_all(self) -> None:
        pass


class Heard(TuneListener):
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def stage_started(self, index, names, iters):
        self.events.append(("stage", index, tuple(names), iters))

    def confirming(self, standing, repeats):
        self.events.append(("confirming", standing.name, repeats))

    def note(self, text):
        self.events.append(("note", text))


DEVICE_TIME = Objective()


def _tune(candidates, times, budget=10_000.0, seconds=10.0, stop_at=None, objective=DEVICE_TIME, *, base=BASE,
          pool=(), runner_type=None, heard_type=None):
    """Race ``candidates`` with the TimedRunner (or ``runner_type``) on ``pool``'s lanes (none: one lane);
    ``stop_at``: the driver is stopped as that run starts."""
    clock = Clock()
    heard = heard_type(clock) if heard_type is not None else Heard()
    made = {}

    def before(count):
        if count == stop_at:
            made["driver"].stop("Ctrl-C")

    runner = (runner_type or TimedRunner)(clock, times, seconds, before)

    async def go():
        session = RunSession(lambda lane: runner, None)
        driver = made["driver"] = TuneDriver(session, base, candidates, objective, budget, listener=heard,
                                             clock=clock, tune_id="tune-1", pool=tuple(pool))
        try:
            return await driver.run(), session
        finally:
            await session.aclose()

    result, session = asyncio.run(go())
    return result, session, runner, heard, clock


def test_the_answer_says_how_many_runs_read_noisy_and_why_the_first_did():
    quiet, *_ = _tune([Candidate(), FREEZE], {"freezing=True": 0.7})
    assert not any("noisy" in note for note in quiet.notes)
    stalls = dataclasses.replace(BASE, noise_limits={"stall_factor": 0.000001})  # every sample a "stall"
    busy, _session, runner, *_ = _tune([Candidate(), FREEZE], {"freezing=True": 0.7}, base=stalls)
    [note] = [note for note in busy.notes if "noisy" in note]
    assert note.startswith(f"{len(runner.runs)} of the {busy.runs} runs read noisy (the first: eager time: a stall")
    assert note.endswith("so the race's order may be the noise's; tune on a quiet machine")


def test_a_clearly_worse_candidate_is_dropped_after_screening_and_the_winner_confirmed_in_fresh_processes():
    result, session, runner, heard, _ = _tune([Candidate(), FREEZE, AUTOTUNE], {"freezing=True": 0.7,
                                                                                "max-autotune": 1.6})
    gone = {s.name: s.gone for s in result.standings}
    assert gone["max-autotune"].startswith("dropped: below freezing=True")
    assert result.outcome == CONFIRMED and result.winner.name == "freezing=True"
    # the screening ran each once; the race stopped with one candidate left; then 3 + 3 interleaved processes
    keys = [_key(o) for o in runner.runs]
    assert keys[:3] == ["default", "freezing=True", "max-autotune"]
    assert keys[3:] == ["freezing=True", "default"] * 3
    assert ("confirming", "freezing=True", 3) in heard.events
    confirmed = session.records[3:]
    assert len({r.run_id for r in confirmed}) == 6 and len({r.group_id for r in confirmed}) == 2
    assert {r.tune_id for r in session.records} == {"tune-1"}
    assert result.confirmation.vs_default.verdict == "faster"
    assert result.confirmation.vs_default.gain == pytest.approx(1 / 0.7, rel=0.02)
    assert result.confirmation.vs_eager.gain == pytest.approx(2 / 0.7, rel=0.02)
    assert result.confirmation.processes == (3, 3)


def test_each_run_says_which_part_of_the_tune_ran_it():
    # the report and the CSV tell a candidate's screening run from its later runs and its confirmation
    many = [Candidate()] + [Candidate((("k", i),)) for i in range(6)]
    result, session, _, heard, _ = _tune(many, {f"k={i}": 0.9 - i / 100 for i in range(6)})
    stage_of = {iters: index for _, index, _, iters in (e for e in heard.events if e[0] == "stage")}
    assert len(stage_of) >= 2 and result.confirmation is not None
    for record in session.records:
        expected = "confirmation" if record.group_id else stage_name(stage_of[record.options.iters])
        assert record.tune_stage == expected, (record.options.inductor_options, record.options.iters)
    assert [r.tune_stage for r in session.records][:7] == ["screening"] * 7


# a challenger about 1.5% faster whose processes disagree: one in two runs 3% faster, the other as fast as the
# default; its screening (its first run) leads the race
EDGE = {"freezing=True": lambda n: 0.97 if n % 2 else 1.0}


def test_an_inconclusive_confirmation_grows_a_process_a_side_up_to_its_cap():
    result, session, runner, heard, _ = _tune([Candidate(), FREEZE], EDGE)
    keys = [_key(o) for o in runner.runs]
    assert CONFIRM_MAX_REPEATS == 12
    assert keys[2:] == ["freezing=True", "default"] * 12  # 3 + 3, then one more a side, nine times
    notes = [e[1] for e in heard.events if e[0] == "note" and "inconclusive" in e[1]]
    assert notes == [f"the confirmation is inconclusive after {n} + {n} processes: 1 more a side" for n in range(3, 12)]
    assert result.confirmation.processes == (12, 12)
    grew = [note for note in result.notes if "inconclusive" in note]  # the answer's: one for all the growth
    assert grew == ["the confirmation was inconclusive after 3 + 3 processes and grew to 12 + 12, one wave at a time, "
                    "while its interval still allowed a gain past the threshold"]
    assert result.confirmation.vs_default.verdict == "inconclusive" and result.outcome == UNCONFIRMED
    grown = session.records[2:]
    assert len({r.group_id for r in grown}) == 2  # the added processes join their side's group


def test_a_confirmation_stops_growing_once_every_process_it_added_failed():
    # A machine that no longer ran a worker (its code replaced under a running search) failed each added process
    # in a second, and the confirmation went on adding them to its cap: nine failed a side, and a note that it
    # "grew to 12 + 12". Screening and the first 3 + 3 measure (the how-manieth run: 1 is the screening).
    times = {"freezing=True": lambda n: "fail" if n > 4 else EDGE["freezing=True"](n),
             "default": lambda n: "fail" if n > 4 else 1.0}
    result, _, runner, _, _ = _tune([Candidate(), FREEZE], times)
    assert len(runner.runs) == 2 + 6 + 2  # one process more a side, both failed: no more
    assert result.confirmation.processes == (3, 3) and result.outcome == UNCONFIRMED
    assert "the confirmation stopped growing at 3 + 3 processes: every process added failed (compile failed: fake " \
           "inductor error)" in result.notes
    assert not [note for note in result.notes if "grew to" in note]


def test_an_inconclusive_confirmation_that_rules_out_a_gain_says_nothing_beats_the_default():
    # a challenger as fast as the default in one process and 12% slower in the next: its interval spans the
    # band's low edge (inconclusive, two-sided), but its high end is within 1 + t, so no gain over 2% is left
    slower = {"freezing=True": lambda n: 1.0 if n % 2 else 1.12}
    result, _, runner, heard, _ = _tune([Candidate(), FREEZE], slower)
    against = result.confirmation.vs_default
    assert against.verdict == "inconclusive" and against.high <= 1.02 and against.low < 0.98, against
    assert result.outcome == NOTHING_BEATS
    assert result.confirmation.processes == (3, 3)  # settled: no process added
    assert not [e for e in heard.events if e[0] == "note" and "1 more a side" in e[1]]
    from tui.present.tune_answer import answer_text

    text = answer_text(result)
    assert text.startswith("no configuration beats the default compile by more than 2%")
    assert "inconclusive, so not more than 2% faster" in text


def test_an_inconclusive_confirmation_grows_only_while_the_budget_fits_it():
    # 10 s a run: the race (20 s) and the confirmation's six (60 s) fit in 100 s; another pair (20 s) does not
    result, _, runner, _, clock = _tune([Candidate(), FREEZE], EDGE, budget=100.0)
    assert len(runner.runs) == 2 + 6 and clock.now <= 100.0
    assert result.confirmation.processes == (3, 3) and result.outcome == UNCONFIRMED


class BusyDefault(TimedRunner):
    """The default compile's first confirmation process (the fourth run) measures beside 3 busy cores."""

    async def run(self, record, on_event=None):
        await super().run(record, on_event)
        if len(self.runs) == 4:
            record.telemetry = dataclasses.replace(record.telemetry, other_cpu_cores=3.0)
        return record


def test_a_noisy_confirmation_does_not_grow_since_its_noisy_process_stays_in_it():
    # EDGE's confirmation grows while inconclusive (above); here a process of it measured beside a busy machine.
    # Noise is each process's own (compare's rule): a side with a noisy process reads noisy whatever is added, so
    # more processes a side would spend the budget and settle nothing
    result, _, runner, heard, _ = _tune([Candidate(), FREEZE], EDGE, runner_type=BusyDefault)
    against = result.confirmation.vs_default
    assert against.verdict == "noisy" and against.reasons == (
        "default compile process 1 of 3: other processes used 3.0 CPU cores while measuring",)
    assert len(runner.runs) == 2 + 6 and result.confirmation.processes == (3, 3)
    assert not [e for e in heard.events if e[0] == "note" and "more a side" in e[1]]
    assert result.outcome == UNCONFIRMED


class DriftingWinner(TimedRunner):
    """The winner's first confirmation process (the third run) slows 30% across its run: its speedup drifts."""

    drifts = {3: 0.3}


def test_a_confirmation_inconclusive_for_a_drift_names_it_and_does_not_grow():
    # A process whose speedup drifted past max_drift caps compare's word at inconclusive (BENCHMARKS §24): it is
    # not noise, and more processes would not take it out of the reading
    result, _, runner, heard, _ = _tune([Candidate(), FREEZE], EDGE, runner_type=DriftingWinner)
    against = result.confirmation.vs_default
    assert against.verdict == "inconclusive" and len(against.reasons) == 1, against
    assert against.reasons[0].startswith("freezing=True process 1 of 3: the time speedup drifted -")
    assert len(runner.runs) == 2 + 6 and result.confirmation.processes == (3, 3)
    assert not [e for e in heard.events if e[0] == "note" and "more a side" in e[1]]
    assert result.outcome == UNCONFIRMED  # no claim, "nothing beats the default" included


def test_a_failing_or_recompiling_candidate_is_out_with_its_reason():
    result, *_ = _tune([Candidate(), WRAPPER, FUSION],
                       {"cpp_wrapper=True": "fail", "aggressive_fusion=True": "recompile"})
    gone = {s.name: s.gone for s in result.standings}
    assert gone["cpp_wrapper=True"] == "out: failed: compile failed: fake inductor error"
    assert gone["aggressive_fusion=True"] == "out: recompiled 2 time(s) while measuring"


def test_when_every_run_fails_nothing_was_measured_and_nothing_is_said_to_beat_the_default():
    """A search whose every run failed, the default compile's too, said "no configuration beats the default
    compile by more than 2%": a claim about times that no run measured."""
    from tui.present.tune_answer import headline

    result, _, runner, *_ = _tune([Candidate(), FREEZE, AUTOTUNE],
                                  {"default": "fail", "freezing=True": "fail", "max-autotune": "fail"})
    assert len(runner.runs) == 3  # a compile error is the candidate's own: each ran
    assert result.outcome == NOTHING_MEASURED and result.winner is None and result.confirmation is None
    assert headline(result) == ("nothing was measured, so no configuration can be judged: the default compile's "
                                "run failed: compile failed: fake inductor error")


def test_a_search_whose_runs_the_budget_cut_says_so_not_that_they_failed():
    """A budget that ended the default compile's first run before it measured read "the default compile's run every
    run failed"."""
    from tui.engine.tune.answer import BUDGET_RAN_OUT, TuneResult
    from tui.engine.tune.search import Standing
    from tui.present.tune_answer import headline

    cut = Standing(Candidate(), gone="cut: its screening run reached the budget's end (the budget ran out)", stage=0)
    result = TuneResult(tune_id="t", outcome=NOTHING_MEASURED, winner=None, winner_options=None, confirmation=None,
                        standings=(cut,), cut_short=BUDGET_RAN_OUT, runs=1)
    assert headline(result) == ("nothing was measured before the budget ran out (its runs reached the budget's end), "
                                "so no configuration can be judged")
    failed = dataclasses.replace(result, cut_short=None, standings=(dataclasses.replace(cut, gone=None),))
    assert headline(failed) == ("nothing was measured, so no configuration can be judged: the default compile's "
                                "run failed")


def test_a_default_compile_refused_its_shared_options_stops_the_search_after_one_run():
    """``tune --device cuda`` on a CPU box ran all 14 candidates, each refused the same way."""
    from tui.present.tune_answer import answer_text

    result, _, runner, heard, _ = _tune([Candidate(), FREEZE, AUTOTUNE], {"default": "refused"})
    assert len(runner.runs) == 1 and result.outcome == NOTHING_MEASURED
    gone = {s.name: s.gone for s in result.standings}
    assert gone["default"] == "out: failed: device: cuda is not available: no CUDA (allowed: cpu)"
    assert gone["freezing=True"] == gone["max-autotune"] == "not run: it would fail as the default compile did"
    assert any(event[0] == "note" and "no other candidate was run" in event[1] for event in heard.events)
    assert "beats the default" not in answer_text(result)


def test_nothing_beats_the_default_compile_once_its_best_challenger_is_confirmed_no_faster():
    # the default leads the race: its best challenger is confirmed against it, 3 + 3 fresh processes
    result, _, runner, heard, _ = _tune([Candidate(), AUTOTUNE], {"max-autotune": 1.01})
    assert result.outcome == NOTHING_BEATS and result.winner.candidate.is_default
    assert result.confirmed.name == "max-autotune" and result.confirmation.vs_default.verdict == "no change"
    assert [_key(o) for o in runner.runs][2:] == ["max-autotune", "default"] * 3
    assert ("confirming", "max-autotune", 3) in heard.events
    assert nothing_beats_text(result.threshold) == "no configuration beats the default compile by more than 2%"


def test_nothing_beats_the_default_without_a_confirmation_when_every_challenger_is_clearly_worse():
    result, _, runner, *_ = _tune([Candidate(), AUTOTUNE], {"max-autotune": 1.6})
    assert result.outcome == NOTHING_BEATS and result.confirmation is None
    assert len(runner.runs) == 2 and result.standings[1].gone.startswith("dropped: below default")


def test_a_challenger_the_race_put_behind_the_default_wins_when_the_confirmation_says_faster():
    # one noisy screening put the default ahead; in fresh processes the challenger is faster
    times = {"max-autotune": lambda n: 1.015 if n == 1 else 0.8}
    result, _, runner, *_ = _tune([Candidate(), AUTOTUNE], times)
    assert result.outcome == CONFIRMED and result.winner.name == "max-autotune"
    assert result.confirmation.vs_default.verdict == "faster"


def test_a_leading_default_whose_challenger_is_not_judged_is_unconfirmed():
    # the budget fits the race but not the confirmation, nor a run of both at the next stage: the default's lead
    # alone claims nothing
    result, _, runner, *_ = _tune([Candidate(), AUTOTUNE], {"max-autotune": 1.01}, budget=40.0, seconds=10.0)
    assert result.outcome == UNCONFIRMED and result.confirmation is None and len(runner.runs) == 2
    # the reason gives the two figures, so the user can tell what budget would have fitted it
    assert re.fullmatch(r"the confirmation \(about \d\d s\) does not fit in the 17 s left of the budget",
                        result.stopped), result.stopped


def test_with_one_challenger_left_and_no_room_to_confirm_it_the_race_runs_both_on_where_they_fit():
    """The note said "the race goes on with the time left", and the race ended at once with 73 s of 120 unspent:
    with one challenger left it skipped its next stage even where the confirmation could not follow."""
    result, _, runner, heard, clock = _tune([Candidate(), WRAPPER, AUTOTUNE],
                                            {"cpp_wrapper=True": 1.0, "max-autotune": 1.6}, budget=75.0)
    assert ("stage", 1, ("default", "cpp_wrapper=True"), 160) in heard.events
    assert [_key(o) for o in runner.runs][3:5] == ["default", "cpp_wrapper=True"] and clock.now <= 75.0
    assert result.outcome == UNCONFIRMED and result.confirmation is None
    assert any("the race goes on with the time left" in e[1] for e in heard.events if e[0] == "note")


def test_a_challenger_left_alone_by_the_default_compiles_drop_is_not_raced_on_by_itself():
    # the default is dropped below freezing: racing freezing alone at 160 and 320 iterations compared it with nothing
    result, _, runner, heard, _ = _tune([Candidate(), FREEZE], {"freezing=True": 0.5}, budget=60.0)
    assert [_key(o) for o in runner.runs] == ["default", "freezing=True"]
    assert not [e for e in heard.events if e[0] == "stage" and e[1] > 0]
    assert result.outcome == UNCONFIRMED and result.confirmation is None


def test_the_budget_is_kept_and_no_run_starts_that_would_not_fit():
    many = [Candidate()] + [Candidate((("k", i),)) for i in range(10)]
    times = {f"k={i}": 0.9 - i / 100 for i in range(10)}
    result, _, runner, heard, clock = _tune(many, times, budget=150.0, seconds=10.0)
    assert clock.now <= 150.0
    # 10 s a run (its measuring a little longer at the confirmation's doubled iterations) and a confirmation
    # of six (about 61 s, kept with CONFIRM_MARGIN: 73 s): after 7 screening runs (70 s) the next one and the
    # confirmation no longer fit in the 77 s left
    assert len(runner.runs) == 7 + 6
    assert result.outcome == CONFIRMED
    cut = [s for s in result.standings if s.gone == "cut: not screened (the budget ran out)"]
    assert len(cut) == 4
    assert any(e[0] == "note" and "budget" in e[1] for e in heard.events)


def test_a_budget_that_cut_the_screening_says_what_budget_would_have_done_once():
    # 4 of 11 candidates unscreened at 10 s a run: the note adds their 40 s and the confirmation's margin to
    # the time spent, and rounds up to a whole minute for --budget; the runs' pace said the same budget
    # already, so the race's end does not say it again
    many = [Candidate()] + [Candidate((("k", i),)) for i in range(10)]
    times = {f"k={i}": 0.9 - i / 100 for i in range(10)}
    _, _, _, heard, _ = _tune(many, times, budget=150.0, seconds=10.0)
    (note,) = [e[1] for e in heard.events if e[0] == "note" and "--budget" in e[1]]
    match = re.search(r"about (\d+) s \(--budget (\d+)m\)", note)
    assert match, note
    needed, minutes = int(match[1]), int(match[2])
    assert 70 + 40 + 61 <= needed <= 70 + 40 + 80, note  # spent + the unscreened runs + the kept confirmation
    assert minutes == -(-needed // 60)


def test_a_runs_timeout_within_the_budget_is_whole_seconds():
    # its reproduce command says --timeout 137, not --timeout 137.49999
    _, _, runner, *_ = _tune([Candidate(), FREEZE], {"freezing=True": 0.7}, budget=150.5)
    timeouts = [o.timeout_s for o in runner.runs]
    assert min(timeouts) < 150 and all(t == int(t) and t >= 1 for t in timeouts), timeouts


def test_a_run_longer_than_its_estimate_still_leaves_the_confirmation_room():
    # the eighth run takes 16 s instead of 10. Without a margin the race would have started it as its last
    # screening run with the confirmation's estimate fitting exactly, and the overrun would leave no room for
    # the confirmation; with the margin the race ended after seven, and the eighth run is the confirmation's first
    many = [Candidate()] + [Candidate((("k", i),)) for i in range(10)]
    times = {f"k={i}": 0.9 - i / 100 for i in range(10)}

    class Overrun(TimedRunner):
        async def run(self, record, on_event=None):
            if len(self.runs) == 7:
                self.clock.now += 6.0
            return await super().run(record, on_event)

    result, _, runner, _, clock = _tune(many, times, budget=150.0, seconds=10.0, runner_type=Overrun)
    assert result.outcome == CONFIRMED and result.confirmation.processes == (3, 3)
    assert len(runner.runs) == 7 + 6 and clock.now <= 150.0


def test_a_stop_keeps_the_finished_runs_and_reports_the_best_so_far_unconfirmed():
    result, session, runner, *_ = _tune([Candidate(), FREEZE, AUTOTUNE, FUSION], {"freezing=True": 0.7}, stop_at=3)
    assert result.outcome == UNCONFIRMED and result.stopped == "Ctrl-C" and result.winner.name == "freezing=True"
    assert len(runner.runs) == 3  # nothing started after the stop
    assert [r.status for r in session.ended()][:2] == ["done", "done"]
    assert result.confirmation is None


def test_a_budget_that_leaves_candidates_unscreened_never_says_nothing_beats_the_default():
    many = [Candidate()] + [Candidate((("k", i),)) for i in range(5)]
    result, _, runner, heard, clock = _tune(many, {f"k={i}": 0.99 for i in range(5)}, budget=45.0, seconds=10.0)
    # after two runs a challenger is in the race, but its confirmation (six runs) no longer fits in the 22 s left:
    # the race screens on with the time left rather than ending with it unspent, and never overruns the budget
    assert len(runner.runs) == 4 and clock.now <= 45.0
    assert result.outcome == UNCONFIRMED and result.confirmation is None
    assert result.incomplete == "the budget ran out before 2 candidate(s) were screened"
    notes = [e[1] for e in heard.events if e[0] == "note"]
    said = [n for n in notes if "no longer fits" in n]
    assert len(said) == 1 and re.fullmatch(r"the confirmation \(about \d+ s\) no longer fits in the 2\d s left of "
                                           r"the budget: the race goes on with the time left, and its answer will "
                                           r"be unconfirmed unless a shorter estimate \(another winner\) makes it "
                                           r"fit again", said[0]), notes
    # the race's end names the run alone: no confirmation is kept for
    assert any(n.startswith("screening: the next run (about 10 s) does not fit in the") for n in notes), notes


def test_no_room_is_kept_for_confirming_a_challenger_the_stage_will_drop():
    """The race kept the confirmation's room for max-autotune, clearly below the default compile and so never to be
    confirmed: with 70 s left it ended its screening, 2 candidates unscreened, and the stage then dropped it, so
    nothing was confirmed and the budget went unspent."""
    result, _, runner, heard, clock = _tune([Candidate(), AUTOTUNE, FREEZE, WRAPPER],
                                            {"max-autotune": 1.6, "freezing=True": 0.99, "cpp_wrapper=True": 0.99},
                                            budget=90.0, seconds=10.0)
    assert result.incomplete is None and clock.now <= 90.0, result.incomplete
    assert [_key(o) for o in runner.runs][:4] == ["default", "max-autotune", "freezing=True", "cpp_wrapper=True"]
    assert next(s for s in result.standings if s.name == "max-autotune").gone.startswith("dropped: below ")


def test_a_confirmation_that_no_longer_fits_is_not_said_to_go_on_when_the_next_run_does_not_fit_either():
    # after two runs (20 s) 2 s are left: the confirmation does not fit, and neither does the next run, so the race
    # ends; "the race goes on with the time left" would be untrue, and the note that ends the race says why
    many = [Candidate()] + [Candidate((("k", i),)) for i in range(5)]
    result, _, runner, heard, _ = _tune(many, {f"k={i}": 0.7 for i in range(5)}, budget=25.0, seconds=10.0)
    assert len(runner.runs) == 2 and result.confirmation is None
    notes = [e[1] for e in heard.events if e[0] == "note"]
    assert not [n for n in notes if "no longer fits" in n], notes
    assert "screening: the next run (about 10 s) does not fit in the 2 s left of the budget; the race ends here" \
        in notes
    assert re.fullmatch(r"the confirmation \(about \d+ s\) does not fit in the 2 s left of the budget", result.stopped)


class SlowAutotune(TimedRunner):
    """max-autotune's runs take 40 s more than the others' (its autotuning)."""

    slow, extra_s = "max-autotune", 40.0

    async def run(self, record, on_event=None):
        if _key(record.options) == self.slow:
            self.clock.now += self.extra_s
        return await super().run(record, on_event)


def test_a_known_candidates_next_run_and_the_confirmation_are_estimated_from_its_own_runs():
    # default, freezing and cpp_wrapper take 10 s a run, max-autotune (the winner) 50 s: every run's mean (20 s)
    # would let stage 2's max-autotune run start in the 17 s left and end 33 s past the budget, and would put the
    # confirmation's 3 + 3 runs at 120 s where they take 3 x 50 + 3 x 10 = 180 s
    times = {"max-autotune": 0.5, "freezing=True": 0.9, "cpp_wrapper=True": 0.95}
    result, _, runner, heard, clock = _tune([Candidate(), AUTOTUNE, FREEZE, WRAPPER], times, budget=100.0,
                                            seconds=10.0, runner_type=SlowAutotune)
    assert clock.now <= 100.0 and len(runner.runs) == 4
    notes = [e[1] for e in heard.events if e[0] == "note"]
    assert "stage 2: the next run (about 50 s) does not fit in the 17 s left of the budget; the race ends here" in notes
    found = re.fullmatch(r"the confirmation \(about (\d+) s\) does not fit in the \d+ s left of the budget",
                         result.stopped or "")
    assert found and 175 <= int(found[1]) <= 190, result.stopped


def test_the_race_never_says_it_goes_on_without_the_confirmations_room_when_its_next_run_does_not_fit():
    # after two runs (20 s) 9 s are left: the confirmation (61 s) no longer fits, nor does the next run (10 s). The
    # race ends there, with the note that says so, and no note that it goes on
    many = [Candidate()] + [Candidate((("k", i),)) for i in range(5)]
    result, _, runner, heard, _ = _tune(many, {f"k={i}": 0.9 for i in range(5)}, budget=32.0, seconds=10.0)
    notes = [e[1] for e in heard.events if e[0] == "note"]
    assert len(runner.runs) == 2 and result.outcome == UNCONFIRMED
    assert "screening: the next run (about 10 s) does not fit in the 9 s left of the budget; the race ends here" \
        in notes
    assert not [n for n in notes if "goes on" in n], notes


def test_the_note_that_drops_the_confirmations_room_promises_nothing_a_cheaper_winner_undoes():
    # max-autotune (50 s a run) leads the screening: its confirmation (3 x 50 + 3 x 10 s) no longer fits, and the
    # race screens on. Its next runs are slower (its three processes 4.0x, 0.67x and 0.67x over eager: 1.2x as a
    # group, their geometric mean): a combination with 10 s runs wins, whose confirmation fits and runs
    times = {"max-autotune": lambda n: 0.5 if n == 1 else 3.0, "freezing=True": 0.7}
    result, _, runner, heard, clock = _tune([Candidate(), AUTOTUNE, FREEZE], times, budget=210.0, seconds=10.0,
                                            runner_type=SlowAutotune)
    notes = [e[1] for e in heard.events if e[0] == "note"]
    said = [n for n in notes if "no longer fits" in n]
    assert said == ["the confirmation (about 181 s) no longer fits in the 147 s left of the budget: the race goes on "
                    "with the time left, and its answer will be unconfirmed unless a shorter estimate (another "
                    "winner) makes it fit again"], notes
    assert result.confirmation is not None and result.confirmation.processes == (3, 3) and clock.now <= 210.0


def test_calls_charge_the_compile_time_and_a_slow_compile_loses_a_short_job():
    times = {"freezing=True": (0.7, 5.0)}  # 30% faster a call, 4.5 s more to compile
    long_job, *_ = _tune([Candidate(), FREEZE], times, objective=Objective(calls=10**7))
    assert long_job.outcome == CONFIRMED and long_job.confirmation.amortized_gain == pytest.approx(1 / 0.7, rel=0.02)
    short_job, _, runner, *_ = _tune([Candidate(), FREEZE], times, objective=Objective(calls=1000))
    # per call: default 1 ms + 0.5 ms of compile, freezing 0.7 + 5 ms: the default leads and nothing is confirmed
    assert short_job.outcome == NOTHING_BEATS and len(runner.runs) == 2
    scores = {s.name: s.score.value for s in short_job.standings}
    assert scores["default"] == pytest.approx(2 / 1.5, rel=0.02) and scores["freezing=True"] == pytest.approx(
        2 / 5.7, rel=0.02)


def test_the_host_objective_reads_host_time_and_confirms_with_compares_host_metric():
    result, *_ = _tune([Candidate(), FREEZE], {"freezing=True": 0.7}, objective=Objective(kind="host"))
    assert result.outcome == CONFIRMED
    gain = result.confirmation.vs_default
    # the compiled host time's ratio (NEW / BASE = 0.7) read as how many times faster: 1 / 0.7, interval inverted
    assert gain.gain == pytest.approx(1 / 0.7, rel=0.02) and gain.low <= gain.gain <= gain.high


def test_the_note_that_ends_the_race_never_shows_negative_seconds_and_names_what_did_not_fit():
    # a budget below the closing reserve: no run fits, and the time left reads 0 s, never "-1 s"
    result, _, runner, heard, _ = _tune([Candidate(), FREEZE], {}, budget=2.0)
    notes = [e[1] for e in heard.events if e[0] == "note"]
    assert runner.runs == []
    assert notes == ["screening: no time left for a run (0 s left of the budget); the race ends here"]
    # with a challenger in the race, the note names the run and the confirmation kept for after it, as _fits
    # weighed them (the old note spoke of "a candidate other than the default" leading, whoever led)
    many = [Candidate()] + [Candidate((("k", i),)) for i in range(10)]
    _, _, _, heard, _ = _tune(many, {f"k={i}": 0.9 - i / 100 for i in range(10)}, budget=150.0, seconds=10.0)
    ends = [e[1] for e in heard.events if e[0] == "note" and e[1].endswith("the race ends here")]
    assert len(ends) == 1
    found = re.fullmatch(r"screening: the next run \(about 10 s\) and the confirmation after it \(about (\d+) s, "
                         r"kept as (\d+) s with its margin\) do not fit in the (\d+) s left of the budget; the race "
                         r"ends here", ends[0])
    assert found, ends
    confirmation, kept, left = map(int, found.groups())
    assert 10 + kept > left and kept > confirmation  # the figures add up to "do not fit"


def test_a_stop_never_says_the_budget_ran_out_for_the_candidates_it_kept_from_running():
    from tui.present.tune_answer import answer_text, standing_rows, cut_short

    result, *_ = _tune([Candidate(), FREEZE, AUTOTUNE, FUSION], {"freezing=True": 0.7}, stop_at=3)
    rows = {name: standing for name, _, _, standing in standing_rows(result.standings, cut_short(result))}
    assert rows["aggressive_fusion=True"] == "in the race, never run (Ctrl-C)"
    assert "budget" not in answer_text(result)
    # a race the budget ended still says so
    many = [Candidate()] + [Candidate((("k", i),)) for i in range(5)]
    result, *_ = _tune(many, {f"k={i}": 1.5 for i in range(5)}, budget=45.0, seconds=10.0)
    assert cut_short(result) == "the budget ran out"


def test_a_budget_too_short_to_screen_the_space_is_said_as_the_second_run_ends():
    """A short budget said nothing until the race was cut; the second run's end is the first moment its cost is
    known (the first run pays once for a cold start), and one note then says the budget cannot screen the space,
    and what would."""
    many = [Candidate()] + [Candidate((("k", i),)) for i in range(10)]
    times = {f"k={i}": 0.9 - i / 100 for i in range(10)}
    _, _, _, heard, _ = _tune(many, times, budget=90.0, seconds=10.0)
    notes = [e[1] for e in heard.events if e[0] == "note"]
    early = [n for n in notes if n.startswith("at the runs' pace")]
    assert len(early) == 1 and notes.index(early[0]) == 0, notes  # the first note, before the race was cut
    match = re.search(r"about 10 s a run\) the 90 s budget may not screen all 11 candidates .* about (\d+) s "
                      r"\(--budget (\d+)m\), so the race may be cut short", early[0])
    assert match, early[0]
    assert 10 + 100 + 61 <= int(match[1]) <= 10 + 100 + 80 and int(match[2]) == -(-int(match[1]) // 60)
    stages = [i for i, e in enumerate(heard.events) if e[0] == "stage"]
    # said in the screening, after its second run
    assert heard.events.index(("note", early[0])) > stages[0], heard.events


def test_a_budget_that_screens_the_space_says_nothing_about_its_pace():
    many = [Candidate()] + [Candidate((("k", i),)) for i in range(3)]
    _, _, _, heard, _ = _tune(many, {}, budget=10_000.0, seconds=10.0)
    assert not [e for e in heard.events if e[0] == "note" and "pace" in e[1]]


def test_a_note_shows_a_decimal_where_the_figures_it_compares_round_to_the_same_second():
    # after two runs of 7.4 s, 6.6 s are left: "the next run (about 7 s) does not fit in the 7 s left" read as a
    # contradiction; the figures that round alike are shown to a tenth
    many = [Candidate()] + [Candidate((("k", i),)) for i in range(5)]
    _, _, runner, heard, _ = _tune(many, {f"k={i}": 0.9 for i in range(5)}, budget=3.0 + 2 * 7.4 + 6.6, seconds=7.4)
    notes = [e[1] for e in heard.events if e[0] == "note"]
    assert len(runner.runs) == 2
    assert "screening: the next run (about 7.4 s) does not fit in the 6.6 s left of the budget; the race ends here" \
        in notes, notes
    # figures that round apart stay whole seconds (the other notes above)
    assert seconds_apart((7.4,), 6.6) == 1 and seconds_apart((9.6,), 6.6) == 0
    # a sum, as a reader adds the figures shown: 3 s + 6 s "do not fit" in 9 s reads wrong; 3.4 + 5.6 = 9.0 > 8.6
    assert seconds_apart((3.4, 5.6), 8.6) == 1 and seconds_apart((7.44,), 7.41) == 2


class HangsAtThird(TimedRunner):
    """The third run hangs (as a long compile would) until it is cancelled."""

    async def run(self, record, on_event=None):
        if len(self.runs) == 2:
            self.runs.append(record.options)
            record.apply(make_event("started", 0.0, env={"torch": "2.13.0"}))
            if self.before is not None:
                self.before(len(self.runs))
            await asyncio.Event().wait()
        return await super().run(record, on_event)


def _stopped_rows(result):
    from tui.present.tune_answer import closing_line, cut_short, standing_rows

    rows = {name: standing for name, _, _, standing in standing_rows(result.standings, cut_short(result))}
    return rows, closing_line(result)


def test_a_candidate_whose_run_a_stop_cancelled_reads_stopped_and_is_counted_apart():
    """Both front ends' way (the app's, the CLI's after Ctrl-C): the stop lands in the third run (max-autotune's
    screening), the driver's run ends once the cancel has: that candidate's run was stopped, not "never run", and
    the count says so."""
    result, session, *_ = _tune([Candidate(), FREEZE, AUTOTUNE, FUSION], {"freezing=True": 0.7}, stop_at=3,
                                runner_type=HangsAtThird)
    rows, closing = _stopped_rows(result)
    assert rows["max-autotune"] == "in the race, its screening run was stopped (Ctrl-C)", rows
    assert rows["aggressive_fusion=True"] == "in the race, never run (Ctrl-C)"
    assert (result.runs, result.stopped_runs) == (2, 1)
    assert ": 2 run(s) ended on their own, 1 stopped, " in closing and " s in all; " in closing
    cancelled = next(r for r in session.records if r.options.mode == "max-autotune")
    assert (cancelled.status, cancelled.error_message) == ("cancelled", "the tune was stopped (Ctrl-C)")


def test_a_stopped_search_read_before_the_cancel_lands_reads_as_after_it():
    """A result read while the cancelled run has not ended yet (the CLI's once its wait for the stopped runs ran
    out, tui.cli.tune._search; the app's as it closes): the driver's task cancelled, the driver stopped and its
    result read at once: the same rows and the same count."""
    clock, heard = Clock(), Heard()
    runner = HangsAtThird(clock, {"freezing=True": 0.7})

    async def go():
        session = RunSession(lambda lane: runner, None)
        driver = TuneDriver(session, BASE, [Candidate(), FREEZE, AUTOTUNE, FUSION], DEVICE_TIME, 10_000.0,
                            listener=heard, clock=clock, tune_id="tune-1")
        task = asyncio.create_task(driver.run())
        while len(runner.runs) < 3:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        driver.stop("Ctrl-C")
        result = driver.result()
        await session.aclose()
        return result

    result = asyncio.run(go())
    rows, closing = _stopped_rows(result)
    assert rows["max-autotune"] == "in the race, its screening run was stopped (Ctrl-C)", rows
    assert (result.runs, result.stopped_runs) == (2, 1)
    assert ": 2 run(s) ended on their own, 1 stopped, " in closing and " s in all; " in closing


def test_a_run_cut_by_the_budgets_end_is_not_a_failure_and_leaves_the_screening_incomplete():
    # Its timeout was the budget's time left (300 s, below --timeout 600): the budget ran out, the candidate
    # did not fail, and it was not screened.
    result, _, runner, _, _ = _tune([Candidate(), FREEZE, WRAPPER], {"cpp_wrapper=True": "timeout"}, budget=300.0)
    gone = {s.name: s.gone for s in result.standings}
    assert gone["cpp_wrapper=True"] == "cut: its screening run reached the budget's end (the budget ran out)"
    assert result.outcome == UNCONFIRMED and "before 1 candidate(s) were screened" in (result.incomplete or "")
    # At its own --timeout (the budget far from its end) a timeout is the candidate's failure, as before.
    result, *_ = _tune([Candidate(), FREEZE, WRAPPER], {"cpp_wrapper=True": "timeout"},
                       base=dataclasses.replace(BASE, timeout_s=60.0))
    gone = {s.name: s.gone for s in result.standings}
    assert gone["cpp_wrapper=True"].startswith("out: failed: timed out after 60 s")


class FakeWorkers(WorkerRunner):
    """The real runner on the fake worker whose profile pass never ends (``hang_profiling``); ``before`` as the
    TimedRunner's. The clock stays: every run's timeout is the budget's time left, in whole seconds."""

    def __init__(self, clock: Clock, times: dict, seconds: float, before=None) -> None:
        super().__init__(worker_argv=fake_worker_argv(), keep_spare=False, sample_host=False,
                         env={"FAKE_WORKER_BEHAVIOUR": "hang_profiling"})
        self.before, self.runs = before, []

    async def run(self, record, on_event=None):
        self.runs.append(record.options)
        if self.before is not None:
            self.before(len(self.runs))
        return await super().run(record, on_event)


def test_a_screening_run_the_budgets_end_cut_in_its_profile_pass_is_measured_and_screened():
    # 1 s of the budget left for runs: each screening run (a candidate's first: it has the profile pass) gets a 1 s
    # timeout, below --timeout 600, and its profile pass outlasts it. Its measurement came before: the candidate is
    # screened, not "cut" (the stop as the confirmation starts keeps the test short).
    base = dataclasses.replace(BASE, iters=20, block_size=5, profile=True)
    result, session, runner, _, _ = _tune([Candidate(), FREEZE], {}, budget=CLOSING_S + 1.5, base=base, stop_at=3,
                                          runner_type=FakeWorkers)
    assert [(s.gone, s.screened and s.screened.processes) for s in result.standings] == [(None, 1)] * 2
    assert result.incomplete is None and not any("budget" in note for note in result.notes), result.notes
    assert result.runs == 2
    screening = [r for r in session.records if r.tune_stage == "screening"]
    assert [r.options.timeout_s for r in screening] == [1.0, 1.0]
    assert [(r.status, r.profile and r.profile.why) for r in screening] == [
        ("done", "the profile pass did not end within the run's timeout (1 s)")] * 2


class StoppedInItsProfilePass(TimedRunner):
    """freezing=True's worker hangs in its profile pass, after its measurement: the driver is stopped then, ``cut``
    seconds into the run (where the others take ``seconds``), and the cancel ends it as the runner's keep does
    (tui.engine.run.kept): done on its measurement."""

    cut = 2.0

    def __init__(self, clock: Clock, times: dict, seconds: float = 10.0, stop=None) -> None:
        super().__init__(clock, times, seconds)
        self.stop = stop

    async def after_measured(self, record) -> None:
        if _key(record.options) != "freezing=True":
            return await super().after_measured(record)
        self.clock.now += self.cut - self.seconds
        self.stop()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            for event in kept_events(record, CANCELLED_THEN):
                record.apply(event)
            assert record.end_measured()
            raise


def test_a_run_stopped_after_its_measurement_is_scored_and_counts_as_at_least_its_estimate():
    # The default compile takes 10 s; freezing=True's screening run is stopped 2 s in, in its profile pass. It ends
    # done on its measurement: the driver scores it (the answer reads it as the history does), and the duration
    # model takes it as a run that would have gone on: at least the 10 s its estimate said, not a 2 s run (its
    # candidate's own estimate would then read 2 s).
    clock, made = Clock(), {}
    runner = StoppedInItsProfilePass(clock, {"freezing=True": 0.7}, stop=lambda: made["driver"].stop("Ctrl-C"))

    async def go():
        session = RunSession(lambda lane: runner, None)
        driver = made["driver"] = TuneDriver(session, BASE, [Candidate(), FREEZE, AUTOTUNE], DEVICE_TIME, 10_000.0,
                                             clock=clock, tune_id="tune-1")
        try:
            return await driver.run(), session
        finally:
            await session.aclose()

    result, session = asyncio.run(go())
    assert [(r.status, r.kept) for r in session.records] == [("done", False), ("done", True)]
    assert (result.runs, result.stopped_runs, result.stopped) == (2, 0, "Ctrl-C")
    assert result.winner is not None and result.winner.name == "freezing=True"
    assert [(s.name, s.score.processes) for s in result.standings if s.score.value is not None] == [
        ("default", 1), ("freezing=True", 1)]
    assert clock.now == pytest.approx(12.0)
    durations = made["driver"].durations
    assert durations.estimate(BASE.iters, "default") == pytest.approx(10.0)
    assert durations.estimate(BASE.iters, "freezing=True") == pytest.approx(10.0)


def test_the_combination_joins_the_race_with_a_note_naming_the_candidates_it_combines():
    # a mode brings settings of its own (max-autotune: coordinate_descent_tuning, ...): the note names the two
    # candidates that beat the default compile, not their settings, which need not have beaten it alone
    result, _, runner, heard, _ = _tune([Candidate(), FREEZE, AUTOTUNE], {"freezing=True": 0.8, "max-autotune": 0.8})
    notes = [e[1] for e in heard.events if e[0] == "note" and e[1].startswith("added ")]
    combined = [s.name for s in result.standings if s.name not in ("default", "freezing=True", "max-autotune")]
    assert combined == ["max-autotune freezing=True"]
    assert notes == ["added max-autotune freezing=True: freezing=True + max-autotune, the 2 candidates that each beat "
                     "the default compile, combined"], notes
    assert any(o.inductor_options.get("freezing") and o.inductor_options.get("max_autotune") for o in runner.runs)


def test_a_leading_defaults_challenger_too_slow_to_confirm_gives_way_to_one_the_race_could_not_tell_apart():
    """On the H200 (BENCHMARKS §30) the 8192 GEMM's race kept the room of max-autotune-no-cudagraphs' confirmation (a
    24 s compile a process), tied with the default compile and reduce-overhead at 1.00x: it ended after 3 of 14
    screening runs. Here max-autotune (50 s a run, screened third) leads the default's challengers by its point
    estimate; freezing and the rest (10 s) read within 2% of it: the race keeps the cheapest room, screens every
    candidate, and confirms the best challenger whose confirmation fits, saying in whose place."""
    others = [Candidate((("k", i),)) for i in range(6)]
    times = {"max-autotune": 0.99, "freezing=True": 0.995, **{f"k={i}": 1.0 for i in range(6)}}
    result, _, runner, heard, clock = _tune([Candidate(), FREEZE, AUTOTUNE, *others], times, budget=250.0,
                                            seconds=10.0, runner_type=SlowAutotune)
    screened = [_key(o) for o in runner.runs][:9]
    assert sorted(screened) == sorted(["default", "max-autotune", "freezing=True", *[f"k={i}" for i in range(6)]])
    assert result.incomplete is None and clock.now <= 250.0
    assert result.winner.candidate.is_default and result.outcome == NOTHING_BEATS
    confirmed = result.confirmed.name
    assert confirmed != "max-autotune" and ("confirming", confirmed, 3) in heard.events
    [note] = [n for n in result.notes if "in its place" in n]
    assert re.fullmatch(rf"the confirmation of max-autotune \(about \d+ s\) does not fit in the \d+ s left of the "
                        rf"budget: {re.escape(confirmed)}, within 2% of it in the race, is confirmed in its place",
                        note), note


def test_the_best_challenger_is_confirmed_where_its_confirmation_fits():
    times = {"max-autotune": 0.99, "freezing=True": 0.995}
    result, *_ = _tune([Candidate(), AUTOTUNE, FREEZE], times, budget=10_000.0, runner_type=SlowAutotune)
    assert result.confirmed.name == "max-autotune"
    assert not [n for n in result.notes if "in its place" in n]


class SlowWrapper(SlowAutotune):
    """cpp_wrapper's runs take 50 s more than the others' (its compile, 45 s)."""

    slow, extra_s = "cpp_wrapper=True", 50.0


def test_among_candidates_the_race_cannot_tell_apart_the_slow_compile_neither_wins_nor_takes_the_budget():
    """The transformer block on the H200 (BENCHMARKS §30): every candidate at 1.01x over eager, the default compile
    cut after the screening, and cpp_wrapper=True (a 53 s compile), screened late, the best point estimate by a hair:
    it won the race, its confirmation no longer fitted, and the search ended unconfirmed with 1 s compiles as fast."""
    others = [Candidate((("k", i),)) for i in range(4)]
    times = {"default": 1.004, "cpp_wrapper=True": (0.996, 45.0), "freezing=True": (0.998, 1.0),
             **{f"k={i}": (0.999, 1.0) for i in range(4)}}
    result, _, runner, heard, clock = _tune([Candidate(), FREEZE, *others, WRAPPER], times, budget=300.0,
                                            seconds=10.0, runner_type=SlowWrapper)
    assert ("stage", 2, ("k=0", "cpp_wrapper=True"), 320) in heard.events  # it raced to the end
    wrapper = next(s for s in result.standings if s.name == "cpp_wrapper=True")
    assert wrapper.alive and wrapper.score.value > result.winner.score.value  # the best point estimate, not the winner
    assert result.winner.name == result.confirmed.name == "k=0" and clock.now <= 300.0
    assert result.outcome == NOTHING_BEATS and result.confirmation.processes == (3, 3)


def test_a_contender_whose_room_the_race_kept_stays_confirmable_after_halving_cuts_it():
    """The race kept freezing's room (about 60 s) for a leading default compile's confirmation, and halving then cut
    freezing (ranked 3 of 3 after stage 2): only max-autotune's confirmation (about 180 s) was left, and the search
    ended unconfirmed with 107 s unspent. A cut means fewer runs to spend, not worse: freezing, within 2% of
    max-autotune, is still confirmed in its place."""
    others = [Candidate((("k", i),)) for i in range(3)]
    times = {"default": 0.99, "max-autotune": (0.995, 40.0), "freezing=True": 0.997,
             **{f"k={i}": 1.005 for i in range(3)}}
    result, _, runner, heard, clock = _tune([Candidate(), FREEZE, AUTOTUNE, *others], times, budget=340.0,
                                            seconds=10.0, runner_type=SlowAutotune)
    freezing = next(s for s in result.standings if s.name == "freezing=True")
    assert freezing.gone is not None and freezing.gone.startswith("cut: ranked")
    assert result.outcome == NOTHING_BEATS and result.confirmed.name == "freezing=True", result.stopped
    assert any("is confirmed in its place" in n for n in result.notes) and clock.now <= 340.0
