"""Calibrate the verdict: collect runs of fixed configurations once, judge them under rule sets many times.

Two steps, so the data is collected once and judged as often as the rules change::

    # 1. collect: each run is its own `compile-lab run` (a fresh worker process), stored whole
    python3 benchmarks/calibrate.py collect --device cpu --runs 10 --out calibration/cpu
    python3 benchmarks/calibrate.py collect --device cpu --runs 10 --load 3 --out calibration/cpu
    # 2. judge: today's rules ("before", frozen in benchmarks/calibrate_before.py) and the engine's
    python3 benchmarks/calibrate.py judge calibration/cpu --rules before after

``collect`` appends: it counts what the directory already holds for each (configuration, load)
and runs only what is missing, round-robin over the configurations (round r runs every
configuration's r-th run, so a slow drift of the machine touches them all alike). A run is
stored as ``<out>/<config>/<tag>-<run id>.json``: the run's whole JSON export (every block's
samples, the machine-load telemetry) inside a wrapper that says what was asked and what the
machine did (:func:`stored_run`). ``--load K`` starts K busy processes before the runs and stops
them after (each also ends by itself after ``--load-seconds``): on the CPU pure-Python spin loops,
on a GPU a co-tenant that runs its own matmuls on the same card. A run's tag is ``busy`` with a
load, else ``quiet``; its wrapper also keeps the other processes' CPU use measured over the
whole run (compile included), so ``judge --max-quiet-load`` can drop quiet runs that were not.

``--repeat 3`` groups are not collected apart: ``judge`` groups each configuration's stored
single runs in threes (in the order they ran, quiet with quiet, busy with busy) and judges each
group with the engine's :func:`tui.engine.store.repeats.summarize_group`, which is what `--repeat 3`
computes from its three processes. The runs of a group are then minutes apart, not interleaved
with each other: a slower drift enters the across-process interval, which makes the figure
conservative.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tui.telemetry.host_load import HostLoadSampler  # noqa: E402

SCHEMA = 1


@dataclass(frozen=True)
class Config:
    """One configuration: a name and the `compile-lab run` arguments that select it."""

    name: str
    args: tuple[str, ...]
    about: str


CPU_CONFIGS = (
    Config("pointwise", ("--workload", "pointwise"), "x*x + sin(x), 512x512 (the issue's check)"),
    Config("mlp", ("--workload", "mlp"), "Linear+GELU x3, batch 64, width 256"),
    Config("cnn", ("--workload", "cnn", "--param", "batch=16"), "the seed CNN at batch 16"),
    Config("tiny", ("--workload", "mlp", "--param", "batch=1", "--param", "width=16", "--param", "depth=2"),
           "an MLP of 16 wide at batch 1: Python overhead, the CPU's launch-bound case"),
)
GPU_CONFIGS = tuple(
    Config(f"{name}-{mode}", (*args, "--mode", mode), f"{about}, {mode}")
    for name, args, about in (
        ("gemm", ("--workload", "matmul", "--param", "n=4096"), "one 4096 GEMM"),
        ("cnn64", ("--workload", "cnn", "--param", "batch=64"), "the seed CNN at batch 64 (launch-bound)"),
        ("block", ("--workload", "transformer_block"), "a transformer block (GPU defaults)"),
    )
    for mode in ("default", "reduce-overhead")
)


def configs_for(device: str) -> tuple[Config, ...]:
    """The CPU configurations for ``cpu``, the GPU ones for a ``cuda`` device."""
    return CPU_CONFIGS if device == "cpu" else GPU_CONFIGS


# ----- load ------------------------------------------------------------------------------------

CPU_SPIN = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n    pass\n"
GPU_TENANT = (
    "import sys, time, torch\n"
    "end = time.monotonic() + float(sys.argv[1])\n"
    "x = torch.randn(4096, 4096, device=sys.argv[2])\n"
    "while time.monotonic() < end:\n"
    "    for _ in range(20):\n"
    "        y = x @ x\n"
    "    torch.cuda.synchronize()\n"
)


class Load:
    """K busy processes, started on enter and stopped on exit; each ends by itself after ``seconds``."""

    def __init__(self, count: int, device: str, seconds: float) -> None:
        self.count, self.device, self.seconds = count, device, seconds
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> Load:
        for _ in range(self.count):
            argv = ([sys.executable, "-c", CPU_SPIN, str(self.seconds)] if self.device == "cpu"
                    else [sys.executable, "-c", GPU_TENANT, str(self.seconds), self.device])
            self.procs.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL))
        if self.procs:
            print(f"load: {self.count} busy processes (pid {', '.join(str(p.pid) for p in self.procs)})", flush=True)
        return self

    def alive(self) -> int:
        """How many of the busy processes still run."""
        return sum(p.poll() is None for p in self.procs)

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# ----- collect ---------------------------------------------------------------------------------


def tag_of(load: int) -> str:
    """``busy`` with induced load, else ``quiet``."""
    return "busy" if load else "quiet"


def stored_count(out: Path, config: str, tag: str) -> int:
    """How many runs of ``config`` with ``tag`` the directory holds (a run that wrote no export is run again)."""
    folder = out / config
    if not folder.is_dir():
        return 0
    return sum(bool(json.loads(path.read_text()).get("export")) for path in folder.glob(f"{tag}-*.json"))


def plan(out: Path, configs: tuple[Config, ...], runs: int, tag: str) -> Iterator[Config]:
    """The runs still missing, round-robin: every configuration's next run, then the one after."""
    have = {c.name: stored_count(out, c.name, tag) for c in configs}
    for round_ in range(runs):
        for config in configs:
            if have[config.name] <= round_:
                yield config


def run_once(config: Config, device: str, extra: list[str], timeout: float) -> tuple[dict | None, dict]:
    """One `compile-lab run` of ``config``: its JSON export (None if it wrote none) and what the machine did."""
    with tempfile.TemporaryDirectory(prefix="calibrate-") as tmp:
        path = Path(tmp) / "run.json"
        # One process per run (--repeat 1: the default, auto, would add processes to a launch-bound one).
        argv = [sys.executable, "-m", "tui", "run", *config.args, "--device", device, "--repeat", "1", *extra,
                "--json", str(path), "--no-history", "--quiet"]
        # This tree first; what PYTHONPATH held (the device machine's extra wheels) after it.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
        started = time.time()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        sampler = HostLoadSampler([proc.pid]).start()
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
        load = sampler.stop()
        machine = {"argv": argv[2:], "returncode": proc.returncode, "started": started, "wall_s": time.time() - started,
                   "other_cpu_cores": load.other_cpu_cores, "other_cpu_top": list(load.other_cpu_top),
                   "output_tail": output[-2000:]}
        export = json.loads(path.read_text()) if path.exists() else None
        return export, machine


def stored_run(config: Config, device: str, load: int, export: dict | None, machine: dict) -> dict:
    """The wrapper a run is stored in: what was asked, what the machine did, the run's whole export."""
    return {"schema": SCHEMA, "config": config.name, "about": config.about, "device": device, "tag": tag_of(load),
            "load_processes": load, "machine": machine, "export": export}


def collect(args: argparse.Namespace) -> int:
    """Run what is missing for ``--runs`` per configuration at ``--load``, storing each run as it ends."""
    out = Path(args.out)
    configs = tuple(c for c in configs_for(args.device) if not args.configs or c.name in args.configs)
    unknown = set(args.configs or ()) - {c.name for c in configs_for(args.device)}
    if unknown:
        allowed = ", ".join(c.name for c in configs_for(args.device))
        print(f"--configs: unknown {', '.join(sorted(unknown))} (allowed: {allowed})", file=sys.stderr)
        return 2
    todo = list(plan(out, configs, args.runs, tag_of(args.load)))
    print(f"collect: {len(todo)} runs to go into {out} ({tag_of(args.load)}, load {args.load})", flush=True)
    if args.dry_run:
        for config in todo:
            print(" ".join(["python3 -m tui run", *config.args, "--device", args.device, "--repeat", "1", *args.extra]))
        return 0
    # A SIGTERM (a wall-clock limit) unwinds like Ctrl-C, so the busy processes are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    failures, began = 0, time.monotonic()
    with Load(args.load, args.device, args.load_seconds) as load:
        for number, config in enumerate(todo, 1):
            if args.budget and time.monotonic() - began > args.budget:
                print(
                    f"collect: --budget {args.budget:g} s spent; {len(todo) - number + 1} runs left for the next call"
                )
                break
            if args.load and load.alive() < args.load:
                print("collect: a busy process ended (--load-seconds); stopping", file=sys.stderr)
                return 1
            export, machine = run_once(config, args.device, args.extra, args.timeout)
            wrapper = stored_run(config, args.device, args.load, export, machine)
            runs = (export or {}).get("runs") or [{}]
            run_id = runs[0].get("run_id") or time.strftime("%Y%m%d-%H%M%S")
            folder = out / config.name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{wrapper['tag']}-{run_id}.json").write_text(json.dumps(wrapper))
            if export is None:
                print(machine["output_tail"][-600:], file=sys.stderr)
            status = runs[0].get("status", f"no export (exit {machine['returncode']})")
            failures += status != "done"
            cores = machine["other_cpu_cores"]
            print(f"[{number}/{len(todo)}] {config.name} {wrapper['tag']}: {status}, {machine['wall_s']:.0f} s, "
                  f"others {'?' if cores is None else f'{cores:.2f}'} cores", flush=True)
    return 1 if failures else 0


# ----- command line ----------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    """The command line: ``collect`` and ``judge``."""
    top = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = top.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="run the configurations and store every run")
    c.add_argument("--device", default="cpu", help="cpu, or a cuda device (cuda, cuda:0): the GPU configurations")
    c.add_argument("--runs", type=int, default=10, help="runs per configuration at this load (default 10)")
    c.add_argument("--load", type=int, default=0, metavar="K", help="busy processes beside the runs (default 0)")
    c.add_argument("--load-seconds", type=float, default=3600,
                   help="each busy process ends by itself after this long (default 1 h)")
    c.add_argument("--budget", type=float, default=None, metavar="S",
                   help="start no run after S seconds (a call under a wall-clock limit; the next call resumes)")
    c.add_argument("--dry-run", action="store_true", help="print the runs still to go, run nothing")
    c.add_argument("--configs", nargs="*", help="only these configurations (default: all of the device's)")
    c.add_argument("--timeout", type=float, default=900, help="kill a run after this many seconds")
    c.add_argument("--out", required=True, help="the directory the runs go to (appended to)")
    c.add_argument("extra", nargs="*", help="more `compile-lab run` arguments after --, for every run")
    j = sub.add_parser("judge", help="re-judge stored runs under rule sets and print the table")
    j.add_argument("dirs", nargs="+", help="directories written by collect")
    j.add_argument("--rules", nargs="+", default=["before", "after"], help="rule sets: before, after")
    j.add_argument("--max-quiet-load", type=float, default=None,
                   help="leave out quiet runs whose other processes used more CPU cores than this")
    j.add_argument("--group", type=int, default=3, help="processes per --repeat group (default 3)")
    j.add_argument("--groups", type=int, default=40, metavar="N",
                   help="per tag, N groups drawn at random from the combinations of its runs (seeded; default "
                        "40); 0: consecutive runs, in the order they ran")
    j.add_argument("--fill-load", action="store_true",
                   help="a run whose engine did not measure the other processes' CPU (a measuring window "
                        "under 0.2 s, before the engine measured such runs) takes the load collect measured "
                        "over the whole run")
    return top


def main(argv: list[str] | None = None) -> int:
    """Run ``collect`` or ``judge``."""
    args = parser().parse_args(argv)
    if args.command == "collect":
        return collect(args)
    from calibrate_judge import judge  # noqa: E402 (this folder is on sys.path when run as a script)

    return judge(args)


if __name__ == "__main__":
    sys.exit(main())
