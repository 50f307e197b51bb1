"""Timing fidelity: compile-lab's medians against triton's do_bench and torch's Timer.

One command, on a CUDA machine::

    python benchmarks/fidelity.py --out fidelity.md [--quick]

For each case (workload x compile mode) it runs compile-lab's own measuring code
(``tui.engine.worker.measure.Benchmark``) in this process, then times the very same
eager and compiled callables on the same inputs with

* ``triton.testing.do_bench(fn, return_mode="median")`` (per-rep CUDA events, L2 flushed
  before every rep), compared with compile-lab's CUDA-event median measured with L2 flush;
* ``torch.utils.benchmark.Timer(...).blocked_autorange()`` (host wall time of synchronised
  blocks, no flush, garbage collector off), compared with compile-lab's host clock;
* a plain loop of the same calls with one synchronize per block of 10 (compile-lab's block
  size here), median over 20 blocks: what compile-lab's host-inclusive time must match
  (issue 12, item 5: within +-5%).

It also measures the cost of per-iteration streaming: a block timed with one CUDA event
pair around all its calls, against the median of per-iteration event pairs.

A row with >= 50 us of device time that compile-lab does not flag launch-bound is
"GPU-bound" (target: ratio within 1.00 +- 0.03 of do_bench); elsewhere the methods measure
different things and compile-lab's launch_bound flag is what must be right.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from tui.engine.options import RunOptions  # noqa: E402
from tui.engine.protocol import Compiled, Event, WorkerWarning  # noqa: E402
from tui.engine.store.results import RunRecord  # noqa: E402
from tui.engine.worker import precision  # noqa: E402
from tui.engine.worker.measure import Benchmark, CudaClock, make_compile_fn  # noqa: E402
from tui.engine.worker.workloads import build_workload  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

CASES: list[tuple[str, dict[str, Any]]] = [
    ("matmul 8192 fp32", {"workload": "matmul", "params": {"n": 8192}}),
    ("matmul 8192 fp32+tf32", {"workload": "matmul", "params": {"n": 8192}, "precision": "tf32"}),
    ("matmul 8192 bf16", {"workload": "matmul", "params": {"n": 8192}, "dtype": "bfloat16"}),
    ("pointwise 4096", {"workload": "pointwise", "params": {"n": 4096}}),
    ("cnn b64", {"workload": "cnn", "params": {"batch": 64}}),
    ("cnn b256", {"workload": "cnn", "params": {"batch": 256}}),
    ("transformer_block", {"workload": "transformer_block"}),
]
MODES = ("default", "reduce-overhead")


@dataclasses.dataclass
class Row:
    """One side of one case, with every method's median in ms."""

    case: str
    mode: str
    side: str
    cl_iter: float
    cl_host: float
    cl_iter_flush: float
    do_bench: float
    timer: float
    block_pair: float
    plain: float
    launch_bound: bool | None
    rounds: int = 1
    flush_vs_do_bench: float = float("nan")
    host_vs_timer: float = float("nan")
    host_vs_plain: float = float("nan")
    round_spread: float = 0.0

    @property
    def gpu_bound(self) -> bool:
        """At least 50 us of device time and not flagged launch-bound by compile-lab.

        (Device time alone is not enough: with the head start a launch-bound CNN shows
        ~0.1 ms of device time while its host pays 0.3-0.5 ms per call.)
        """
        return self.cl_iter >= 0.050 and not self.launch_bound


def _collect(bench_events: list[Event], options: RunOptions) -> RunRecord:
    record = RunRecord.new(options)
    for event in bench_events:
        record.apply(event)
    return record


def _median_side(record: RunRecord, side: str, clock: str) -> float:
    stats = getattr(record.summary().side(side), clock)
    return float(stats.median) if stats is not None else float("nan")


def _per_block_pair(clock: CudaClock, step: Callable[[tuple], Any], args: tuple, calls: int, blocks: int,
                    prepare: Callable[[], None]) -> float:
    """Median over blocks of (one event pair around ``calls`` calls) / calls, in ms.

    Each block gets the head start compile-lab's own blocks of ``step`` got (``clock`` has
    measured them), so the difference from the per-iteration median is the cost of the
    per-iteration events alone. (Until 2026-12-03 this passed a fresh callable, whose head
    start was the 15 ms default: on a power-capped GPU that spin alone made the blocks'
    GEMMs ~10% faster, which was reported as a "stream cost".)
    """
    values = []
    for _ in range(blocks):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        clock._head_start(step, calls)
        begin.record()
        for _ in range(calls):
            prepare()
            step(args)
        end.record()
        torch.cuda.synchronize()
        values.append(begin.elapsed_time(end) / calls)
    return statistics.median(values)


def _plain_loop(step: Callable[[tuple], Any], args: tuple, calls: int, blocks: int,
                prepare: Callable[[], None]) -> float:
    """Median over blocks of a plain loop's wall time per call, in ms: the calls, then one synchronize."""
    values = []
    for _ in range(blocks):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            prepare()
            step(args)
        torch.cuda.synchronize()
        values.append((time.perf_counter() - start) * 1e3 / calls)
    return statistics.median(values)


def run_case(name: str, fields: dict[str, Any], mode: str, iters: int, rounds: int = 1) -> list[Row]:
    """Measure one case in one compile mode: two rows (eager, compiled).

    With ``rounds`` > 1 every method runs once per round, in the same order, and each
    reported figure is the median over rounds: a card whose clocks drift (power cap,
    heat) then drifts under every method alike instead of under whichever ran last.
    """
    from triton.testing import do_bench
    from torch.utils.benchmark import Timer

    options = RunOptions(device="cuda", mode=mode, iters=iters, block_size=10, warmup=10, **fields).validated()
    precision.apply(options.precision)  # as the worker does (default: torch's flags untouched)
    torch.manual_seed(options.seed)
    device = torch.device("cuda:0")
    built = build_workload(options, device, DTYPES[options.dtype])
    events: list[Event] = []
    bench = Benchmark(
        built, options, device, events.append, lambda message: events.append(WorkerWarning(message=message))
    )
    bench.eager_setup()
    events.append(Compiled(compile_s=bench.compile(make_compile_fn(options))))
    bench.warm_up()
    plain_clock, flush_clock = bench.clock, CudaClock(device, l2_flush=True)
    args = built.input_sets[0]
    # A fresh clock knows no step yet: its first blocks would get a 1 ms-per-call head start (a rest
    # that makes a power-capped card read fast). Warm it as a run's warm-up blocks warm the run's clock.
    for side_name in ("eager", "compiled"):
        for _ in range(2):
            flush_clock.run_block(bench._step(side_name), [args] * 10, bench._prepare(side_name))
    mark = getattr(torch.compiler, "cudagraph_mark_step_begin", None)
    sides = (("eager", built.eager_step), ("compiled", bench.compiled_step))
    per_round: list[dict[str, dict[str, float]]] = []
    launch_bound = None

    def compile_lab(clock: CudaClock, flush: bool) -> RunRecord:
        collected: list[Event] = []
        bench.emit = collected.append
        bench.clock = clock
        bench.measured = {"eager": 0, "compiled": 0}
        bench.measure()
        bench.clock = plain_clock
        return _collect(collected, dataclasses.replace(options, l2_flush=flush))

    for _ in range(rounds):
        plain = compile_lab(plain_clock, False)
        flushed = compile_lab(flush_clock, True)
        launch_bound = plain.summary().launch_bound
        figures: dict[str, dict[str, float]] = {}
        for side, step in sides:
            prepare = mark if (side == "compiled" and bench.cudagraphs and mark) else (lambda: None)

            def call(step=step, prepare=prepare) -> None:
                prepare()
                step(args)

            # Timer synchronises CUDA at the ends of its blocks: per call it reports the pipelined cost.
            timer = Timer(stmt="call()", globals={"call": call}).blocked_autorange(min_run_time=0.2)
            figures[side] = {
                "cl_iter": _median_side(plain, side, "iter"),
                "cl_host": _median_side(plain, side, "host"),
                "cl_iter_flush": _median_side(flushed, side, "iter"),
                "do_bench": float(do_bench(call, warmup=50, rep=200, return_mode="median")),
                "timer": float(timer.median) * 1e3,
                "block_pair": _per_block_pair(plain_clock, step, args, 10, 20, prepare),
                "plain": _plain_loop(step, args, 10, 20, prepare),
            }
        per_round.append(figures)

    rows = []
    for side, _ in sides:
        def med(key: str, side: str = side) -> float:
            return statistics.median(r[side][key] for r in per_round)

        def paired(a: str, b: str, side: str = side) -> float:
            return statistics.median(r[side][a] / r[side][b] for r in per_round if r[side][b] > 0)

        rows.append(Row(
            case=name, mode=mode, side=side, cl_iter=med("cl_iter"), cl_host=med("cl_host"),
            cl_iter_flush=med("cl_iter_flush"), do_bench=med("do_bench"), timer=med("timer"),
            block_pair=med("block_pair"), plain=med("plain"), launch_bound=launch_bound, rounds=rounds,
            flush_vs_do_bench=paired("cl_iter_flush", "do_bench"), host_vs_timer=paired("cl_host", "timer"),
            host_vs_plain=paired("cl_host", "plain"),
            round_spread=max(r[side]["do_bench"] for r in per_round) / min(r[side]["do_bench"] for r in per_round) - 1,
        ))
    bench = built = None  # frees the model (compile_lab above keeps its cell) before the cache is emptied
    torch._dynamo.reset()
    torch.cuda.empty_cache()
    return rows


def render(rows: list[Row], env: dict[str, str]) -> str:
    """The fidelity table as Markdown."""
    lines = [
        f"Measured {env['date']} on {env['gpu']}, driver {env['driver']}, torch {env['torch']}, "
        f"CUDA {env['cuda']}, triton {env['triton']}.",
        "",
        "Times are medians in ms. `cl iter` = compile-lab's per-iteration CUDA events, `cl host` = its host-inclusive "
        "time per call (host sub-blocks: the calls alone, one synchronize), `+flush` = with compile-lab's L2 flush; "
        "`do_bench` flushes L2 before every rep; `Timer` = torch.utils.benchmark blocked_autorange (wall time of "
        "blocks "
        "synchronised at their ends, no flush, GC off); `plain` = a plain loop, one synchronize per 10 calls. "
        "`stream cost` = per-iteration events vs one event pair per 10-call block, in % of the median. "
        f"Every method ran once per round, {rows[0].rounds if rows else 1} round(s), in the same order; times are "
        "medians over rounds and the ratios are medians of the per-round ratios (paired, so a drift of the card "
        "between rounds cancels). `do_bench spread` = slowest / fastest do_bench round - 1.",
        "",
        "| case | mode | side | cl iter | cl iter+flush | do_bench | **+flush / do_bench** | cl host | plain "
        "| **host / plain** | Timer | host / Timer | stream cost | class | launch_bound flag | do_bench spread over "
        "rounds |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for r in rows:
        stream = (r.cl_iter - r.block_pair) / r.cl_iter * 100 if r.cl_iter > 0 else float("nan")
        lines.append(
            f"| {r.case} | {r.mode} | {r.side} | {r.cl_iter:.4f} | {r.cl_iter_flush:.4f} | {r.do_bench:.4f} | "
            f"**{r.flush_vs_do_bench:.3f}** | {r.cl_host:.4f} | {r.plain:.4f} | **{r.host_vs_plain:.3f}** | "
            f"{r.timer:.4f} | {r.host_vs_timer:.3f} | {stream:+.1f}% | "
            f"{'GPU-bound' if r.gpu_bound else 'launch-bound/short'} | "
            f"{r.launch_bound} | {r.round_spread:.1%} |"
        )
    bound = [r for r in rows if r.gpu_bound and r.do_bench > 0]
    if bound:
        worst = max(bound, key=lambda r: abs(r.flush_vs_do_bench - 1))
        lines += [
            "",
            f"GPU-bound rows (>= 50 us, not flagged launch-bound): {len(bound)}; largest deviation from do_bench: "
            f"{worst.flush_vs_do_bench:.3f} ({worst.case}, {worst.mode}, {worst.side}); target 1.00 +- 0.02.",
        ]
    hosts = [r for r in rows if r.plain > 0]
    if hosts:
        worst = max(hosts, key=lambda r: abs(r.host_vs_plain - 1))
        lines += [
            "",
            f"Host-inclusive time against a plain loop, every row: largest deviation {worst.host_vs_plain:.3f} "
            f"({worst.case}, {worst.mode}, {worst.side}); target 1.00 +- 0.05.",
        ]
    return "\n".join(lines) + "\n"


def environment() -> dict[str, str]:
    """Date, card, driver and versions for the table's header."""
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = "n/a"
    driver = "n/a"
    try:
        import pynvml

        pynvml.nvmlInit()
        driver = pynvml.nvmlSystemGetDriverVersion()
    except Exception:  # noqa: BLE001 - a header field: n/a when NVML is missing or does not answer
        pass
    return {
        "date": time.strftime("%Y-%m-%d"),
        "gpu": torch.cuda.get_device_name(0),
        "driver": str(driver),
        "torch": torch.__version__,
        "cuda": str(torch.version.cuda),
        "triton": triton_version,
    }


def main(argv: list[str] | None = None) -> int:
    """Run every case and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("fidelity.md"))
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="first two cases only")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds of every method (default 1)")
    parser.add_argument("--cases", default="", help="comma list of case-name substrings to keep (default: all)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("fidelity.py needs a CUDA GPU", file=sys.stderr)
        return 2
    cases = CASES[:2] if args.quick else CASES
    if args.cases:
        cases = [c for c in cases if any(part in c[0] for part in args.cases.split(","))]
    rows: list[Row] = []
    for name, fields in cases:
        for mode in args.modes.split(","):
            started = time.perf_counter()
            try:
                rows.extend(run_case(name, fields, mode, args.iters, args.rounds))
            except Exception:  # noqa: BLE001 - one broken case must not lose the others; its traceback is printed
                print(f"{name} {mode}: failed:\n{traceback.format_exc()}", file=sys.stderr)
                continue
            print(f"{name} {mode}: measured in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
            args.out.write_text(render(rows, environment()))
    text = render(rows, environment())
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
