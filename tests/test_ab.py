"""A/B of torch builds in one session (issue 15 item 2): ``sweep --python A,B``.

Fast tests run the fake worker behind two links to this interpreter; the slow one runs real CPU
workers in two venvs made here (``--system-site-packages``: no second torch).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui import cli
from tui.cli.ab_render import ab_lines
from tui.engine.run.ab import interpreter_name
from tui.engine.options import RunOptions
from tui.engine.payloads import Diagnostics
from tui.engine.protocol import Started
from tui.engine.store.results import RunRecord
from tui.engine.runner import WorkerRunner
from tui.engine.run.session import RunSession, SessionListener
from tui.engine.run.sweep import expand

from tests.fakes import fake_worker_argv, stand_in_python

FAKE_WORKER = fake_worker_argv()



def test_the_interpreter_varies_fastest_so_the_sides_of_a_pair_run_back_to_back(tmp_path):
    a, b = stand_in_python(tmp_path, "a"), stand_in_python(tmp_path, "b")
    configs = expand(RunOptions(workload="pointwise", device="cpu"), backends=["inductor", "eager"], pythons=[a, b])
    assert [(c.backend, c.python) for c in configs] == [("inductor", a), ("inductor", b), ("eager", a), ("eager", b)]


def test_the_short_form_of_an_interpreter_is_its_venvs_directory():
    assert interpreter_name("/x/venvA/bin/python") == "venvA"
    assert interpreter_name("/usr/local/bin/python3.12") == "local"
    assert interpreter_name("python3") == "python3"
    assert interpreter_name(None) == ""


@pytest.mark.torch  # the good interpreter is this one, checked for torch
@pytest.mark.parametrize("bad", ["missing", "no_torch"])
def test_a_bad_interpreter_is_one_line_naming_python_before_anything_runs(tmp_path, capsys, monkeypatch, bad):
    made = []
    monkeypatch.setattr(cli, "make_runner", lambda **kw: made.append(kw))
    good = stand_in_python(tmp_path, "good")
    if bad == "missing":
        other = str(tmp_path / "nowhere" / "bin" / "python")
    else:
        other = str(tmp_path / "python-without-torch")
        Path(other).write_text(f"#!/bin/sh\nexec {sys.executable} -S -I \"$@\"\n")
        os.chmod(other, 0o755)
    assert cli.main(["sweep", "--device", "cpu", "--python", f"{good},{other}", "--no-history"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "--python" in err[0] and other in err[0]
    assert ("no torch" in err[0]) == (bad == "no_torch")
    assert made == []


@pytest.mark.torch  # both interpreters are this one, checked for torch before anything runs
def test_a_sweep_over_two_interpreters_labels_and_diffs_the_sides(tmp_path, capsys, monkeypatch, compile_lab_home):
    started: list[str] = []

    class Runner(WorkerRunner):
        async def run(self, record, on_event=None):
            started.append(record.options.python)
            return await super().run(record, on_event)

    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None: Runner(
        worker_argv=FAKE_WORKER, keep_spare=keep_spare, env={"FAKE_WORKER_BEHAVIOUR": "ok"}))
    a, b = stand_in_python(tmp_path, "venvA"), stand_in_python(tmp_path, "venvB")
    code = cli.main(["sweep", "--device", "cpu", "--backend", "inductor,eager", "--python", f"{a},{b}",
                     "--iters", "10", "--repeat", "2", "--no-history"])
    assert code == 0
    assert started == [a, b] * 4  # interleaved: configurations, then repeats
    out = capsys.readouterr().out
    assert "venvA" in out and "venvB" in out
    assert "A/B diagnostics: A venvA (torch 0.0.0+fake) -> B venvB (torch 0.0.0+fake)" in out
    assert "pointwise" in out.split("A/B diagnostics")[1]


def _record(python: str, **diagnostics) -> RunRecord:
    record = RunRecord.new(RunOptions(workload="pointwise", device="cpu", python=python))
    record.status = "done"
    record.compile_s = diagnostics.pop("compile_s", None)
    record.diagnostics = Diagnostics(**diagnostics)
    return record


def test_diagnostics_that_appear_or_disappear_are_said():
    lines = ab_lines([_record("/v/A/bin/python", graph_breaks=0, recompiles=2, compile_s=2.0),
                      _record("/v/B/bin/python", graph_breaks=3, recompiles=0, compile_s=1.0)])
    assert lines[0].startswith("A/B diagnostics: A A (torch ?) -> B B")
    assert "graph breaks appeared (3)" in lines[1] and "recompiles disappeared (were 2)" in lines[1]
    assert "compile 2 s -> 1 s (-50%, cold cache)" in lines[1]
    assert ab_lines([_record("/v/A/bin/python")]) == []


def test_compile_times_are_compared_in_the_same_cache_state():
    """As on the H200: A's first process compiled cold, the rest warm (one inductor cache for both sides)."""
    runs = [_record("/v/A/bin/python", compile_s=5.4, fxgraph_cache_hit=0),
            _record("/v/A/bin/python", compile_s=0.86, fxgraph_cache_hit=1),
            _record("/v/B/bin/python", compile_s=0.92, fxgraph_cache_hit=1),
            _record("/v/B/bin/python", compile_s=0.90, fxgraph_cache_hit=1)]
    (line,) = ab_lines(runs)[1:]
    assert "compile 0.86 s -> 0.91 s (+6%, warm cache)" in line


@pytest.mark.slow
@pytest.mark.torch
def test_two_real_venvs_run_interleaved_each_served_by_a_spare_of_its_own(tmp_path, compile_lab_home):
    pythons = []
    for name in ("venvA", "venvB"):
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(tmp_path / name)],
                       check=True)
        pythons.append(str(tmp_path / name / "bin" / "python"))
    base = RunOptions(workload="pointwise", params={"n": 64}, device="cpu", backend="eager", iters=5, warmup=1,
                      profile=False)
    configs = expand(base, pythons=pythons)
    seen: list[tuple[str, bool, str]] = []
    runner = WorkerRunner(keep_spare=True, sample_host=False)

    class Listener(SessionListener):
        def run_event(self, record, event):
            if isinstance(event, Started):
                seen.append((record.options.python, runner.last_from_spare, event.env.python_executable))

    async def go() -> list[RunRecord]:
        session = RunSession(lambda lane: runner, None, Listener())
        records = session.submit(configs, repeats=2)
        await session.wait_settled()
        await session.aclose()
        return records

    records = asyncio.run(go())
    assert [r.status for r in records] == ["done"] * 4, [r.error_message for r in records]
    assert [r.options.python for r in records] == pythons * 2
    assert [r.env.python_executable for r in records] == pythons * 2
    # Every run after the first was served by the waiting spare, started with its own interpreter.
    assert seen == [(p, n > 0, p) for n, p in enumerate(pythons * 2)]
    assert dataclasses.replace(records[0].options, python=None) == dataclasses.replace(records[1].options, python=None)
