"""The tuner on several lanes: a GPU pool of one kind and a Ray cluster's lanes, with in-process runners and a
fake clock (runs beside each other overlap on it): stages go out one run per lane, the confirmation runs in
matched pairs, the budget counts the lanes, a pool of several GPU kinds is refused in one line, ``--cluster``
deals the search to the cluster's lanes."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re

import pytest
from test_tune_driver import BASE, DEVICE_TIME, FREEZE, AUTOTUNE, Clock, Heard, TimedRunner, _key, _tune
from test_cluster_torch_probe import HERE, ProbeTransport, node_answer
from tui import cli
from tui.engine import cluster
from tui.engine.cluster.runner import ClusterRunner
from tui.engine.run.session import CLUSTER_LANE, RunSession
from tui.engine.tune import probe as probe_module
from tui.engine.tune.answer import CONFIRMED
from tui.engine.tune.driver import CLOSING_S, TuneDriver
from tui.engine.tune.parallel import DEFAULT, WINNER, confirm_waves
from tui.engine.runner.torch_probe import TorchOptions
from tui.engine.tune.space import Candidate
from tui.telemetry.fake import FakeSource

POOL = ("cuda:0", "cuda:1", "cuda:2", "cuda:3")
ON_GPU = dataclasses.replace(BASE, device="cuda")


class LaneRunner(TimedRunner):
    """TimedRunner whose runs overlap: each takes ``seconds`` of the shared fake clock from its start, however many
    run at once, and the clock shows the latest end so far. ``starts``: (fake time, device, configuration) of each
    run; ``most``: the most runs at once; ``before``: called with the count of runs started, as each starts (a
    cancel then ends that run before it measures)."""

    def __init__(self, clock: Clock, times: dict, seconds: float = 10.0, before=None) -> None:
        super().__init__(Clock(), times, seconds)  # TimedRunner moves its own clock on: a scratch one here
        self.wall = clock
        self.starts: list[tuple[float, str, str]] = []
        self.going = self.most = 0
        self.hook = before

    async def run(self, record, on_event=None):
        start = self.wall.now
        self.starts.append((start, record.options.device, _key(record.options)))
        self.going += 1
        self.most = max(self.most, self.going)
        if self.hook is not None:
            self.hook(len(self.starts))
        try:
            await asyncio.sleep(0)  # a yield: the runs the session started together all begin before one ends
            return await super().run(record, on_event)
        finally:
            self.going -= 1
            self.wall.now = max(self.wall.now, start + self.seconds)


class TimedHeard(Heard):
    """Heard, with the fake time of each stage's start and of the confirmation's."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock
        self.at: dict[str, float] = {}

    def stage_started(self, index, names, iters):
        super().stage_started(index, names, iters)
        self.at[f"stage {index}"] = self.clock.now

    def confirming(self, standing, repeats):
        super().confirming(standing, repeats)
        self.at["confirming"] = self.clock.now


def _tune_on(pool, candidates, times, budget=10_000.0, seconds=10.0, stop_at=None):
    """Race ``candidates`` on ``pool`` with a LaneRunner; ``stop_at``: the driver is stopped as that run starts."""
    return _tune(candidates, times, budget, seconds, stop_at, base=ON_GPU, pool=pool, runner_type=LaneRunner,
                 heard_type=TimedHeard)


def test_the_confirmations_waves_are_matched_pairs_on_a_pool_and_alternate_on_one_lane():
    assert confirm_waves(3, 1) == [[(0, WINNER)], [(0, DEFAULT)], [(1, WINNER)], [(1, DEFAULT)], [(2, WINNER)],
                                   [(2, DEFAULT)]]
    assert confirm_waves(3, 2) == confirm_waves(3, 3) == [[(0, WINNER), (0, DEFAULT)], [(1, DEFAULT), (1, WINNER)],
                                                          [(2, WINNER), (2, DEFAULT)]]
    assert confirm_waves(3, 4) == [[(0, WINNER), (0, DEFAULT), (1, DEFAULT), (1, WINNER)],
                                   [(2, WINNER), (2, DEFAULT)]]
    assert len(confirm_waves(3, 8)) == 1
    # the repeats an inconclusive confirmation adds: numbered on from the first three, pairs swapped alike
    assert confirm_waves(5, 1, first=3) == [[(3, WINNER)], [(3, DEFAULT)], [(4, WINNER)], [(4, DEFAULT)]]
    assert confirm_waves(5, 4, first=3) == [[(3, DEFAULT), (3, WINNER), (4, WINNER), (4, DEFAULT)]]
    assert confirm_waves(3, 4, first=3) == []


def test_a_pool_of_four_screens_eight_candidates_in_two_waves_one_run_per_gpu():
    eight = [Candidate()] + [Candidate((("k", i),)) for i in range(7)]
    result, session, runner, heard, clock = _tune_on(POOL, eight, {f"k={i}": 0.9 - i / 100 for i in range(7)})
    screening = runner.starts[:8]
    assert [start for start, *_ in screening] == [0.0] * 4 + [10.0] * 4
    for wave in (screening[:4], screening[4:]):
        assert sorted(device for _, device, _ in wave) == list(POOL)  # each GPU ran one run of the wave
    assert heard.at["stage 1"] == 20.0  # 8 runs in the time of 2, not 8
    assert runner.most == 4
    assert max(r.concurrent_runs for r in session.records) == 3  # flagged: measured beside others
    assert result.outcome == CONFIRMED and {r.tune_id for r in session.records} == {"tune-1"}


def test_the_confirmation_runs_the_winner_and_the_default_in_matched_pairs_side_by_side():
    result, session, runner, heard, clock = _tune_on(POOL, [Candidate(), FREEZE, AUTOTUNE],
                                                     {"freezing=True": 0.7, "max-autotune": 1.6})
    assert result.outcome == CONFIRMED and result.winner.name == "freezing=True"
    assert result.confirmation.processes == (3, 3)
    confirmation = runner.starts[3:]
    assert heard.at["confirming"] == 10.0  # the screening's one wave
    # two waves: two pairs side by side, then one pair; each pair one winner and one default compile
    assert [(start, key) for start, _, key in confirmation] == [
        (10.0, "freezing=True"), (10.0, "default"), (10.0, "default"), (10.0, "freezing=True"),
        (20.0, "freezing=True"), (20.0, "default")]
    records = session.records[3:]
    by_side = {side: sorted(r.concurrent_runs for r in records if _key(r.options) == key)
               for side, key in ((WINNER, "freezing=True"), (DEFAULT, "default"))}
    assert by_side[WINNER] == by_side[DEFAULT] == [1, 3, 3]  # every winner process has a default one beside alike
    assert {r.options.device for r in records if _key(r.options) == "freezing=True"} == {"cuda:0", "cuda:3"}
    assert len({r.group_id for r in records}) == 2 and clock.now == 30.0


def test_the_budget_counts_the_lanes_and_no_run_starts_that_would_not_fit():
    many = [Candidate()] + [Candidate((("k", i),)) for i in range(10)]
    budget = 50.0
    result, session, runner, heard, clock = _tune_on(POOL, many, {f"k={i}": 0.9 - i / 100 for i in range(10)},
                                                     budget=budget)
    # two screening waves (20 s); a third run (10 s) and the 2 confirmation waves kept for after it (about 21 s,
    # 25 s with CONFIRM_MARGIN) do not fit in the 27 s left for runs. On one lane the confirmation alone (6 runs,
    # about 63 s) would not have fitted.
    assert len(runner.runs) == 8 + 6 and clock.now == 40.0 <= budget
    assert result.outcome == CONFIRMED
    assert len([s for s in result.standings if s.gone == "cut: not screened (the budget ran out)"]) == 3
    assert any(e[0] == "note" and "budget" in e[1] for e in heard.events)
    for (start, *_), options in zip(runner.starts, runner.runs, strict=True):  # each timeout within the time left
        assert options.timeout_s <= budget - CLOSING_S - start


class GatedRunner(LaneRunner):
    """LaneRunner whose ``k=1`` runs take 40 s and end only once ``gate`` is set (the others end first)."""

    def __init__(self, clock: Clock, times: dict, seconds: float = 10.0, before=None) -> None:
        super().__init__(clock, times, seconds, before)
        self.gate = asyncio.Event()

    async def run(self, record, on_event=None):
        if _key(record.options) != "k=1":
            return await super().run(record, on_event)
        start = self.wall.now
        await self.gate.wait()
        try:
            return await TimedRunner.run(self, record, on_event)
        finally:
            self.wall.now = max(self.wall.now, start + 40.0)


def test_the_note_that_ends_the_race_on_a_pool_says_what_the_budget_check_saw():
    """The note was made once the runs still going had ended: by then the time left and the estimates had moved, and
    it named figures the check never weighed (a 20 s run against 17 s left, where a 10 s run and the confirmation's
    room did not fit in 37 s)."""
    made = {}

    def runner_type(*args):
        made["runner"] = GatedRunner(*args)
        return made["runner"]

    class Releasing(TimedHeard):  # k=1's 40 s run ends once k=0 is scored (and the race has decided on k=2)
        def candidate_scored(self, standing):
            if standing.name == "k=0":
                made["runner"].gate.set()

    # two lanes: the default (10 s) and k=1 (40 s) start at 0; k=0 runs from 10 to 20; at 20 s, k=2 (10 s) and the
    # confirmation's three waves of 10 s, kept as 36 s, do not fit in the 37 s left; k=1 ends at 40
    four = [Candidate(), Candidate((("k", 1),)), Candidate((("k", 0),)), Candidate((("k", 2),))]
    result, _, runner, heard, clock = _tune(four, {"k=0": 0.8, "k=1": 0.9, "k=2": 0.9}, budget=60.0, base=ON_GPU,
                                            pool=POOL[:2], runner_type=runner_type, heard_type=Releasing)
    assert clock.now == 40.0 and len(runner.runs) == 3
    ends = [e[1] for e in heard.events if e[0] == "note" and e[1].endswith("the race ends here")]
    assert len(ends) == 1
    found = re.fullmatch(r"screening: the next run \(about 10 s\) and the confirmation after it \(about (\d+) s, "
                         r"kept as (\d+) s with its margin\) do not fit in the 37 s left of the budget; "
                         r"the race ends here",
                         ends[0])
    assert found and 30 <= int(found[1]) <= 31 and 10 + int(found[2]) > 37, ends


class SimRunner(TimedRunner):
    """Runs on a simulated clock: a run of configuration ``key`` takes ``durations[key]`` (else ``seconds``) of the
    shared fake clock from its start, and the runs end one at a time in the order of their ends on it: the one going
    that ends first ends when its session is waited on (:class:`SimSession`), once the runs waited for have started.
    ``starts``: (fake time, device, configuration) of each run."""

    def __init__(self, clock: Clock, times: dict, durations: dict, seconds: float = 10.0) -> None:
        super().__init__(Clock(), times, seconds)  # TimedRunner moves its own clock on: a scratch one here
        self.wall, self.durations = clock, durations
        self.starts: list[tuple[float, str, str]] = []
        self.going: dict[str, tuple[float, object, asyncio.Future]] = {}
        self.changed: asyncio.Event | None = None

    def _changed(self) -> asyncio.Event:
        if self.changed is None:  # made in the session's event loop
            self.changed = asyncio.Event()
        return self.changed

    async def run(self, record, on_event=None):
        key = _key(record.options)
        self.starts.append((self.wall.now, record.options.device, key))
        turn = asyncio.get_running_loop().create_future()
        self.going[record.run_id] = (self.wall.now + self.durations.get(key, self.seconds), record, turn)
        self._changed().set()
        try:
            await turn
        finally:
            end, *_ = self.going.pop(record.run_id)
        self.wall.now = max(self.wall.now, end)
        return await super().run(record, on_event)

    async def end_next(self, records):
        """Once every one of ``records`` not ended has started, end the run going that ends first; its record."""
        changed = self._changed()
        while any(not r.finished and r.run_id not in self.going for r in records):
            changed.clear()
            await changed.wait()
        _, record, turn = min(self.going.values(), key=lambda going: going[0])
        turn.set_result(None)
        return record


class SimSession(RunSession):
    """A RunSession whose waits end its :class:`SimRunner`'s runs, one at a time, in the order of their ends."""

    def __init__(self, runner: SimRunner) -> None:
        super().__init__(lambda lane: runner, None)
        self.sim = runner

    async def wait_ended(self, records, *, every=True):
        while len([r for r in records if r.finished]) < (len(records) if every else min(1, len(records))):
            await super().wait_ended([await self.sim.end_next(records)])
        return await super().wait_ended(records, every=every)


def test_the_race_keeps_the_confirmations_room_only_while_it_fits_after_the_runs_still_going():
    """The race kept the confirmation's room while the confirmation fitted in the time left, counting none of the
    time the runs still going on other lanes need first: it ended with the budget unspent and candidates unscreened,
    and the confirmation it kept the room for did not fit once those runs had ended."""
    # two lanes. k=9 fails (20 s) and k=0 (15 s) is the first challenger: at 25 s, k=1 (started at 20 without the
    # room: no challenger had a score then) still needs about 10 s by its estimate (the runs' mean, 15 s); the
    # confirmation (about 46 s) fits in the 50 s left, but not after k=1's 10 s. So the room is not kept, and k=2
    # starts: a run of 15 s fits
    six = [Candidate(), *(Candidate((("k", i),)) for i in (9, 0, 1, 2, 3))]
    clock, heard = Clock(), Heard()
    runner = SimRunner(clock, {"k=9": "fail", "k=0": 0.8, "k=1": 0.9, "k=2": 0.9, "k=3": 0.9},
                       {"default": 10.0, "k=9": 20.0, "k=0": 15.0, "k=1": 15.0})

    async def go():
        session = SimSession(runner)
        driver = TuneDriver(session, ON_GPU, six, DEVICE_TIME, 78.0, listener=heard, clock=clock, pool=POOL[:2])
        try:
            return await driver.run()
        finally:
            await session.aclose()

    result = asyncio.run(go())
    assert [(start, key) for start, _, key in runner.starts] == [
        (0.0, "default"), (0.0, "k=9"), (10.0, "k=0"), (20.0, "k=1"), (25.0, "k=2"), (35.0, "k=3")]
    notes = [e[1] for e in heard.events if e[0] == "note"]
    assert not [n for n in notes if n.endswith("the race ends here")], notes  # k=0 never races on alone
    said = [n for n in notes if "no longer fits" in n]
    assert len(said) == 1 and re.fullmatch(r"the confirmation \(about 4\d s\), after the runs still going \(about 10 s "
                                           r"more\), no longer fits in the 50 s left of the budget: the race goes on "
                                           r"with the time left, .*", said[0]), notes
    assert result.incomplete is None and result.confirmation is None and clock.now <= 78.0


def test_a_stop_on_a_pool_cancels_the_runs_going_and_keeps_the_finished_ones():
    five = [Candidate()] + [Candidate((("k", i),)) for i in range(4)]
    result, session, runner, *_ = _tune_on(POOL, five, {"k=0": 0.7}, stop_at=5)  # as the 2nd wave's run starts
    assert result.outcome != CONFIRMED and result.stopped == "Ctrl-C" and result.confirmation is None
    assert len(runner.starts) == 5  # nothing started after the stop
    assert [r.status for r in session.records] == ["done"] * 4 + ["cancelled"]
    assert result.winner.name == "k=0"


class KindsRunner(LaneRunner):
    """LaneRunner whose runs report the GPU kind of the lane they got (``kinds``: device -> product name)."""

    def __init__(self, clock: Clock, times: dict, kinds: dict) -> None:
        super().__init__(clock, times)
        self.kinds = kinds

    async def run(self, record, on_event=None):
        await super().run(record, on_event)
        record.env = dataclasses.replace(record.env, gpu_name=self.kinds[record.options.device])
        return record


def test_a_confirmation_on_gpus_of_several_kinds_is_unconfirmed_and_the_mix_is_said():
    # the command line refuses such a pool; a cluster's lanes can still land on several kinds (Ray picks the GPU)
    clock, heard = Clock(), Heard()
    runner = KindsRunner(clock, {"freezing=True": 0.7}, {"cuda:0": "Fake A", "cuda:1": "Fake B", "cuda:2": "Fake A",
                                                        "cuda:3": "Fake B"})

    async def go():
        session = RunSession(lambda lane: runner, None)
        driver = TuneDriver(session, ON_GPU, [Candidate(), FREEZE], DEVICE_TIME, 10_000.0, listener=heard,
                            clock=clock, pool=POOL)
        try:
            return await driver.run()
        finally:
            await session.aclose()

    result = asyncio.run(go())
    assert result.outcome != CONFIRMED and result.confirmation is None
    assert result.stopped == "the confirmation's runs ran on GPUs of several kinds (Fake A, Fake B)"
    assert ("note", "the runs ran on GPUs of several kinds (Fake A, Fake B), so candidates were compared across "
                    "hardware: tune on GPUs of one kind") in heard.events


# ----- the command line --------------------------------------------------------------------------------------


def _cli_without_torch(monkeypatch, runner) -> None:
    """The CLI's runs go to ``runner`` (in process); the probe answers without torch."""
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None, env=None: runner)
    monkeypatch.setattr(probe_module, "probe_torch", lambda keys, python=None, timeout=0: TorchOptions(
        torch="0.0.0+fake", defaults={}, missing=()))


def _fake_gpus(monkeypatch, names) -> None:
    from tui.cli import tune as cli_tune

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", ",".join(str(i) for i in range(len(names))))
    telemetry = FakeSource(gpus=len(names), names=names)
    monkeypatch.setattr(cli_tune, "_telemetry", lambda base: telemetry)


TUNE = ["tune", "--workload", "pointwise", "--iters", "20", "--block-size", "5", "--space", "freezing,fullgraph",
        "--budget", "5m", "--no-history"]


def test_a_pool_of_several_gpu_kinds_is_refused_in_one_line(monkeypatch, capsys):
    runner = LaneRunner(Clock(), {}, seconds=0.0)
    _cli_without_torch(monkeypatch, runner)
    _fake_gpus(monkeypatch, ["Fake H100", "Fake A100", "Fake H100"])
    assert cli.main([*TUNE, "--device", "cuda:all"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == ["compile-lab: error: --device: the GPUs are of several kinds (Fake H100: cuda:0,cuda:2; Fake A100: "
                   "cuda:1) and a tune compares its runs with each other (allowed: GPUs of one kind, e.g. --device "
                   "cuda:0,cuda:2)"]
    assert runner.runs == []


def test_a_pool_of_one_kind_runs_the_search_on_every_gpu(monkeypatch, tmp_path, capsys):
    runner = LaneRunner(Clock(), {"freezing=True": 0.7}, seconds=0.0)
    _cli_without_torch(monkeypatch, runner)
    _fake_gpus(monkeypatch, ["Fake H200", "Fake H200"])
    out_json = tmp_path / "t.json"
    assert cli.main([*TUNE, "--device", "cuda:all", "--json", str(out_json)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("best: freezing=True, confirmed faster than the default compile")
    assert "2 runs at once on cuda:0, cuda:1" in captured.err
    assert runner.most == 2 and {device for _, device, _ in runner.starts} == {"cuda:0", "cuda:1"}
    runs = json.loads(out_json.read_text())["runs"]
    assert len({r["tune_id"] for r in runs}) == 1


def _on_fake_cluster(monkeypatch, runner, answer) -> list[tuple]:
    """``--cluster`` connects to ``runner`` (3 lanes), whose node answers the torch probe with ``answer``
    (:class:`~test_cluster_torch_probe.ProbeTransport`'s); the calls to ``open_cluster``."""
    runner.ask_torch = ClusterRunner(ProbeTransport(answer), HERE).ask_torch
    calls = []

    def open_cluster(address, device, cpus=1.0, worker_argv=None, env=None):
        calls.append((address, device, cpus))
        return runner, tuple(f"{CLUSTER_LANE}{i}" for i in range(3))

    monkeypatch.setattr(cluster, "open_cluster", open_cluster)
    return calls


def test_cluster_deals_the_search_to_the_clusters_lanes_with_a_nodes_torch_asked(monkeypatch, capsys):
    runner = LaneRunner(Clock(), {"freezing=True": 0.7}, seconds=0.0)
    _cli_without_torch(monkeypatch, LaneRunner(Clock(), {}))  # the local runner: never asked
    here = []
    monkeypatch.setattr(probe_module, "probe_torch", lambda keys, python=None, timeout=0: here.append(keys))
    # the node's torch lacks freezing, this machine's (the fake probe's) has it: the node's catalog is the one raced
    calls = _on_fake_cluster(monkeypatch, runner, node_answer({"torch": "2.99.0+node", "options": {},
                                                               "missing": ["freezing"]}))
    assert cli.main([*TUNE, "--device", "cpu", "--cluster", "auto", "--cluster-cpus", "2"]) == 0
    captured = capsys.readouterr()
    assert calls == [("auto", "cpu", 2.0)] and here == []  # this machine's torch was not asked
    assert "3 runs at once on the Ray cluster at auto" in captured.err
    assert "asking the worker's torch on a node of the cluster which options it has" in captured.err
    assert "note: the options tried are those node n1's torch (2.99.0+node) has, asked on the cluster, where the " \
           "runs run; a run whose option its node's torch lacks" in captured.err
    assert "could not be asked" not in captured.err
    assert "note: freezing: left out (this torch has no freezing)" in captured.err
    assert runner.starts and not any("freezing" in key for _, _, key in runner.starts)
    assert runner.most >= 2  # candidates went out side by side, on the cluster's lanes
    assert all(device == "cpu" for _, device, _ in runner.starts)


def test_a_cluster_whose_torch_cannot_be_asked_tunes_on_this_machines_catalog_and_says_why(monkeypatch, capsys):
    from tui.engine.cluster.transport import TaskLost

    runner = LaneRunner(Clock(), {"freezing=True": 0.7}, seconds=0.0)
    _cli_without_torch(monkeypatch, LaneRunner(Clock(), {}))
    _on_fake_cluster(monkeypatch, runner, TaskLost("RayTaskError: the node died"))
    assert cli.main([*TUNE, "--device", "cpu", "--cluster", "auto"]) == 0
    err = capsys.readouterr().err
    assert "note: the cluster's torch could not be asked (the task was lost before it started on a node: " \
           "RayTaskError: the node died); this machine's torch was asked instead\n" in err
    assert "note: the options tried are those this machine's torch (0.0.0+fake) has, not a node's; the cluster's " \
           "nodes run their own torch" in err
    assert any("freezing" in key for _, _, key in runner.starts)  # this machine's catalog, on the cluster's lanes


@pytest.mark.parametrize(("argv", "line"), [
    (["--device", "cuda:all", "--cluster", "auto"],
     "--cluster: --device cuda:all is not allowed (allowed: cpu, or cuda: Ray gives each run its GPU)"),
    (["--cluster-cpus", "2"], "--cluster-cpus applies with --cluster only"),
])
def test_the_cluster_flags_refuse_in_one_line(argv, line, capsys):
    assert cli.main([*TUNE, *argv]) == 2
    assert [x for x in capsys.readouterr().err.splitlines() if x.strip()] == [f"compile-lab: error: {line}"]


class SlowAutotuneLanes(LaneRunner):
    """LaneRunner whose max-autotune runs take 40 s more (its autotuning)."""

    async def run(self, record, on_event=None):
        start = self.wall.now
        try:
            return await super().run(record, on_event)
        finally:
            if _key(record.options) == "max-autotune":
                self.wall.now = max(self.wall.now, start + self.seconds + 40.0)


@pytest.mark.parametrize("budget", [150.0, 190.0])
def test_on_a_pool_a_challenger_as_fast_is_confirmed_in_place_of_one_whose_confirmation_does_not_fit(budget):
    others = [Candidate((("k", i),)) for i in range(6)]
    times = {"max-autotune": (0.99, 40.0), "freezing=True": 0.995, **{f"k={i}": 1.0 for i in range(6)}}
    result, _, runner, heard, clock = _tune([Candidate(), FREEZE, AUTOTUNE, *others], times, budget, 10.0,
                                            base=ON_GPU, pool=POOL[:2], runner_type=SlowAutotuneLanes,
                                            heard_type=TimedHeard)
    assert clock.now <= budget and result.outcome == "nothing beats default"
    assert result.confirmed.name == "freezing=True" and result.confirmation.processes == (3, 3)
    [note] = [n for n in result.notes if "in its place" in n]
    assert note.startswith("the confirmation of max-autotune (about ") and "freezing=True, within 2%" in note
