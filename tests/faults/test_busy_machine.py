"""A busy machine never gets a confident wrong number (issue 12, item 1 and 2).

A real CPU run of the pointwise workload, first on the quiet machine, then with busy processes
started by the test on every core: the busy run's verdict is ``noisy`` (naming the other
processes), or its speedup is within 25% of the quiet run's. The quiet run is ``faster`` or says
it is ``noisy``, never a confident wrong word. They are ``slow`` (not in the inner loop).

The busy processes run from the worker's warm-up to the end of its measurement: the part of the
run the timings and the host-load check see. Kept for the whole run they burned two cores for
every second of the worker's start and compile too, and slowed the rest of the suite with them.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui import cli
from tui.cli import run as cli_run
from tui.engine.protocol import Measured, PhaseChanged

pytestmark = [pytest.mark.slow, pytest.mark.torch]

RUN = ["run", "--workload", "pointwise", "--param", "n=512", "--device", "cpu", "--iters", "1000", "--block-size", "20",
       "--no-history", "--quiet", "--no-profile"]  # fmt: skip


def _run(tmp_path: Path, name: str) -> dict[str, str]:
    out = tmp_path / f"{name}.csv"
    assert cli.main([*RUN, "--csv", str(out)]) == 0
    (row,) = list(csv.DictReader(out.open()))
    return row


class _Hogs:
    """``count`` busy processes, started as the worker warms up and ended once it has measured."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.procs: list[subprocess.Popen] = []
        self.started_at: str | None = None

    def on_event(self, event: object) -> None:
        if isinstance(event, PhaseChanged) and event.phase == "warming_up" and self.started_at is None:
            self.started_at = event.phase
            self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(self.count)]
        elif isinstance(event, Measured) or (isinstance(event, PhaseChanged) and event.phase == "diagnosing"):
            self.end()

    def end(self) -> None:
        for hog in self.procs:
            hog.kill()
            hog.wait()
        self.procs = []


@pytest.fixture(scope="module")
def quiet(tmp_path_factory) -> dict[str, str]:
    # One run: inside the parallel suite the machine is never quiet, and re-runs (three took 84 s of a worker's
    # time there) came back noisy alike. A noisy reference still bounds the busy run's speedup below.
    row = _run(tmp_path_factory.mktemp("quiet"), "quiet")
    # Compiled pointwise is about 1.5-2x faster on the CPU: a confident "slower" or "no change" would
    # be a wrong number. "noisy" is allowed: on a shared 2-core box the per-call spread of a 0.4 ms
    # call alone reached IQR/median 21-24% (2026-12-03), and then the run rightly says so.
    assert row["verdict"] in ("faster", "noisy"), (row["verdict"], row["speedup"], row["noise_reasons"])
    return row


@pytest.mark.parametrize("busy", [1, os.cpu_count() or 2])
def test_a_busy_machine_is_noisy_or_close_to_the_quiet_number(quiet, tmp_path, busy, monkeypatch):
    hogs = _Hogs(busy)
    heard = cli_run._Progress.run_event

    def run_event(progress, record, event):  # the CLI's listener hears every event of the run
        hogs.on_event(event)
        heard(progress, record, event)

    monkeypatch.setattr(cli_run._Progress, "run_event", run_event)
    try:
        row = _run(tmp_path, "busy")
    finally:
        hogs.end()
    assert hogs.started_at == "warming_up"  # they ran while it measured
    # The check saw them, past the verdict's limit (hogs and the worker share the cores: 2 hogs on 2 cores read 0.94).
    assert float(row["other_cpu_cores"]) > 0.5
    ratio = float(row["speedup"]) / float(quiet["speedup"])
    if row["verdict"] != "noisy":
        assert 0.75 <= ratio <= 1.25, (row["verdict"], row["speedup"], quiet["speedup"])
    else:
        assert "other processes used" in row["noise_reasons"]
