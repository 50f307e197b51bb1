"""Performance figures of the app (issue 3): first frame, idle CPU, streaming under load.

Run from the repository root::

    python benchmarks/app_perf.py              # all three, about 40 s
    python benchmarks/app_perf.py startup      # or idle / stream

1. **First frame**: a fresh ``python -c`` starts :class:`CompileLabApp` headless with its default
   dependencies (real runner, NVML source, the user's history in a temporary home) and prints
   a line from ``on_ready`` (Textual's "first frame has been displayed"). The time is measured
   in this process from just before the spawn to that line, so it includes the interpreter,
   every import and the first render. Repeated, median and worst reported. Target < 0.5 s.
2. **Idle CPU**: the app runs headless in a child process for ``--idle-s`` seconds with the GPU
   pane polling a :class:`FakeSource` whose polls burn ``--poll-cost-ms`` of CPU each (what
   NVML costs for a full snapshot of one GPU); CPU = (user + system time) / wall time of the
   child, from ``/proc``. Target < 2 % of one core.
3. **Streaming**: the fake worker streams 10,000 iteration timings per second (blocks of 500
   per side every 0.1 s) for ``--stream-s`` seconds through the real ``WorkerRunner`` into the
   app. Every 0.2 s a key is pressed; its latency is the time from posting the key event to
   its action running. At the end: timings in the record vs sent (none may be lost), and the
   process RSS before, at its peak and after. Target: key latency < 100 ms.
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
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FAKE_WORKER = [sys.executable, str(ROOT / "tests" / "fakes" / "fake_worker.py")]

STARTUP_CHILD = textwrap.dedent(
    """
    import sys, time
    t_start = time.perf_counter()
    sys.path.insert(0, {root!r})
    from tui.app.app import CompileLabApp
    t_import = time.perf_counter()

    class Probe(CompileLabApp):
        def on_ready(self):
            t_ready = time.perf_counter()
            print("READY", round((t_import - t_start) * 1000, 1), round((t_ready - t_start) * 1000, 1),
                  "torch" in sys.modules, flush=True)
            self.exit()

    Probe().run(headless=True, size=(160, 48))
    """
)

IDLE_CHILD = textwrap.dedent(
    """
    import sys, time, asyncio
    sys.path.insert(0, {root!r})
    from tui.app.app import CompileLabApp
    from tui.telemetry.fake import FakeSource
    from tui.engine.runner import WorkerRunner

    class Idle(CompileLabApp):
        def on_ready(self):
            super().on_ready()
            print("READY", flush=True)
            self.set_timer({seconds}, self.exit)

    source = FakeSource(gpus=1, cost_s={cost}, busy=True)
    app = Idle(runner=WorkerRunner(keep_spare=False), telemetry=source, gpu_interval=1.0)
    app.run(headless=True, size=(160, 48))
    print("POLLS", source.calls, flush=True)
    """
)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def _rss_mib(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _child_env(home: str) -> dict[str, str]:
    env = dict(os.environ)
    env["COMPILE_LAB_HOME"] = home
    env.pop("TEXTUAL", None)
    return env


def bench_startup(repeats: int) -> dict:
    """First frame from process start, ``repeats`` times.

    ``tui`` is byte-compiled first, as ``pip install`` does (this environment sets
    PYTHONDONTWRITEBYTECODE, which would otherwise recompile the package on every start).
    """
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "tui")], check=True,
                   stdout=subprocess.DEVNULL)
    totals, imports, readies = [], [], []
    torch_seen = False
    with tempfile.TemporaryDirectory() as home:
        for _ in range(repeats):
            start = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, "-c", STARTUP_CHILD.format(root=str(ROOT))],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                env=_child_env(home), text=True,
            )
            assert proc.stdout is not None
            line = ""
            for line in proc.stdout:
                if line.startswith("READY"):
                    break
            first_frame = time.perf_counter() - start
            proc.wait(timeout=30)
            if not line.startswith("READY"):
                raise RuntimeError(f"the app did not start: {proc.stderr.read() if proc.stderr else ''}")
            _, import_ms, ready_ms, torch = line.split()
            torch_seen |= torch == "True"
            totals.append(first_frame * 1000)
            imports.append(float(import_ms))
            readies.append(float(ready_ms))
    return {
        "first_frame_ms_median": round(statistics.median(totals), 1),
        "first_frame_ms_max": round(max(totals), 1),
        "in_process_import_ms_median": round(statistics.median(imports), 1),
        "in_process_ready_ms_median": round(statistics.median(readies), 1),
        "repeats": repeats,
        "torch_imported": torch_seen,
    }


def bench_idle(seconds: float, poll_cost_ms: float) -> dict:
    """CPU of an idle app whose GPU pane polls a fake source costing ``poll_cost_ms`` per poll."""
    with tempfile.TemporaryDirectory() as home:
        proc = subprocess.Popen(
            [sys.executable, "-c", IDLE_CHILD.format(root=str(ROOT), seconds=seconds, cost=poll_cost_ms / 1000)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            env=_child_env(home), text=True,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("READY"):
                break
        time.sleep(1.0)  # let start-up work (history load, first poll) finish
        cpu0, wall0 = _cpu_seconds(proc.pid), time.monotonic()
        rss0 = _rss_mib(proc.pid)
        time.sleep(max(1.0, seconds - 2.0))
        cpu1, wall1 = _cpu_seconds(proc.pid), time.monotonic()
        rss1 = _rss_mib(proc.pid)
        rest = proc.stdout.read()
        proc.wait(timeout=30)
    polls = next((int(line.split()[1]) for line in rest.splitlines() if line.startswith("POLLS")), None)
    return {
        "idle_cpu_pct_of_one_core": round(100 * (cpu1 - cpu0) / (wall1 - wall0), 2),
        "window_s": round(wall1 - wall0, 1),
        "poll_cost_ms": poll_cost_ms,
        "polls": polls,
        "rss_mib": [round(rss0, 1), round(rss1, 1)],
    }


async def _bench_stream(seconds: float) -> dict:
    from textual.binding import Binding

    from tui.app.app import CompileLabApp
    from tui.engine.options import RunOptions
    from tui.engine.runner import WorkerRunner
    from tui.telemetry.fake import FakeSource

    block, delay = 500, 0.1  # 2 x 500 timings every 0.1 s = 10,000 per second
    pairs = int(seconds / delay)
    iters = pairs * block

    class Bench(CompileLabApp):
        BINDINGS = [Binding("f9", "ping", "Ping", id="ping", show=False)]
        pinged: list[float] = []

        def action_ping(self) -> None:
            self.pinged.append(time.perf_counter())

    runner = WorkerRunner(worker_argv=FAKE_WORKER, keep_spare=False,
                          env={"FAKE_WORKER_BEHAVIOUR": "ok", "FAKE_WORKER_DELAY": str(delay)})
    app = Bench(runner=runner, telemetry=FakeSource(gpus=1, cost_s=0.002), gpu_interval=1.0, load_history=False)
    latencies: list[float] = []
    rss: list[float] = []
    cpu0 = time.process_time()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.5)
        rss_before = _rss_mib()
        options = RunOptions(workload="pointwise", iters=iters, block_size=block, warmup=0).validated()
        [record] = app.enqueue([options])
        start = time.perf_counter()
        while not record.finished and time.perf_counter() - start < seconds * 4:
            sent = time.perf_counter()
            await pilot.press("f9")
            latencies.append((app.pinged[-1] - sent) * 1000 if app.pinged else float("nan"))
            rss.append(_rss_mib())
            await pilot.pause(0.2)
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu0
        for _ in range(200):
            if app.settled:
                break
            await pilot.pause(0.05)
        rss_after = _rss_mib()
        received = {
            side: sum(len(b.ms) for b in record.samples[side] if b.stage == "measure") for side in ("eager", "compiled")
        }
        status = record.status
        speedup_cell = app.table.cell_text(record.run_id, "speedup")
    runner.kill_all()
    latencies.sort()
    return {
        "timings_sent": 2 * iters,
        "timings_in_record": received["eager"] + received["compiled"],
        "lost": 2 * iters - received["eager"] - received["compiled"],
        "status": status,
        "stream_wall_s": round(wall, 1),
        "rate_per_s": round(2 * iters / wall),
        "key_latency_ms_median": round(statistics.median(latencies), 1),
        "key_latency_ms_p95": round(latencies[int(0.95 * (len(latencies) - 1))], 1),
        "key_latency_ms_max": round(latencies[-1], 1),
        "key_presses": len(latencies),
        "app_process_cpu_pct_during_stream": round(100 * cpu / wall, 1),
        "rss_mib_before_peak_after": [round(rss_before, 1), round(max(rss), 1), round(rss_after, 1)],
        "rss_mib_at_quarters_of_the_stream": [
            round(rss[min(len(rss) - 1, int(q * len(rss)))], 1) for q in (0.25, 0.5, 0.75, 1.0)
        ],
        "speedup_cell": speedup_cell,
    }


def bench_stream(seconds: float) -> dict:
    """Streaming 10,000 timings per second for ``seconds`` seconds through the app."""
    with tempfile.TemporaryDirectory() as home:
        os.environ["COMPILE_LAB_HOME"] = home
        return asyncio.run(_bench_stream(seconds))


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks and print their figures (JSON per benchmark)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", nargs="*", help="startup, idle and/or stream (default: all three)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--idle-s", type=float, default=12.0)
    parser.add_argument("--poll-cost-ms", type=float, default=2.0)
    parser.add_argument("--stream-s", type=float, default=10.0)
    args = parser.parse_args(argv)
    args.which = args.which or ["startup", "idle", "stream"]
    unknown = set(args.which) - {"startup", "idle", "stream"}
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))} (choose from startup, idle, stream)")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    if "startup" in args.which:
        print("startup:", json.dumps(bench_startup(args.repeats)))
    if "idle" in args.which:
        print("idle:", json.dumps(bench_idle(args.idle_s, args.poll_cost_ms)))
    if "stream" in args.which:
        print("stream:", json.dumps(bench_stream(args.stream_s)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
