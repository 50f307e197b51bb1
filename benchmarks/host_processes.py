"""Host-inclusive time across processes: what makes a launch-bound model's host time differ
between one process and the next, and whether compile-lab's across-process interval holds.

One command, on a CUDA machine::

    python benchmarks/host_processes.py factors --out DIR [--procs 4] [--cases cnn]
    python benchmarks/host_processes.py goal --out DIR [--procs 5] [--cases cnn,resnet18]

``factors``: a plain loop of a launch-bound model (eager and compiled, in the same process),
run in ``--procs`` fresh processes under each process-level condition, the processes of all
conditions interleaved (so a drift of the machine over the minutes is spread over all of them):

=============  ==============================================================================
float          nothing controlled: the process may run on any core (a user's plain script)
pin 1          pinned to one core, the same one in every process
pin 1 random   pinned to one core chosen at random per process
pin 4          pinned to four cores, the same ones in every process
hashseed 0     PYTHONHASHSEED=0 (dict and set layout fixed across processes)
no aslr        address-space layout randomisation off (``setarch -R``), where setarch exists
gc off         the garbage collector off during the timed loops
quiesce        before timing, wait (at most 30 s) until this process's children (inductor's
               compile workers, which start in the background at the first compile) use less
               than 5% of a core
threads 1      TORCHINDUCTOR_COMPILE_THREADS=1: inductor starts no compile workers
=============  ==============================================================================

``--conditions`` picks some of them (comma-separated).

Each process times 7 interleaved rounds of ``--calls`` calls per synchronize (200 by default)
per side; its figure is the median over rounds. It also records the cores it ran on, their
clock (``/proc/cpuinfo``), the hypervisor's steal time and the machine's other CPU use during the
loops (``/proc/stat``). Per condition the table gives the median over processes and the
across-process spread (max / min), next to the within-process spread (IQR / median of rounds).

``goal``: for each case and mode (default, reduce-overhead), ``compile-lab run --repeat P`` (its
across-process interval of the host speedup) against P plain-loop processes of the same calls
(the median of their speedups). The claim holds when the interval contains that median.

Writes ``DIR/host_processes_<part>.md`` and ``.json`` after every process (what finished stays).
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESNET = str(ROOT / "benchmarks" / "workloads" / "resnet18.py")
CASES = {
    "cnn": {"label": "seed CNN b64 fp32", "workload": "cnn", "params": ["batch=64"]},
    "resnet18": {"label": "resnet18 b1 fp32", "workload": RESNET, "params": ["batch=1"]},
}
CONDITIONS = ("float", "pin 1", "pin 1 random", "pin 4", "hashseed 0", "no aslr", "gc off", "quiesce", "threads 1")
ROUNDS = 7


# ----- the child: one process, one plain loop ------------------------------------------------


def _proc_stat() -> tuple[int, int, int]:
    """(busy jiffies, steal jiffies, total jiffies) of the whole machine from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return user + nice + system + irq + softirq, steal, sum(fields[:8])


def _self_jiffies() -> int:
    """utime + stime of this process (all threads), in jiffies."""
    with open("/proc/self/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return int(parts[11]) + int(parts[12])


def _current_cpu() -> int:
    with open("/proc/self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


def _cpu_mhz() -> dict[int, float]:
    mhz, cpu = {}, None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("processor"):
                    cpu = int(line.split(":")[1])
                elif line.startswith("cpu MHz") and cpu is not None:
                    mhz[cpu] = float(line.split(":")[1])
    except OSError as exc:
        print(f"cpuinfo unreadable: {exc}", file=sys.stderr)
    return mhz


def _build(case: str, torch: Any) -> tuple[Any, tuple]:
    device = torch.device("cuda")
    torch.manual_seed(0)
    if case == "cnn":
        sys.path.insert(0, str(ROOT))
        from tui.engine.worker.workloads import SeedCNN

        with device:
            model = SeedCNN()
        model.eval().requires_grad_(False)
        return model, (torch.randn(64, 3, 32, 32, device=device),)
    import importlib.util

    spec = importlib.util.spec_from_file_location("resnet18_workload", RESNET)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_workload(device, torch.float32, batch=1)


def _children_seconds() -> float:
    """CPU seconds used so far by this process's live descendants (psutil)."""
    import psutil

    total = 0.0
    for proc in psutil.Process().children(recursive=True):
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def quiesce(limit_s: float = 30.0, window_s: float = 0.25, idle_cores: float = 0.05) -> float:
    """Wait until this process's descendants use less than ``idle_cores``; the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        before = _children_seconds()
        time.sleep(window_s)
        if (_children_seconds() - before) / window_s < idle_cores:
            break
    return time.monotonic() - started


def child(case: str, mode: str, calls: int, gc_off: bool, settle: bool = False) -> dict[str, Any]:
    """Time eager and compiled (``mode``) in plain loops; one JSON-able dict."""
    import torch

    model, args = _build(case, torch)
    sides = {"eager": model, "compiled": torch.compile(model, mode=mode)}
    for fn in sides.values():
        for _ in range(30):
            fn(*args)
    torch.cuda.synchronize()
    waited = quiesce() if settle else 0.0
    children0 = _children_seconds()
    times: dict[str, list[float]] = {"eager": [], "compiled": []}
    cpus_seen: set[int] = set()
    busy0, steal0, total0 = _proc_stat()
    own0, wall0 = _self_jiffies(), time.monotonic()
    for r in range(ROUNDS):
        order = ("eager", "compiled") if r % 2 == 0 else ("compiled", "eager")
        for side in order:
            fn = sides[side]
            if gc_off:
                gc.disable()
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(calls):
                fn(*args)
            torch.cuda.synchronize()
            times[side].append((time.perf_counter() - start) * 1e3 / calls)
            if gc_off:
                gc.enable()
            cpus_seen.add(_current_cpu())
    busy1, steal1, total1 = _proc_stat()
    own1, wall1 = _self_jiffies(), time.monotonic()
    children_cores = (_children_seconds() - children0) / max(1e-9, wall1 - wall0)
    hz = os.sysconf("SC_CLK_TCK")
    mhz = _cpu_mhz()
    total = max(1, total1 - total0)
    return {
        "case": case, "mode": mode, "calls": calls, "rounds": times,
        "affinity": sorted(os.sched_getaffinity(0)), "cpus_seen": sorted(cpus_seen),
        "mhz": {str(c): mhz.get(c) for c in sorted(cpus_seen)},
        "steal_share": (steal1 - steal0) / total,
        "other_cpu_cores": max(0.0, ((busy1 - busy0) - (own1 - own0)) / hz / max(1e-9, wall1 - wall0)),
        "hashseed": os.environ.get("PYTHONHASHSEED"),
        "quiesce_s": waited, "children_cpu_cores": children_cores,
    }


# ----- the parent ----------------------------------------------------------------------------


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _iqr_share(values: list[float]) -> float:
    if len(values) < 4:
        return float("nan")
    q = statistics.quantiles(values, n=4)
    return (q[2] - q[0]) / statistics.median(values)


def spawn(
    case: str, mode: str, condition: str, calls: int, cores: list[int], env_base: dict[str, str]
) -> dict[str, Any]:
    """One child process under ``condition``; its result dict (or the error)."""
    env = dict(env_base)
    cmd = [sys.executable, __file__, "child", "--case", case, "--mode", mode, "--calls", str(calls)]
    pin: list[int] | None = None
    if condition == "pin 1":
        pin = [cores[len(cores) // 2]]
    elif condition == "pin 1 random":
        pin = [random.choice(cores)]
    elif condition == "pin 4":
        pin = cores[-4:]
    elif condition == "hashseed 0":
        env["PYTHONHASHSEED"] = "0"
    elif condition == "no aslr":
        setarch = shutil.which("setarch")
        if not setarch:
            return {"error": "no setarch on this machine"}
        cmd = [setarch, os.uname().machine, "-R", *cmd]
    elif condition == "gc off":
        cmd.append("--gc-off")
    elif condition == "quiesce":
        cmd.append("--quiesce")
    elif condition == "threads 1":
        env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    if pin is not None:
        env["HP_CPUS"] = ",".join(map(str, pin))
    started = time.monotonic()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"error": f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:] }"}
    result = json.loads(lines[-1])
    result["seconds"] = time.monotonic() - started
    return result


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Median over processes, across-process spread, within-process spread, of one condition."""
    ok = [r for r in results if "error" not in r]
    per = {side: [_median(r["rounds"][side]) for r in ok] for side in ("eager", "compiled")}
    speedups = [e / c for e, c in zip(per["eager"], per["compiled"], strict=True)]
    within = [_iqr_share(r["rounds"]["eager"]) for r in ok]
    return {
        "n": len(ok), "failed": len(results) - len(ok),
        "eager_ms": per["eager"], "compiled_ms": per["compiled"], "speedups": speedups,
        "eager_median": _median(per["eager"]),
        "eager_spread": max(per["eager"]) / min(per["eager"]) if ok else float("nan"),
        "compiled_spread": max(per["compiled"]) / min(per["compiled"]) if ok else float("nan"),
        "speedup_median": _median(speedups),
        "speedup_range": (min(speedups), max(speedups)) if ok else (float("nan"),) * 2,
        "within_iqr": _median(within),
        "steal": max((r["steal_share"] for r in ok), default=float("nan")),
        "other": max((r["other_cpu_cores"] for r in ok), default=float("nan")),
        "children": max((r.get("children_cpu_cores", float("nan")) for r in ok), default=float("nan")),
        "cpus": sorted({c for r in ok for c in r["cpus_seen"]}),
    }


def factors(args: argparse.Namespace, env: dict[str, str], info: dict[str, str]) -> None:
    cores = sorted(os.sched_getaffinity(0))
    plan = [(case, cond) for _ in range(args.procs) for case in args.cases for cond in args.conditions]
    results: dict[str, list[dict[str, Any]]] = {}
    for i, (case, cond) in enumerate(plan):
        result = spawn(case, "reduce-overhead", cond, args.calls, cores, env)
        results.setdefault(f"{case}|{cond}", []).append(result)
        print(
            f"[{i + 1}/{len(plan)}] {case} {cond}: "
            + (
                result["error"]
                if "error" in result
                else f"eager {_median(result['rounds']['eager']):.4f} ms, compiled "
                     f"{_median(result['rounds']['compiled']):.4f} ms,"
                f" cpus {result['cpus_seen']}, steal {result['steal_share']:.3f}"
            ),
            flush=True,
        )
        _write(args.out, "factors", results, info, _render_factors)


def _render_factors(results: dict[str, list[dict[str, Any]]], env: dict[str, str]) -> str:
    lines = [_env_line(env), "",
             "Plain loop, eager and compiled (reduce-overhead) in the same process; per process the median of "
             f"{ROUNDS} interleaved rounds. `across` = max/min over processes of that median; `within` = "
             "IQR/median of a process's eager rounds (median over processes).", "",
             "| case | condition | procs | eager ms (median) | eager across | compiled across | host speedup median "
             "[min, max] | within | steal max | other cores max | own children cores max | cores seen |",
             "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    for key, rs in results.items():
        case, cond = key.split("|")
        s = summarise(rs)
        if not s["n"]:
            lines.append(f"| {case} | {cond} | 0 | {rs[0].get('error', '')} | | | | | | | |")
            continue
        lo, hi = s["speedup_range"]
        lines.append(
            f"| {case} | {cond} | {s['n']} | {s['eager_median']:.4f} | {s['eager_spread']:.2f} | "
            f"{s['compiled_spread']:.2f} | {s['speedup_median']:.2f} [{lo:.2f}, {hi:.2f}] | "
            f"{s['within_iqr']:.3f} | {s['steal']:.3f} | {s['other']:.2f} | {s['children']:.2f} | {s['cpus']} |"
        )
    return "\n".join(lines) + "\n"


def _compile_lab(case: str, mode: str, procs: int, out: Path, env: dict[str, str], extra: list[str]) -> dict[str, Any]:
    spec = CASES[case]
    csv_path = out / f"goal_{case}_{mode}.csv"
    cmd = [sys.executable, "-m", "tui", "run", "--workload", spec["workload"], "--device", "cuda", "--mode", mode,
           "--repeat", str(procs), "--no-history", "--quiet", "--no-profile", "--csv", str(csv_path)]
    for p in spec["params"]:
        cmd += ["--param", p]
    done = subprocess.run(cmd + extra, env=env, capture_output=True, text=True, timeout=560, cwd=ROOT)
    if not csv_path.exists():
        return {"error": f"exit {done.returncode}: {done.stderr.strip()[-300:]}"}
    with open(csv_path) as f:
        row = next(csv.DictReader(f))
    keep = ("host_speedup", "host_speedup_xproc_ci_low", "host_speedup_xproc_ci_high", "speedup",
            "speedup_xproc_ci_low", "speedup_xproc_ci_high", "host_verdict", "verdict", "eager_host_ms",
            "compiled_host_ms", "repeats", "launch_bound")
    return {k: row.get(k) for k in keep if k in row}


def goal(args: argparse.Namespace, env: dict[str, str], info: dict[str, str]) -> None:
    results: dict[str, Any] = {}
    cores = sorted(os.sched_getaffinity(0))
    for case in args.cases:
        for mode in args.modes:
            key = f"{case}|{mode}"
            plain = [spawn(case, mode, "float", args.calls, cores, env) for _ in range(args.procs)]
            lab = _compile_lab(case, mode, args.procs, args.out, env, args.lab_args)
            results[key] = {"plain": plain, "compile-lab": lab}
            print(f"{key}: plain {summarise(plain)['speedups']}, compile-lab {lab}", flush=True)
            _write(args.out, "goal", results, info, _render_goal)


def _num(text: Any) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return float("nan")


def _render_goal(results: dict[str, Any], env: dict[str, str]) -> str:
    lines = [_env_line(env), "",
             "compile-lab's across-process interval of the host speedup (`--repeat P`) against the median host "
             "speedup of P plain-loop processes (200 calls per synchronize, 7 interleaved rounds each).", "",
             "| case | mode | plain-loop speedups (per process) | plain median | compile-lab host speedup "
             "[across-process interval] | contains? | host verdict | device speedup |",
             "|---|---|---|---:|---|---|---|---|"]
    for key, r in results.items():
        case, mode = key.split("|")
        s = summarise(r["plain"])
        lab = r["compile-lab"]
        lo, hi = _num(lab.get("host_speedup_xproc_ci_low")), _num(lab.get("host_speedup_xproc_ci_high"))
        med = s["speedup_median"]
        holds = "yes" if lo <= med <= hi else "**no**"
        per = ", ".join(f"{v:.2f}" for v in s["speedups"])
        lines.append(f"| {case} | {mode} | {per} | {med:.2f} | {_num(lab.get('host_speedup')):.2f} [{lo:.2f}, "
                     f"{hi:.2f}] | {holds} | {lab.get('host_verdict', '')} | {_num(lab.get('speedup')):.2f} "
                     f"[{_num(lab.get('speedup_xproc_ci_low')):.2f}, {_num(lab.get('speedup_xproc_ci_high')):.2f}] |")
    return "\n".join(lines) + "\n"


def _env_line(env: dict[str, str]) -> str:
    return f"Measured {env.get('date')} on {env.get('gpu')}, driver {env.get('driver')}, torch {env.get('torch')}."


def _write(out: Path, part: str, results: Any, env: dict[str, str], render: Any) -> None:
    (out / f"host_processes_{part}.json").write_text(json.dumps({"env": env, "results": results}, indent=1))
    (out / f"host_processes_{part}.md").write_text(render(results, env))


def environment() -> dict[str, str]:
    query = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True)
    name, _, driver = query.stdout.strip().partition(", ")
    torch_version = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip()
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": name, "driver": driver,
            "torch": torch_version, "cores": str(len(os.sched_getaffinity(0)))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("factors", "goal", "child"))
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--procs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--cases", type=lambda s: s.split(","), default=["cnn"])
    parser.add_argument("--case", default="cnn")
    parser.add_argument("--mode", default="reduce-overhead")
    parser.add_argument("--modes", type=lambda s: s.split(","), default=["default", "reduce-overhead"],
                        help="goal: the modes to run for every case")
    parser.add_argument("--gc-off", action="store_true")
    parser.add_argument("--quiesce", action="store_true")
    parser.add_argument("--conditions", type=lambda s: s.split(","), default=list(CONDITIONS))
    parser.add_argument("--lab-args", type=lambda s: s.split(), default=[],
                        help="extra compile-lab run arguments for goal, e.g. '--iters 100'")
    args = parser.parse_args(argv)
    if args.part == "child":
        cpus = os.environ.get("HP_CPUS")
        if cpus:
            os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
        print(json.dumps(child(args.case, args.mode, args.calls, args.gc_off, args.quiesce)), flush=True)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", str(ROOT))
    info = environment()
    (factors if args.part == "factors" else goal)(args, env, info)
    print(info)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
