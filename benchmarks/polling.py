"""Whether watching disturbs what compile-lab measures (issue 22, item 5): the app against the CLI.

One command, on a CUDA machine::

    python benchmarks/polling.py --out DIR [--runs 3] [--cases cnn,matmul] [--arms app,cli,cli+nvml]
    python benchmarks/polling.py --out DIR --device cpu --runs 1    # the dry path (backend eager, tiny cases)

Three arms, for a launch-bound workload (the seed CNN at batch 64, fp32) and a GPU-bound one
(matmul 8192, fp32), ``--runs`` runs of each, interleaved (run k of every case and arm before run
k+1; the arms' order rotates from one run to the next):

* ``app``: the real app (``CompileLabApp`` with its default NVML source, runner and 1 s GPU pane
  polling) in a child process on a pseudo-terminal of 160x48, so it paints to a terminal as it does
  for a user; once the pane has polled, the child queues the run (the same options the CLI parses
  from the same arguments), waits until its row is final, and writes the run with compile-lab's
  CSV export;
* ``cli``: ``python -m tui run ... --csv``;
* ``cli+nvml``: the same with a separate process polling NVML every 100 ms meanwhile (every field
  of every GPU, the energy counter, the process list and the per-process utilisation: what a
  monitor like nvtop asks for; nvtop's users reported that such a poll cut another program's
  frame rate).

Every run is ``--repeat 1 --no-profile`` (the profile pass never enters the timings). The table
has, per case and arm, each run's device medians (CUDA events), host-inclusive medians and
speedups, their medians over runs, and each median against the CLI's. Writes
``DIR/polling.md`` and ``DIR/polling.json`` after every run.
"""

from __future__ import annotations

import argparse
import csv
import fcntl
import json
import os
import pty
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from sustained import _num, environment  # noqa: E402  (a CSV cell as a number; the header)

CASES: dict[str, dict[str, Any]] = {
    "cnn": {"label": "seed CNN b64 fp32 (launch-bound)", "workload": "cnn", "params": {"batch": 64}, "iters": 400,
            "block": 20},
    "matmul": {"label": "matmul 8192 fp32 (GPU-bound)", "workload": "matmul", "params": {"n": 8192}, "iters": 40,
               "block": 5},
}
CPU_CASES: dict[str, dict[str, Any]] = {
    "cnn": {"label": "seed CNN b8 (CPU dry run)", "workload": "cnn", "params": {"batch": 8}, "iters": 40, "block": 10},
}
ARMS = ("app", "cli", "cli+nvml")
FIELDS = ("eager_median_ms", "compiled_median_ms", "eager_host_median_ms", "compiled_host_median_ms", "speedup",
          "host_speedup", "sm_clock_mean_mhz", "power_mean_w", "app_cpu_cores", "other_cpu_cores", "status", "error")
TTY_SIZE = (48, 160)  # rows, columns
POLL_INTERVAL_S = 0.1


def run_args(case: dict[str, Any], device: str, backend: str) -> list[str]:
    """The ``run`` arguments both arms use (the CLI adds its outputs)."""
    argv = ["--workload", case["workload"], "--device", device, "--backend", backend, "--mode", "default",
            "--iters", str(case["iters"]), "--block-size", str(case["block"]), "--repeat", "1", "--no-profile"]
    for key, value in case["params"].items():
        argv += ["--param", f"{key}={value}"]
    return argv


# ----- the app, in a child process on a pseudo-terminal --------------------------------------


def app_child(argv: list[str], csv_path: Path, status_path: Path, headless: bool, limit_s: float) -> int:
    """Open the app, queue one run of ``argv`` once the GPU pane has polled, export it when its row is final."""
    from tui.app.app import CompileLabApp
    from tui.app.components.gpu_pane import GpuPane
    from tui.cli.parse import configs_from_args
    from tui.cli.parser import build_parser
    from tui.engine.store.export import write_csv

    options = configs_from_args(build_parser().parse_args(["run", *argv]))
    status: dict[str, Any] = {"error": None}

    class Probe(CompileLabApp):
        probe_runs: list[Any] | None = None
        probe_asked = False

        def on_ready(self) -> None:
            super().on_ready()
            self.probe_started = time.monotonic()
            self.set_interval(0.25, self.probe)

        def probe(self) -> None:
            if status.get("ended"):
                return
            try:
                self.probe_step()
            except Exception as exc:  # noqa: BLE001 - said in the status file, the app closed: never a hung child
                status.update(error=f"probe: {type(exc).__name__}: {exc}", ended=True)
                self.exit()

        def probe_step(self) -> None:
            pane = self.query_one(GpuPane)
            waited = time.monotonic() - self.probe_started
            if self.probe_runs is None:
                if not self.probe_asked and (pane.polls >= 1 or waited > 5):
                    self.probe_asked = True
                    self.probe_cpu0 = time.process_time()
                    self.probe_polls0, self.probe_queued = pane.polls, time.monotonic()
                    # the path of the run key once the picker's options are read (trust check, then the queue)
                    self.queue_confirmed(options, "run", source="benchmarks/polling.py", repeats=1,
                                         then=lambda records: setattr(self, "probe_runs", list(records)))
                if waited < limit_s:
                    return
            done = bool(self.probe_runs) and all(r.finished for r in self.probe_runs) and self.settled
            if not done and waited < limit_s:
                return
            status["ended"] = True
            if not self.probe_runs:
                status["error"] = "nothing was queued"
                self.exit()
                return
            record = self.probe_runs[0]
            status.update(polls=pane.polls - self.probe_polls0, app_cpu_s=time.process_time() - self.probe_cpu0,
                          run_s=time.monotonic() - self.probe_queued, rows=self.table.row_count, finished=done,
                          row_compiled_ms=self.table.cell_text(record.run_id, "compiled_ms") if done else None)
            if done:
                write_csv(self.probe_runs, csv_path)
            else:
                status["error"] = f"the run did not end within {limit_s:.0f} s"
            self.exit()

    try:
        Probe().run(headless=headless, size=(TTY_SIZE[1], TTY_SIZE[0]) if headless else None)
    except Exception as exc:  # noqa: BLE001 - the parent reads why from the status file
        status["error"] = f"{type(exc).__name__}: {exc}"
    status_path.write_text(json.dumps(status))
    return 0 if status["error"] is None else 1


def _controlling_tty() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def on_pty(cmd: list[str], env: dict[str, str], timeout: float, err_path: Path) -> tuple[int, int]:
    """Run ``cmd`` with a pseudo-terminal as its terminal (stdin, stdout and stderr: Textual paints to
    stderr); (exit code, bytes it painted). The last 8 kB it wrote go to ``err_path`` (a traceback lands there)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", TTY_SIZE[0], TTY_SIZE[1], 0, 0))
    painted = [0]
    tail = bytearray()

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 1 << 16)
            except OSError:
                return
            if not data:
                return
            painted[0] += len(data)
            tail.extend(data)
            del tail[:-8192]

    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT,
                            preexec_fn=_controlling_tty)
    os.close(slave)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        code = proc.wait()
    reader.join(2.0)
    os.close(master)
    err_path.write_bytes(bytes(tail))
    return code, painted[0]


# ----- the NVML poller ------------------------------------------------------------------------


def poller(interval: float, stats_path: Path) -> int:
    """Poll every GPU through NVML every ``interval`` s until SIGTERM, like a GPU monitor; write the poll count and
    cost."""
    from tui.telemetry.nvml import NvmlSource

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    source = NvmlSource()
    extra = _process_reads()
    costs: list[float] = []
    while not stop.is_set():
        start = time.perf_counter()
        source.snapshot()  # every field, the energy counter included
        extra()
        costs.append((time.perf_counter() - start) * 1e3)
        stop.wait(max(0.0, interval - (time.perf_counter() - start)))
    stats = {"polls": len(costs), "poll_ms_mean": statistics.fmean(costs) if costs else None,
             "available": source.available, "reason": None if source.available else source.reason}
    stats_path.write_text(json.dumps(stats))
    return 0


def _process_reads() -> Any:
    """The process list and per-process utilisation of every GPU (pynvml), as a monitor reads them; a no-op without
    NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    except Exception as exc:  # noqa: BLE001 - no NVML (the dry path): the poller still runs, and says so
        print(f"poller: no process reads: {exc}", file=sys.stderr)
        return lambda: None

    calls = [(getattr(pynvml, name), extra) for name, extra in
             (("nvmlDeviceGetComputeRunningProcesses", ()), ("nvmlDeviceGetProcessUtilization", (0,)))
             if hasattr(pynvml, name)]

    def read() -> None:
        for handle in handles:
            for call, extra in calls:
                try:
                    call(handle, *extra)
                except pynvml.NVMLError:
                    pass  # NOT_FOUND when no process has run since the last read: normal

    return read


# ----- the parent -----------------------------------------------------------------------------


def read_row(csv_path: Path) -> dict[str, str]:
    """The first row of a compile-lab CSV ({} when it is missing)."""
    if not csv_path.exists():
        return {}
    with open(csv_path) as f:
        return next(csv.DictReader(f), {})


def one_run(case_name: str, arm: str, k: int, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    """One run of one arm: its CSV row's figures and what the arm itself reports."""
    case = args.table[case_name]
    tag = f"polling_{case_name}_{arm.replace('+', '_')}_{k}"
    csv_path, err_path = args.out / f"{tag}.csv", args.out / f"{tag}.err"
    argv = run_args(case, args.device, args.backend)
    extra: dict[str, Any] = {}
    if arm == "app":
        status_path = args.out / f"{tag}.status.json"
        cmd = [sys.executable, __file__, "app-child", "--csv", str(csv_path), "--status", str(status_path),
               "--limit", str(args.run_timeout - 20), *(["--headless"] if args.headless else []), "--", *argv]
        if args.headless:
            with open(err_path, "w") as err:
                code = subprocess.run(
                    cmd, env=env, cwd=ROOT, stdout=err, stderr=err, timeout=args.run_timeout
                ).returncode
            painted = None
        else:
            code, painted = on_pty(cmd, env, args.run_timeout, err_path)
        extra = {"exit": code, "painted_bytes": painted,
                 **(json.loads(status_path.read_text()) if status_path.exists() else {"error": "no status"})}
    else:
        poll = None
        if arm == "cli+nvml":
            stats_path = args.out / f"{tag}.poller.json"
            poll = subprocess.Popen([sys.executable, __file__, "poller", "--interval", str(POLL_INTERVAL_S), "--stats",
                                     str(stats_path)], env=env, cwd=ROOT)
        cmd = [sys.executable, "-m", "tui", "run", *argv, "--no-history", "--quiet", "--csv", str(csv_path)]
        try:
            with open(err_path, "w") as err:
                code = subprocess.run(
                    cmd, env=env, cwd=ROOT, stdout=err, stderr=err, timeout=args.run_timeout
                ).returncode
        finally:
            if poll is not None:  # stopped even when the run timed out: it must not poll through the next run
                poll.terminate()
                poll.wait(10)
        extra = {"exit": code}
        if poll is not None:
            extra["poller"] = json.loads(stats_path.read_text()) if stats_path.exists() else {"error": "no stats"}
    row = read_row(csv_path)
    return {"case": case_name, "arm": arm, "run": k, **{f: row.get(f) for f in FIELDS}, "arm_info": extra}


def plan(cases: list[str], arms: list[str], runs: int) -> list[tuple[int, str, str]]:
    """(run, case, arm) in the order they run: run k of everything before run k+1, the arms rotated by k."""
    order = []
    for k in range(runs):
        rotated = arms[k % len(arms):] + arms[:k % len(arms)]
        for case in cases:
            order += [(k + 1, case, arm) for arm in rotated]
    return order


def _median(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def _fmt(value: float | None, spec: str) -> str:
    return "" if value is None else format(value, spec)


NUMBERS = ("eager_median_ms", "compiled_median_ms", "eager_host_median_ms", "compiled_host_median_ms", "speedup",
           "host_speedup")


def render(results: list[dict[str, Any]], env: dict[str, Any], labels: dict[str, str]) -> str:
    """Per case and arm: each run, then the median over runs and its ratio to the CLI's median."""
    lines = [
        f"Measured {env.get('date')} on {env.get('gpu')}, driver {env.get('driver')}.",
        "",
        "Device = median of per-call CUDA events (ms), host = median host-inclusive time per call (ms); "
        "`vs cli` = this arm's median over runs / the CLI's. `app`: the app on a 160x48 pseudo-terminal, its GPU "
        f"pane polling NVML every 1 s; `cli+nvml`: a separate process polling NVML every "
        f"{POLL_INTERVAL_S * 1000:.0f} ms.",
        "",
        "| workload | arm | run | eager device | compiled device | eager host | compiled host | speedup | "
        "host speedup | SM clock MHz | app CPU cores | status | arm info |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    medians: dict[tuple[str, str], dict[str, float | None]] = {}
    for case in dict.fromkeys(r["case"] for r in results):
        for arm in dict.fromkeys(r["arm"] for r in results if r["case"] == case):
            runs = sorted((r for r in results if r["case"] == case and r["arm"] == arm), key=lambda r: r["run"])
            for r in runs:
                nums = [_fmt(_num(r.get(f)), ".4f" if f.endswith("ms") else ".3f") for f in NUMBERS]
                lines.append(
                    f"| {labels.get(case, case)} | {arm} | {r['run']} | "
                    + " | ".join(nums)
                    + f" | {_fmt(_num(r.get('sm_clock_mean_mhz')), '.0f')} | "
                      f"{_fmt(_num(r.get('app_cpu_cores')), '.2f')} | "
                    f"{r.get('status') or ''} {(r.get('error') or '')[:80]} | {_arm_info(r['arm_info'])} |"
                )
            medians[(case, arm)] = {f: _median([_num(r.get(f)) for r in runs]) for f in NUMBERS}
            m = medians[(case, arm)]
            lines.append(f"| {labels.get(case, case)} | **{arm}** | median | " +
                         " | ".join(_fmt(m[f], ".4f" if f.endswith("ms") else ".3f") for f in NUMBERS) + " | | | | |")
    lines += [
        "",
        "| workload | arm | compiled device vs cli | compiled host vs cli | eager host vs cli | speedup vs cli | "
        "host speedup vs cli |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for (case, arm), m in medians.items():
        cli = medians.get((case, "cli"))
        if cli is None or arm == "cli":
            continue
        ratio = [_fmt(m[f] / cli[f] if m[f] and cli[f] else None, ".3f") for f in
                 ("compiled_median_ms", "compiled_host_median_ms", "eager_host_median_ms", "speedup", "host_speedup")]
        lines.append(f"| {labels.get(case, case)} | {arm} | " + " | ".join(ratio) + " |")
    return "\n".join(lines) + "\n"


def _arm_info(info: dict[str, Any]) -> str:
    parts = []
    if info.get("polls") is not None:
        parts.append(
            f"{info['polls']} pane polls, app CPU {info.get('app_cpu_s', 0):.1f} s over {info.get('run_s', 0):.0f} s"
        )
    if info.get("painted_bytes") is not None:
        parts.append(f"{info['painted_bytes'] / 1e3:.0f} kB painted")
    poller = info.get("poller") or {}
    if poller.get("polls") is not None:
        parts.append(f"{poller['polls']} NVML polls of {_fmt(poller.get('poll_ms_mean'), '.2f')} ms")
    if info.get("error"):
        parts.append(str(info["error"])[:80])
    if info.get("exit"):
        parts.append(f"exit {info['exit']}")
    return "; ".join(parts).replace("|", "/")


def parent(args: argparse.Namespace) -> int:
    cpu = not args.device.startswith("cuda")
    args.backend = args.backend or ("eager" if cpu else "inductor")
    args.table = CPU_CASES if cpu else CASES
    cases = args.cases.split(",") if args.cases else list(args.table)
    arms = args.arms.split(",")
    bad = [c for c in cases if c not in args.table] + [a for a in arms if a not in ARMS]
    if bad:
        print(f"polling.py: error: unknown {', '.join(bad)} (cases: {', '.join(args.table)}; arms: {', '.join(ARMS)})",
              file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(ROOT)) if p)
    env.update(TERM="xterm-256color", COLORTERM="truecolor")  # the app's terminal, as a user's usually is
    env["COMPILE_LAB_HOME"] = tempfile.mkdtemp(prefix="polling-home-")  # the app's history and config, apart
    info = environment(args.device)
    labels = {name: case["label"] for name, case in args.table.items()}
    results: list[dict[str, Any]] = []
    deadline = time.monotonic() + args.budget
    for k, case, arm in plan(cases, arms, args.runs):
        if time.monotonic() > deadline:
            print(f"budget of {args.budget:.0f} s spent: run {k} {case} {arm} and later not started", file=sys.stderr)
            break
        started = time.monotonic()
        try:
            results.append(one_run(case, arm, k, args, env))
        except subprocess.TimeoutExpired as exc:
            results.append({"case": case, "arm": arm, "run": k, "status": "timeout", "error": str(exc)[:120],
                            "arm_info": {}})
        last = results[-1]
        print(
            f"run {k} {case} {arm}: {time.monotonic() - started:.0f} s, compiled {last.get('compiled_median_ms')} ms, "
            f"host {last.get('compiled_host_median_ms')} ms, {last.get('status')} {last.get('error') or ''}",
            file=sys.stderr,
            flush=True,
        )
        (args.out / "polling.json").write_text(json.dumps({"env": info, "results": results}, indent=1))
        (args.out / "polling.md").write_text(render(results, info, labels))
    shutil.rmtree(env["COMPILE_LAB_HOME"], ignore_errors=True)
    print(render(results, info, labels))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["app-child"]:
        child = argparse.ArgumentParser(prog="polling.py app-child")
        child.add_argument("--csv", type=Path, required=True)
        child.add_argument("--status", type=Path, required=True)
        child.add_argument("--limit", type=float, default=300.0)
        child.add_argument("--headless", action="store_true")
        child.add_argument("run", nargs=argparse.REMAINDER)
        a = child.parse_args(argv[1:])
        return app_child([x for x in a.run if x != "--"], a.csv, a.status, a.headless, a.limit)
    if argv[:1] == ["poller"]:
        child = argparse.ArgumentParser(prog="polling.py poller")
        child.add_argument("--interval", type=float, default=POLL_INTERVAL_S)
        child.add_argument("--stats", type=Path, required=True)
        a = child.parse_args(argv[1:])
        return poller(a.interval, a.stats)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for the dry path (backend eager, tiny cases)")
    parser.add_argument("--backend", default=None)
    parser.add_argument("--cases", default=None, help="comma list of cnn, matmul (default both)")
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--headless", action="store_true", help="the app headless instead of on a pseudo-terminal")
    parser.add_argument("--run-timeout", type=float, default=150.0)
    parser.add_argument("--budget", type=float, default=480.0, help="start no run after this many seconds")
    return parent(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
