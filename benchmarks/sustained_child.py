"""The reference half of ``benchmarks/sustained.py``: one workload timed under sustained load.

Run by sustained.py in a process of its own (never beside a compile-lab worker)::

    python benchmarks/sustained_child.py --case '{"workload": "matmul", "params": {"n": 8192}, "dtype": "bfloat16"}' \
        --device cuda --seconds 3 --sides compiled --out ref.json

It builds the workload with compile-lab's own builder (the same model, inputs and compiled
function a compile-lab run times), then times each side with these methods back to back, so the
card never rests between them (except where a method rests on purpose):

* ``events loop``: calls queued without a synchronize for ``--seconds``, a CUDA event pair around
  each (compile-lab's device clock without its rounds); median per call;
* ``events loop, L2 flushed``: the same with a 256 MiB buffer zeroed before each call, outside
  the events (what do_bench does);
* ``do_bench`` / ``do_bench_cudagraph``: triton's, called again and again for ``--seconds``
  (``return_mode="all"``); median over every repetition;
* ``profiler loop``: ``PROFILE_CALLS`` calls under ``torch.profiler`` after ``--seconds`` / 2 of
  the same loop unprofiled; the device kernels' time summed, per call;
* ``profiler after 1 s rest``: 1 s idle, one call, a synchronize, then 5 profiled calls: the
  conditions of compile-lab's own profile pass.

Each method reports its window on ``time.monotonic()`` (the parent's NVML samples are matched to
it: CLOCK_MONOTONIC is one clock for every process on Linux). On the CPU (``--device cpu``: the
dry path for tests) the events become ``perf_counter``, triton's methods report that they need
CUDA, and the profiler sums the CPU time of the top-level ``aten::`` ops.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from tui.engine.options import RunOptions  # noqa: E402
from tui.engine.worker import precision  # noqa: E402
from tui.engine.worker.measure import make_compile_fn  # noqa: E402
from tui.engine.worker.workloads import build_workload  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
PROFILE_CALLS = 200
REST_S = 1.0
L2_FLUSH_BYTES = 256 * 1024 * 1024


class Side:
    """One side's callable and what timing it needs."""

    def __init__(self, step: Callable[[tuple], Any], args: tuple, cuda: bool) -> None:
        self.step, self.args, self.cuda = step, args, cuda

    def call(self) -> None:
        """One call, its output dropped."""
        self.step(self.args)

    def sync(self) -> None:
        """Wait for the device."""
        if self.cuda:
            torch.cuda.synchronize()


def _window(fn: Callable[[], dict[str, Any]], side: Side) -> dict[str, Any]:
    side.sync()
    t0 = time.monotonic()
    try:
        row = fn()
    except Exception as exc:  # noqa: BLE001 - one method failing must not lose the others: the row says why
        row = {"ms": None, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"}
    side.sync()
    row.setdefault("t0", t0)  # a method that times only part of its window says which part
    row.setdefault("t1", time.monotonic())
    return row


def events_loop(side: Side, seconds: float, flush: bool) -> dict[str, Any]:
    """Per-call device times of a loop that never synchronizes until ``seconds`` of queueing have passed."""
    buffer = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda") if (flush and side.cuda) else None
    pairs: list[tuple[Any, Any]] = []
    cpu_ms: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(20):
            if buffer is not None:
                buffer.zero_()
            if side.cuda:
                begin, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                begin.record()
                side.call()
                stop.record()
                pairs.append((begin, stop))
            else:
                start = time.perf_counter()
                side.call()
                cpu_ms.append((time.perf_counter() - start) * 1e3)
    side.sync()
    ms = [b.elapsed_time(e) for b, e in pairs] if side.cuda else cpu_ms
    ms = ms[len(ms) // 10:]  # the first tenth is the load ramping up
    return {"ms": statistics.median(ms), "calls": len(ms)}


def _do_bench_all(bench: Callable[..., Any], fn: Callable[[], None], **kwargs: Any) -> list[float]:
    """Every rep's time; from a triton without ``return_mode="all"`` (it raises, or returns one number) its median."""
    try:
        values = bench(fn, return_mode="all", **kwargs)
    except (TypeError, AssertionError, ValueError):
        values = None
    if not isinstance(values, (list, tuple)):
        values = [bench(fn, return_mode="median", **kwargs)]
    return [float(v) for v in values]


def triton_loop(side: Side, seconds: float, graph: bool) -> dict[str, Any]:
    """``do_bench`` (or ``do_bench_cudagraph``) called again and again for ``seconds``: median of every rep."""
    if not side.cuda:
        return {"ms": None, "error": "needs CUDA"}
    from triton.testing import do_bench, do_bench_cudagraph

    times: list[float] = []
    rounds = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if graph:
            with torch.cuda.stream(torch.cuda.Stream()):
                times += _do_bench_all(do_bench_cudagraph, side.call, rep=100)
        else:
            times += _do_bench_all(do_bench, side.call, warmup=25, rep=100)
        rounds += 1
    return {"ms": statistics.median(times), "calls": len(times), "note": f"{rounds} do_bench calls"}


def kernel_ms(prof: Any, cuda: bool) -> float:
    """The device kernels' time in a profile (ms); on the CPU the top-level ``aten::`` ops' CPU time."""
    total_us = 0.0
    for event in prof.events():
        on_device = "CPU" not in str(getattr(event, "device_type", "CPU"))
        if cuda and on_device:
            total_us += float(event.time_range.elapsed_us())
        elif not cuda and event.name.startswith("aten::") and not _under_aten(event):
            total_us += float(event.time_range.elapsed_us())
    return total_us / 1e3


def _under_aten(event: Any) -> bool:
    parent = getattr(event, "cpu_parent", None)
    while parent is not None:
        if parent.name.startswith("aten::"):
            return True
        parent = getattr(parent, "cpu_parent", None)
    return False


def profiled(side: Side, calls: int, before: Callable[[], None]) -> dict[str, Any]:
    """``calls`` calls under torch.profiler after ``before()``: kernel time summed, per call; the window is the
    calls'."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if side.cuda else [])
    before()
    with profile(activities=activities) as prof:
        t0 = time.monotonic()
        for _ in range(calls):
            side.call()
        side.sync()
        t1 = time.monotonic()
    return {"ms": kernel_ms(prof, side.cuda) / calls, "calls": calls, "t0": t0, "t1": t1}


def _sustain(side: Side, seconds: float) -> Callable[[], None]:
    def run() -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for _ in range(20):
                side.call()

    return run


def _rest(side: Side) -> Callable[[], None]:
    def run() -> None:
        side.sync()
        time.sleep(REST_S)
        side.call()  # compile-lab's profile pass: one unprofiled call, finished, then the profiled ones
        side.sync()

    return run


def methods(side: Side, seconds: float) -> list[tuple[str, Callable[[], dict[str, Any]]]]:
    """Every method, in the order they run."""
    return [
        ("events loop", lambda: events_loop(side, seconds, flush=False)),
        ("events loop, L2 flushed", lambda: events_loop(side, seconds, flush=True)),
        ("do_bench", lambda: triton_loop(side, seconds, graph=False)),
        ("do_bench_cudagraph", lambda: triton_loop(side, seconds, graph=True)),
        ("profiler loop", lambda: profiled(side, PROFILE_CALLS, _sustain(side, seconds / 2))),
        ("profiler after 1 s rest", lambda: profiled(side, 5, _rest(side))),
    ]


def build(case: dict[str, Any], device: str, backend: str) -> tuple[dict[str, Side], RunOptions]:
    """The workload's eager and compiled sides, as compile-lab's worker builds them."""
    options = RunOptions(
        workload=case["workload"],
        params=dict(case.get("params", {})),
        dtype=case.get("dtype", "float32"),
        mode=case.get("mode", "default"),
        backend=backend,
        device=device,
    ).validated()
    precision.apply(options.precision)
    torch.manual_seed(options.seed)
    cuda = device.startswith("cuda")
    built = build_workload(options, torch.device("cuda:0" if cuda else "cpu"), DTYPES[options.dtype])
    args = built.input_sets[0]
    for _ in range(3):
        built.eager_step(args)
    compiled = built.compile_step(make_compile_fn(options))
    for _ in range(5):
        compiled(args)
    return {"eager": Side(built.eager_step, args, cuda), "compiled": Side(compiled, args, cuda)}, options


def main(argv: list[str] | None = None) -> int:
    """Time the case's sides with every method; write the rows as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", required=True, help="JSON: workload, params, dtype, mode")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--sides", default="compiled")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    sides, _ = build(json.loads(args.case), args.device, args.backend)
    rows = []
    for name in args.sides.split(","):
        side = sides[name]
        _sustain(side, 1.0)()  # the card loaded before the first method, as a user's loop has it
        for method, fn in methods(side, args.seconds):
            row = _window(fn, side)
            row.update(side=name, method=method)
            rows.append(row)
            print(json.dumps(row), flush=True)
    versions = {"torch": torch.__version__}
    try:
        import triton

        versions["triton"] = triton.__version__
    except ImportError:
        versions["triton"] = None
    args.out.write_text(json.dumps({"rows": rows, "versions": versions}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
