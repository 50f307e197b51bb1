"""Sustained load (issue 22, item 4): does compile-lab read GPU-bound work faster because the card
rests between its rounds (and so clocks higher) than in a loop that never stops?

One command, on a CUDA machine::

    python benchmarks/sustained.py --out DIR [--cases encoder,block,gemm] [--seconds 3] [--sides compiled]
    python benchmarks/sustained.py --out DIR --device cpu     # the dry path: tiny CPU cases, fake NVML

For each case (a bf16 ``nn.TransformerEncoderLayer``, the built-in ``transformer_block`` in bf16 at
batch 16, a bf16 GEMM 8192), one after the other:

1. ``python -m tui run ... --repeat 1 --csv --json``: compile-lab's device time per call (its rounds
   of host and device sub-blocks), its own profile pass (5 calls after a compile: a rested card)
   and, from the JSON's block times, its rest: the time between rounds that no host sub-block
   keeps the GPU busy;
2. ``benchmarks/sustained_child.py`` in a separate process: the same compiled function in a
   sustained loop timed by per-call events (with and without an L2 flush), ``do_bench``,
   ``do_bench_cudagraph``, a profiler loop (kernel time summed per call) and a profile after a
   1 s rest.

All the while this process samples the GPU through compile-lab's own NVML source at compile-lab's
rates (the SM clock at ``CLOCK_HZ``, the power at ``SAMPLE_HZ``), and each method's window (its
measure blocks, for compile-lab) gets the mean and minimum SM clock and the mean power.

Writes ``DIR/sustained.md`` (the table) and ``DIR/sustained.json`` (everything, raw samples
included) after every case, and the runs' CSV/JSON as ``DIR/sustained_<case>.*``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tui.engine.runner.sampling import CLOCK_HZ, SAMPLE_HZ  # noqa: E402
from tui.engine.worker.blocks import host_block_repeats  # noqa: E402  (torch-free)

ENCODER = str(ROOT / "benchmarks" / "workloads" / "encoder_layer.py")
#: name -> what to run; ``iters``/``block`` give compile-lab's measure phase a few seconds of load.
CASES: dict[str, dict[str, Any]] = {
    "encoder": {"label": "nn.TransformerEncoderLayer b16 s512 w1024 bf16", "workload": ENCODER,
                "params": {"batch": 16}, "dtype": "bfloat16", "iters": 600, "block": 10},
    "block": {"label": "transformer_block b16 bf16", "workload": "transformer_block", "params": {"batch": 16},
              "dtype": "bfloat16", "iters": 600, "block": 10},
    "gemm": {"label": "matmul n=8192 bf16", "workload": "matmul", "params": {"n": 8192}, "dtype": "bfloat16",
             "iters": 400, "block": 10},
}
#: The dry path's cases: small enough for a shared CPU, the same code everywhere else.
CPU_CASES: dict[str, dict[str, Any]] = {
    "gemm": {"label": "matmul n=128 fp32 (CPU dry run)", "workload": "matmul", "params": {"n": 128},
             "dtype": "float32", "iters": 60, "block": 10},
}
LAB_METHOD = "compile-lab"
LAB_PROFILE = "compile-lab profile pass"


# ----- NVML, sampled in this process ---------------------------------------------------------


class WindowSampler:
    """The GPU's SM clock at ``clock_hz`` and its power at ``hz``, with ``time.monotonic()`` stamps.

    ``source`` is compile-lab's NvmlSource (or a FakeSource on the dry path); ``samples`` holds
    ``(t, sm_clock_mhz, power_w or None)``.
    """

    def __init__(self, source: Any, uuid: Any, hz: float = SAMPLE_HZ, clock_hz: float = CLOCK_HZ) -> None:
        self.source, self.uuid = source, uuid
        self.every = max(1, round(clock_hz / hz))
        self.period = 1.0 / clock_hz
        self.samples: list[tuple[float, float | None, float | None]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="sustained-sampler")

    def _loop(self) -> None:
        tick = 0
        while not self._stop.is_set():
            fields = ("sm_clock_mhz", "power_w") if tick % self.every == 0 else ("sm_clock_mhz",)
            try:
                snap = self.source.sample(self.uuid, fields)
            except Exception as exc:  # noqa: BLE001 - kept and reported: a sampler that fails says so in the JSON
                if len(self.errors) < 20:
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                snap = None
            if snap is not None:
                power = snap.power_w if "power_w" in fields else None
                self.samples.append((time.monotonic(), snap.sm_clock_mhz, power))
            tick += 1
            self._stop.wait(self.period)

    def start(self) -> WindowSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2.0)


def window_stats(samples: list[tuple[float, float | None, float | None]], t0: float | None,
                 t1: float | None) -> dict[str, Any]:
    """Mean and min SM clock and mean power of the samples in [t0, t1].

    A window shorter than the sampling period holds no sample: then the sample nearest its middle
    stands for it, and ``nearest`` says so.
    """
    empty = {"clock_mean": None, "clock_min": None, "power_mean": None, "n": 0, "nearest": False}
    if t0 is None or t1 is None or not samples:
        return empty
    inside = [s for s in samples if t0 <= s[0] <= t1]
    nearest = False
    if not any(s[1] is not None for s in inside):
        mid = (t0 + t1) / 2
        inside = [min(samples, key=lambda s: abs(s[0] - mid))]
        nearest = True
    clocks = [s[1] for s in inside if s[1] is not None]
    powers = [s[2] for s in inside if s[2] is not None]
    if not powers and nearest:  # the nearest power reading, when the nearest sample read the clock only
        with_power = [s for s in samples if s[2] is not None]
        if with_power:
            powers = [min(with_power, key=lambda s: abs(s[0] - (t0 + t1) / 2))[2]]
    return {"clock_mean": statistics.fmean(clocks) if clocks else None, "clock_min": min(clocks) if clocks else None,
            "power_mean": statistics.fmean(powers) if powers else None, "n": len(inside), "nearest": nearest}


# ----- compile-lab's run, read back ----------------------------------------------------------


def _num(text: Any) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value == value else None


def measure_blocks(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The measure blocks of a JSON-exported run, both sides, with their side, in time order."""
    blocks = []
    for side, items in (run.get("samples") or {}).items():
        for block in items or ():
            if block.get("stage") == "measure" and block.get("t_start") is not None and block.get("t_end") is not None:
                blocks.append({**block, "side": side})
    return sorted(blocks, key=lambda b: b["t_start"])


def host_block_ms(block: dict[str, Any]) -> float:
    """How long a block's host sub-block ran (ms): its calls, repeated as the worker repeats them."""
    per_call, calls = block.get("host_ms_per_call") or 0.0, len(block.get("ms") or ())
    return per_call * calls * host_block_repeats(calls, per_call or None)


def lab_rest(run: dict[str, Any]) -> dict[str, Any]:
    """compile-lab's rest between rounds, from its measure blocks' times (ms; medians over rounds).

    A round is the blocks of one index (one per side). Its device sub-blocks run back to back;
    between the last device sub-block of a round and the first of the next, the next round's
    host sub-blocks run (their calls keep a GPU-bound card busy). ``gap`` = that time,
    ``host`` = the host sub-blocks' calls in it (host ms per call x the block's calls x the repeats
    that make a host sub-block last ``HOST_BLOCK_MIN_MS``, reckoned from its own time per call, as
    the worker reckons them from the previous one's), ``rest`` = gap - host:
    the time the GPU had nothing queued (synchronizes, the reading and streaming of times, the
    head start's short spin counts as rest too). ``inside`` = the gap between a round's two device
    sub-blocks (pipelined: near 0). ``rest_share`` = the rests' sum over the measure window.
    """
    rounds: dict[int, list[dict[str, Any]]] = {}
    for block in measure_blocks(run):
        rounds.setdefault(int(block["index"]), []).append(block)
    ordered = [sorted(rounds[i], key=lambda b: b["t_start"]) for i in sorted(rounds)]
    gaps, hosts, rests, inside, device = [], [], [], [], []
    for prev, cur in pairwise(ordered):
        gap = (cur[0]["t_start"] - max(b["t_end"] for b in prev)) * 1e3
        host = sum(host_block_ms(b) for b in cur)
        gaps.append(gap)
        hosts.append(host)
        rests.append(gap - host)
    for blocks in ordered:
        device.append(sum((b["t_end"] - b["t_start"]) * 1e3 for b in blocks))
        inside += [(b["t_start"] - a["t_end"]) * 1e3 for a, b in pairwise(blocks)]
    if not ordered:
        return {"rounds": 0}
    span = (max(b["t_end"] for b in ordered[-1]) - ordered[0][0]["t_start"]) * 1e3
    med = lambda values: statistics.median(values) if values else None  # noqa: E731
    return {"rounds": len(ordered), "window": (ordered[0][0]["t_start"], max(b["t_end"] for b in ordered[-1])),
            "span_ms": span, "gap_ms": med(gaps), "host_ms": med(hosts), "rest_ms": med(rests),
            "inside_ms": med(inside), "device_ms_per_round": med(device),
            "rest_share": sum(max(0.0, r) for r in rests) / span if span > 0 else None}


def lab_rows(row: dict[str, str], run: dict[str, Any] | None, sides: list[str]) -> list[dict[str, Any]]:
    """compile-lab's methods as table rows: its device median per side and its profile pass's kernel time."""
    rows = []
    window = lab_rest(run)["window"] if run is not None and measure_blocks(run) else (None, None)
    profile = (run or {}).get("profile") or {}
    for side in sides:
        own = _num(row.get(f"sm_clock_{side}_mhz"))
        rows.append({"method": LAB_METHOD, "side": side, "ms": _num(row.get(f"{side}_median_ms")), "t0": window[0],
                     "t1": window[1], "error": row.get("error") or None,
                     "note": f"its own NVML: {own:.0f} MHz" if own else ""})
        side_profile = profile.get(side) or {}
        rows.append({"method": LAB_PROFILE, "side": side, "ms": _num(side_profile.get("kernel_ms_per_call")),
                     "t0": None, "t1": None, "calls": side_profile.get("calls"),
                     "error": None if profile.get("available") else (profile.get("why") or "no profile")})
    return rows


def read_lab(csv_path: Path, json_path: Path) -> tuple[dict[str, str], dict[str, Any] | None]:
    """The run's CSV row and its JSON record (None when missing)."""
    row: dict[str, str] = {}
    if csv_path.exists():
        with open(csv_path) as f:
            row = next(csv.DictReader(f), {})
    run = None
    if json_path.exists():
        runs = json.loads(json_path.read_text()).get("runs") or []
        run = runs[0] if runs else None
    return row, run


# ----- the table -----------------------------------------------------------------------------


def _fmt(value: Any, spec: str) -> str:
    return "" if value is None else format(value, spec)


def with_stats(
    rows: list[dict[str, Any]], samples: list[tuple[float, float | None, float | None]]
) -> list[dict[str, Any]]:
    """Each row with its window's NVML figures and its ratio to do_bench (same side)."""
    bench = {r["side"]: r["ms"] for r in rows if r["method"] == "do_bench" and r.get("ms")}
    out = []
    for r in rows:
        stats = window_stats(samples, r.get("t0"), r.get("t1"))
        ratio = r["ms"] / bench[r["side"]] if r.get("ms") and bench.get(r["side"]) else None
        out.append({**r, **stats, "ratio": ratio})
    return out


def answer(rows: list[dict[str, Any]]) -> str:
    """One line per side: compile-lab against the sustained events loop, time and clock."""
    lines = []
    for side in dict.fromkeys(r["side"] for r in rows):
        lab = next((r for r in rows if r["side"] == side and r["method"] == LAB_METHOD and r.get("ms")), None)
        loop = next((r for r in rows if r["side"] == side and r["method"] == "events loop" and r.get("ms")), None)
        if lab is None or loop is None:
            continue
        text = f"{side}: compile-lab / sustained events loop = {lab['ms'] / loop['ms']:.3f}"
        if lab.get("clock_mean") and loop.get("clock_mean"):
            text += (f"; SM clock {lab['clock_mean']:.0f} vs {loop['clock_mean']:.0f} MHz (sustained / compile-lab = "
                     f"{loop['clock_mean'] / lab['clock_mean']:.3f}: a time ratio that matches it is the clock)")
        passes = [next((r for r in rows if r["side"] == side and r["method"] == m and r.get("ms")), None)
                  for m in (LAB_PROFILE, "profiler loop")]
        if all(passes):
            text += f"; its profile pass / a sustained profiler loop = {passes[0]['ms'] / passes[1]['ms']:.3f}"
        lines.append(text)
    return "; ".join(lines)


def render_case(label: str, rows: list[dict[str, Any]], rest: dict[str, Any]) -> list[str]:
    """One case's table, its rest line and its answer line."""
    lines = [
        f"### {label}",
        "",
        "| method | side | ms per call | SM clock mean MHz | SM clock min MHz | power mean W | samples | ratio to "
        "do_bench | note |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        note = r.get("error") or r.get("note") or ""
        if r.get("nearest"):
            note = (note + "; " if note else "") + "window shorter than a sample: the nearest one"
        lines.append(
            f"| {r['method']} | {r['side']} | {_fmt(r.get('ms'), '.4f')} | {_fmt(r.get('clock_mean'), '.0f')} | "
            f"{_fmt(r.get('clock_min'), '.0f')} | {_fmt(r.get('power_mean'), '.0f')} | {r.get('n', 0)} | "
            f"{_fmt(r.get('ratio'), '.3f')} | {str(note).replace('|', '/')[:160]} |"
        )
    lines.append("")
    if rest.get("rounds"):
        lines.append(
            f"compile-lab's rounds: {rest['rounds']} over {rest['span_ms']:.0f} ms; per round (medians) device "
            f"sub-blocks "
            f"{_fmt(rest['device_ms_per_round'], '.2f')} ms, gap between rounds {_fmt(rest['gap_ms'], '.2f')} ms of "
            f"which host sub-blocks {_fmt(rest['host_ms'], '.2f')} ms, **rest {_fmt(rest['rest_ms'], '.3f')} ms** "
            f"(rest share of the window {_fmt(rest['rest_share'], '.1%')}), between a round's device sub-blocks "
            f"{_fmt(rest['inside_ms'], '.3f')} ms."
        )
    else:
        lines.append("compile-lab's rest: no measure blocks with times in its JSON.")
    lines += ["", f"Answer: {answer(rows) or 'n/a (a method is missing)'}", ""]
    return lines


def render(results: dict[str, Any], env: dict[str, Any]) -> str:
    """The whole report: header, then per case its table."""
    lines = [f"Measured {env.get('date')} on {env.get('gpu')}, driver {env.get('driver')}, torch {env.get('torch')}, "
             f"triton {env.get('triton')}; NVML sampled in the parent at compile-lab's rates (SM clock {CLOCK_HZ} Hz, "
             f"power {SAMPLE_HZ} Hz){'; FAKE telemetry (dry run)' if env.get('fake') else ''}.", "",
             "`compile-lab` = `python -m tui run` (median of its per-call CUDA events over its measure rounds; the "
             "window is its measure blocks); `compile-lab profile pass` = kernel time per call of its 5 profiled calls "
             "(after a compile: a rested card); the other methods ran in a separate process, back to back, the card "
             "loaded: `events loop` = per-call CUDA events, never synchronized; `do_bench`/`do_bench_cudagraph` = "
             "triton's, called again and again (median of every rep; both flush L2); `profiler loop` = kernel time "
             "summed per call over 200 calls of a sustained loop; `profiler after 1 s rest` = 5 calls after a 1 s "
             "rest (compile-lab's profile pass conditions).", ""]
    for case in results.values():
        lines += render_case(case["label"], case["rows"], case["rest"])
        own = case.get("lab_csv") or {}
        if own.get("status"):
            lines += [
                f"compile-lab's own CSV: status {own['status']}, eager {own.get('eager_median_ms')} ms, compiled "
                f"{own.get('compiled_median_ms')} ms, speedup {own.get('speedup')}, SM clock mean/min "
                f"{own.get('sm_clock_mean_mhz')}/{own.get('sm_clock_min_mhz')} MHz (eager "
                f"{own.get('sm_clock_eager_mhz')}, "
                f"compiled {own.get('sm_clock_compiled_mhz')}), power {own.get('power_mean_w')} W, throttle reasons "
                f"{own.get('throttle_reasons') or 'none'}{'; error ' + own['error'] if own.get('error') else ''}.",
                "",
            ]
    return "\n".join(lines) + "\n"


# ----- running -------------------------------------------------------------------------------


def lab_command(case: dict[str, Any], device: str, backend: str, csv_path: Path, json_path: Path) -> list[str]:
    """``python -m tui run`` for a case, one process, the run's CSV and JSON written."""
    cmd = [
        sys.executable,
        "-m",
        "tui",
        "run",
        "--workload",
        case["workload"],
        "--dtype",
        case["dtype"],
        "--device",
        device,
        "--backend",
        backend,
        "--mode",
        "default",
        "--iters",
        str(case["iters"]),
        "--block-size",
        str(case["block"]),
        "--repeat",
        "1",
        "--no-history",
        "--quiet",
        "--csv",
        str(csv_path),
        "--json",
        str(json_path),
    ]
    for key, value in case["params"].items():
        cmd += ["--param", f"{key}={value}"]
    return cmd


def run_case(name: str, case: dict[str, Any], args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    """compile-lab's run, then the reference process: the case's rows (without NVML figures yet)."""
    csv_path, json_path = args.out / f"sustained_{name}.csv", args.out / f"sustained_{name}.json"
    lab = subprocess.run(lab_command(case, args.device, args.backend, csv_path, json_path), env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=args.lab_timeout)
    print(f"{name}: compile-lab exit {lab.returncode} {lab.stderr.strip()[-300:]}", file=sys.stderr, flush=True)
    row, run = read_lab(csv_path, json_path)
    sides = args.sides.split(",")
    rows = lab_rows(row, run, sides)
    ref_path = args.out / f"sustained_{name}_reference.json"
    child = [sys.executable, str(ROOT / "benchmarks" / "sustained_child.py"), "--case", json.dumps(case), "--device",
             args.device, "--backend", args.backend, "--seconds", str(args.seconds), "--sides", args.sides,
             "--out", str(ref_path)]
    ref = subprocess.run(child, env=env, cwd=ROOT, capture_output=True, text=True, timeout=args.ref_timeout)
    print(f"{name}: reference exit {ref.returncode} {ref.stderr.strip()[-300:]}", file=sys.stderr, flush=True)
    versions: dict[str, Any] = {}
    if ref_path.exists():
        data = json.loads(ref_path.read_text())
        rows += data["rows"]
        versions = data.get("versions", {})
    else:
        rows.append({"method": "reference process", "side": sides[0], "ms": None,
                     "error": f"exit {ref.returncode}: {ref.stderr.strip()[-200:]}"})
    return {"label": case["label"], "rows": rows, "rest": lab_rest(run) if run else {"rounds": 0},
            "lab_csv": {k: row.get(k) for k in ("status", "error", "speedup", "sm_clock_mean_mhz", "sm_clock_min_mhz",
                                                "power_mean_w", "sm_clock_eager_mhz", "sm_clock_compiled_mhz",
                                                "throttle_reasons", "eager_median_ms", "compiled_median_ms")},
            "versions": versions}


def telemetry(device: str) -> tuple[Any, Any, bool]:
    """The source and the GPU's uuid: NVML's GPU 0 on a GPU run, a FakeSource on the dry path."""
    if device.startswith("cuda"):
        from tui.telemetry.nvml import NvmlSource

        source = NvmlSource()
        snaps = source.snapshot()
        return source, (snaps[0].uuid if snaps else None), False
    from tui.telemetry.fake import FakeSource

    source = FakeSource(gpus=1)
    return source, source.snapshot()[0].uuid, True


def environment(device: str) -> dict[str, Any]:
    """Date, card and driver for the header (torch and triton come from the reference process)."""
    env: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": "cpu", "driver": "n/a"}
    if device.startswith("cuda"):
        try:
            query = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                   capture_output=True, text=True, timeout=30)
            env["gpu"], _, env["driver"] = query.stdout.strip().splitlines()[0].partition(", ")
        except (OSError, IndexError, subprocess.SubprocessError) as exc:
            print(f"nvidia-smi: {exc}", file=sys.stderr)
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for the dry path (tiny cases, fake NVML)")
    parser.add_argument("--backend", default=None, help="default inductor (eager on the CPU dry path)")
    parser.add_argument("--cases", default=None, help="comma list of encoder, block, gemm (default all)")
    parser.add_argument("--seconds", type=float, default=3.0, help="each sustained method's length")
    parser.add_argument("--sides", default="compiled", help="compiled, eager or eager,compiled")
    parser.add_argument("--lab-timeout", type=float, default=240.0)
    parser.add_argument("--ref-timeout", type=float, default=240.0)
    parser.add_argument("--budget", type=float, default=380.0, help="start no case after this many seconds")
    args = parser.parse_args(argv)
    cpu = not args.device.startswith("cuda")
    args.backend = args.backend or ("eager" if cpu else "inductor")
    table = CPU_CASES if cpu else CASES
    names = args.cases.split(",") if args.cases else list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        parser.error(f"--cases: unknown {', '.join(unknown)} (allowed: {', '.join(table)})")
    args.out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(ROOT)) if p)
    info = environment(args.device)
    source, uuid, info["fake"] = telemetry(args.device)
    sampler = WindowSampler(source, uuid).start()
    results: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + args.budget
        for name in names:
            started = time.monotonic()
            if started > deadline:
                print(f"budget of {args.budget:.0f} s spent: {name} and later not started", file=sys.stderr, flush=True)
                break
            try:
                results[name] = run_case(name, table[name], args, env)
            except subprocess.TimeoutExpired as exc:
                results[name] = {
                    "label": table[name]["label"],
                    "rest": {"rounds": 0},
                    "rows": [{"method": "timed out", "side": args.sides, "ms": None, "error": str(exc)[:200]}],
                }
            info.update(results[name].get("versions") or {})
            results[name]["rows"] = with_stats(results[name]["rows"], list(sampler.samples))
            print(f"{name}: {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
            write(args.out, results, info, sampler)
    finally:
        sampler.stop()
    write(args.out, results, info, sampler)
    print((args.out / "sustained.md").read_text())
    return 0


def write(out: Path, results: dict[str, Any], info: dict[str, Any], sampler: WindowSampler) -> None:
    """The table and the raw JSON (every NVML sample included)."""
    (out / "sustained.md").write_text(render(results, info))
    raw = {"env": info, "results": results, "samples": sampler.samples, "sampler_errors": sampler.errors}
    (out / "sustained.json").write_text(json.dumps(raw, indent=1, default=str))


if __name__ == "__main__":
    raise SystemExit(main())
