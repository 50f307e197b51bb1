"""A big history in the app (issue 11, item 7): first rows, ``h`` off and on, UI stalls.

Run from the repository root::

    python benchmarks/history_perf.py                 # 0 (the baseline), 2,000, 5,000, 20,000 runs
    python benchmarks/history_perf.py 20000 --repeats 1 --timeout 60

For each size a history of that many lines is written to a temporary ``COMPILE_LAB_HOME``
(``tests/app/big_history.py``: genuine lines of eight ended runs, fresh run ids) and the app
starts headless on it, in this process. A 50 Hz timer on the app records when it fires; the
longest gap between two ticks, less the 20 ms period, is the longest time the UI thread did not
get to run (a stall). Measured:

* ``first_rows_s``: from the app's mount to the first history row in the table;
* ``startup_stall_ms``: the longest stall until then (size 0: in the first second; the app's own
  start, its first frames, is the baseline);
* ``first_draw_ms``: the stall in which the first rows are drawn (the table's first full
  redraw, at the app's start: a redraw of the visible cells costs ~40 ms of CPU here);
* ``all_rows_s``: to all of them (the history is read off the UI thread, in chunks);
* ``load_stall_ms``: the longest stall after that, to the first tick after all rows;
* ``hide_s`` / ``show_s``: ``h`` pressed (the action called) to the table holding the rows that
  remain (none) / all again and a tick of the timer after it (the UI is back); and the longest
  stall in each;
* with each stall, ``*_cpu_ms``: the CPU time the UI thread used during that gap. On a busy
  machine a gap can be other processes' turn, or the loader thread's (the GIL): then this is lower.

Polling uses plain ``asyncio.sleep`` (a pilot would add work of its own). A step that does not
finish within ``--timeout`` seconds is reported as ``"> N s"`` (only checked when the UI thread runs).
Each size runs ``--repeats`` times: the median and the worst of each figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "app")]

TICK_S = 0.02


class _Ticks:
    """When a 50 Hz timer fired: wall clock, and the CPU time of the UI thread (the timer runs on it)."""

    def __init__(self) -> None:
        self.times: list[tuple[float, float]] = []

    def tick(self) -> None:
        self.times.append(self.now())

    @staticmethod
    def now() -> tuple[float, float]:
        """A point to measure from, on the UI thread: (wall clock, this thread's CPU time)."""
        return time.perf_counter(), time.thread_time()

    def stall(self, since: tuple[float, float], until: float | None = None) -> tuple[float, float]:
        """The longest gap between ticks from ``since`` (less the period) and the CPU time the UI
        thread used in it, in ms: the rest of a gap is waiting (for the GIL, or for the machine's
        other processes), not work of the UI thread."""
        times = [since, *(t for t in self.times if t[0] > since[0] and (until is None or t[0] <= until))]
        if len(times) < 2:
            return float("nan"), float("nan")
        gap, cpu = max((b[0] - a[0], b[1] - a[1]) for a, b in pairwise(times))
        return round(max(0.0, gap - TICK_S) * 1000, 1), round(cpu * 1000, 1)


async def _until(predicate, timeout: float) -> float | None:
    """Seconds until ``predicate()`` held, or None after ``timeout``."""
    start = time.perf_counter()
    while not predicate():
        if time.perf_counter() - start > timeout:
            return None
        await asyncio.sleep(0.002)
    return time.perf_counter() - start


async def _after_a_tick(ticks: _Ticks, timeout: float) -> None:
    count = len(ticks.times)
    await _until(lambda: len(ticks.times) > count, timeout)


async def _bench_size(count: int, timeout: float, toggle: bool = True) -> dict:
    from big_history import write_big_history

    from tui import paths
    from tui.app.app import CompileLabApp
    from tui.telemetry.fake import FakeSource

    ticks = _Ticks()
    mounted: list[float] = []

    class Probe(CompileLabApp):
        def on_mount(self) -> None:
            super().on_mount()
            mounted.append(_Ticks.now())
            self.set_interval(TICK_S, ticks.tick, name="stall-probe")

    write_big_history(paths.history_file(), count)
    source = FakeSource(gpus=1, vary=False)
    source.make_unavailable("benchmark")
    app = Probe(telemetry=source, gpu_interval=60.0)
    result: dict = {}

    def show(value: float | None) -> float | None:
        return None if value is None else round(value, 3)

    async with app.run_test(size=(160, 48)):
        await _until(lambda: bool(mounted), timeout)
        start = mounted[0]
        table = app.table
        if not count:  # the baseline: the app's own start, without a history
            await asyncio.sleep(1.0)
            result["startup_stall_ms"], result["startup_stall_cpu_ms"] = ticks.stall(start)
            return result
        first = await _until(lambda: table.row_count > 0, timeout)
        first_at = _Ticks.now()
        result["first_rows_s"] = show(None if first is None else first_at[0] - start[0])
        result["startup_stall_ms"], result["startup_stall_cpu_ms"] = ticks.stall(start, first_at[0])
        await _after_a_tick(ticks, timeout)
        drawn_at = ticks.times[-1]
        result["first_draw_ms"], result["first_draw_cpu_ms"] = ticks.stall(first_at)
        done = await _until(lambda: table.row_count >= count, timeout)
        result["all_rows_s"] = show(None if done is None else time.perf_counter() - start[0])
        await _after_a_tick(ticks, timeout)
        result["load_stall_ms"], result["load_stall_cpu_ms"] = ticks.stall(drawn_at)
        for step, expected in (("hide", 0), ("show", count)):
            if done is None or not toggle:
                break
            began = _Ticks.now()
            app.action_toggle_history()
            took = await _until(lambda expected=expected: table.row_count == expected, timeout)
            await _after_a_tick(ticks, timeout)
            result[f"{step}_s"] = show(None if took is None else time.perf_counter() - began[0])
            result[f"{step}_stall_ms"], result[f"{step}_stall_cpu_ms"] = ticks.stall(began)
            if took is None:
                break
    return result


def _child(count: int, timeout: float, toggle: bool) -> dict:
    """One measurement in a fresh process (a previous one's heap would add GC pauses of its own)."""
    argv = [sys.executable, __file__, "--child", str(count), "--timeout", str(timeout)] + (
        [] if toggle else ["--no-toggle"]
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout * 4 + 60)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        raise RuntimeError(f"the measurement failed: {done.stderr[-2000:]}")
    return json.loads(lines[-1])


def bench(count: int, timeout: float, toggle: bool = True, repeats: int = 1) -> dict:
    """One history size, ``repeats`` times, each in a fresh process: the median and the worst of each figure."""
    runs = [_child(count, timeout, toggle) for _ in range(repeats)]
    result: dict = {"runs": count, "repeats": repeats}
    for key in runs[0]:
        values = [run.get(key) for run in runs]
        if any(value is None for value in values):
            result[key] = f"> {timeout:g} s"
            continue
        result[key] = values[0] if repeats == 1 else {"median": round(statistics.median(values), 3), "max": max(values)}
    return result


def main(argv: list[str] | None = None) -> int:
    """Run the sizes given (default 2,000, 5,000 and 20,000) and print one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[0, 2000, 5000, 20000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds allowed for one step")
    parser.add_argument("--no-toggle", action="store_true",
                        help="skip h off and on (a step that blocks the UI cannot be timed out: 20,000 rows took"
                             " 8 minutes to hide before issue 11's item 7)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        with tempfile.TemporaryDirectory() as home:
            os.environ["COMPILE_LAB_HOME"] = home
            print(json.dumps(asyncio.run(_bench_size(args.child, args.timeout, not args.no_toggle))), flush=True)
        return 0
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    for size in args.sizes:
        print("history:", json.dumps(bench(size, args.timeout, not args.no_toggle, args.repeats)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
