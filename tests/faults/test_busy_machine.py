"""A busy machine never gets a confident wrong number (issue 12, item 1 and 2).

A real CPU run of the pointwise workload, first on the quiet machine, then with busy processes
started by the test on every core: the busy run's verdict is ``noisy`` (naming the other
processes), or its speedup is within 25% of the quiet run's. The quiet run is ``faster`` or says
it is ``noisy``, never a confident wrong word. They are ``slow`` (not in the inner loop).
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui import cli

pytestmark = [pytest.mark.slow, pytest.mark.torch]

RUN = ["run", "--workload", "pointwise", "--param", "n=512", "--device", "cpu", "--iters", "1000", "--block-size", "20",
       "--no-history", "--quiet"]  # fmt: skip


def _run(tmp_path: Path, name: str) -> dict[str, str]:
    out = tmp_path / f"{name}.csv"
    assert cli.main([*RUN, "--csv", str(out)]) == 0
    (row,) = list(csv.DictReader(out.open()))
    return row


def _busy(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


@pytest.fixture(scope="module")
def quiet(tmp_path_factory) -> dict[str, str]:
    # A noisy run says so and asks for a re-run; the reference takes that advice, three times at most.
    path = tmp_path_factory.mktemp("quiet")
    for attempt in range(3):
        row = _run(path, f"quiet{attempt}")
        if row["verdict"] != "noisy":
            break
    # Compiled pointwise is about 1.5-2x faster on the CPU: a confident "slower" or "no change" would
    # be a wrong number. "noisy" is allowed: on a shared 2-core box the per-call spread of a 0.4 ms
    # call alone reached IQR/median 21-24% (2026-12-03), and then the run rightly says so.
    assert row["verdict"] in ("faster", "noisy"), (row["verdict"], row["speedup"], row["noise_reasons"])
    return row


@pytest.mark.parametrize("busy", [1, os.cpu_count() or 2])
def test_a_busy_machine_is_noisy_or_close_to_the_quiet_number(quiet, tmp_path, busy):
    hogs = _busy(busy)
    try:
        row = _run(tmp_path, "busy")
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    # The check saw them, past the verdict's limit (hogs and the worker share the cores: 2 hogs on 2 cores read 0.94).
    assert float(row["other_cpu_cores"]) > 0.5
    ratio = float(row["speedup"]) / float(quiet["speedup"])
    if row["verdict"] != "noisy":
        assert 0.75 <= ratio <= 1.25, (row["verdict"], row["speedup"], quiet["speedup"])
    else:
        assert "other processes used" in row["noise_reasons"]
