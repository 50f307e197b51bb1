"""Host-inclusive time: a plain loop against each way of timing it, one factor at a time.

One command, on a CUDA machine::

    python benchmarks/host_factors.py --out host_factors.md --json host_factors.json [--rounds 3] [--quick]

Issue 12, item 5: compile-lab's host-inclusive time per call must be what a plain loop of the
same calls pays (one synchronize per block), within +-5%. An independent check found the old
clock 2x high on the seed CNN; this script measures why, on the same callables and inputs,
for each (workload, side):

============  ===========================================================================
plain         the calls, one synchronize per block of 10 (compile-lab's default block size)
events        + a CUDA event pair around each call (the old clock timed device and host
              in one loop)
keep          + each output kept in a list until the block ends
clone         + each output cloned right after its call
gc off        + the garbage collector off during the block (``Timer`` does this)
threads 1     + ``torch.set_num_threads(1)`` (``Timer``'s default)
inner sync    + ``torch.cuda.synchronize()`` after each call
head start    + a spin before the block (sized as compile-lab sizes it), host time =
              max(queueing time, wall time - spin) / calls: the old head-start subtraction
old clock     all of the old clock at once: spin, per-call events, the subtraction, and its
              head-start sizing from its own last block (which grew without bound when the
              workload synchronises inside)
block 100     plain, one synchronize per 100 calls
plain 300     plain, one synchronize per 300 calls (the independent check's loop)
host blocks   compile-lab's host sub-block (``CudaClock.host_block``) run back to back: its loop
              alone, without the rest of a measure round around it
compile-lab   compile-lab's ``host_ms_per_call`` now (host sub-blocks of ``CudaClock`` inside
              whole measure rounds), the median over a ``Benchmark.measure`` of 100 calls per side
============  ===========================================================================

Workloads: the seed's CNN at batch 64 (eager, and compiled with reduce-overhead), pointwise
4096 (default mode), ``benchmarks/workloads/item_sync.py`` (``.item()`` inside its forward) and
the built-in ``graph_break`` (a data-dependent branch). Each method runs 300 calls per round
(the two with a spin 100);
every method runs once per round, in the same order; a figure is the median over rounds of
the method's median ms per call over its blocks, and a ratio is the median over rounds of the
per-round ratio to ``plain`` (paired: a drift of the host between rounds cancels).

Output: a Markdown table (``--out``) and everything, every round, as JSON (``--json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from torch.utils import _pytree  # noqa: E402

from tui.engine.options import RunOptions  # noqa: E402
from tui.engine.protocol import BlockTimed, Event  # noqa: E402
from tui.engine.worker.clocks import BlockSpec, head_start_ms  # noqa: E402
from tui.engine.worker.measure import Benchmark, make_compile_fn  # noqa: E402
from tui.engine.worker.workloads import build_workload  # noqa: E402

ITEM_SYNC = str(Path(__file__).resolve().with_name("workloads") / "item_sync.py")
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("cnn b64", {"workload": "cnn", "params": {"batch": 64}}, "reduce-overhead"),
    ("pointwise 4096", {"workload": "pointwise", "params": {"n": 4096}}, "default"),
    ("item_sync (.item() inside)", {"workload": ITEM_SYNC}, "default"),
    ("graph_break", {"workload": "graph_break"}, "default"),
]
BLOCK = 10
CALLS = 300
METHODS = ("plain", "events", "keep", "clone", "gc off", "threads 1", "inner sync", "head start", "old clock",
           "block 100", "plain 300", "host blocks", "compile-lab")


@dataclasses.dataclass
class Side:
    """One side of one case: what each method calls, and what the methods remember between blocks."""

    case: str
    mode: str
    side: str
    step: Callable[[tuple], Any]
    args: tuple
    prepare: Callable[[], None]
    device_ms: float | None
    cycles_per_ms: float | None
    clock: Any = None
    old_state: dict[str, float] = dataclasses.field(default_factory=dict)


def _sync() -> None:
    torch.cuda.synchronize()


def _blocks(side: Side, size: int, body: Callable[[], None], before: Callable[[], None] | None = None,
            after: Callable[[], None] | None = None) -> float:
    """Median over blocks of (wall time of ``size`` calls of ``body``, then one synchronize) / calls, in ms."""
    values = []
    for _ in range(max(1, CALLS // size)):
        _sync()
        if before is not None:
            before()
        start = time.perf_counter()
        for _ in range(size):
            side.prepare()
            body()
        _sync()
        values.append((time.perf_counter() - start) * 1e3 / size)
        if after is not None:
            after()
    return statistics.median(values)


def _plain(side: Side, size: int = BLOCK) -> float:
    step, args = side.step, side.args
    return _blocks(side, size, lambda: step(args))


def _events(side: Side) -> float:
    step, args = side.step, side.args
    pairs: list[tuple[Any, Any]] = []

    def refill() -> None:
        pairs[:] = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(BLOCK)]

    def body() -> None:
        begin, end = pairs.pop()
        begin.record()
        step(args)
        end.record()

    refill()
    return _blocks(side, BLOCK, body, before=refill)


def _keep(side: Side) -> float:
    step, args = side.step, side.args
    kept: list[Any] = []
    return _blocks(side, BLOCK, lambda: kept.append(step(args)), after=kept.clear)


def _clone(side: Side) -> float:
    step, args = side.step, side.args

    def body() -> None:
        _pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, step(args))

    return _blocks(side, BLOCK, body)


def _gc_off(side: Side) -> float:
    step, args = side.step, side.args
    return _blocks(side, BLOCK, lambda: step(args), before=gc.disable, after=gc.enable)


def _threads_one(side: Side) -> float:
    step, args = side.step, side.args
    threads = torch.get_num_threads()
    return _blocks(side, BLOCK, lambda: step(args), before=lambda: torch.set_num_threads(1),
                   after=lambda: torch.set_num_threads(threads))


def _inner_sync(side: Side) -> float:
    step, args = side.step, side.args

    def body() -> None:
        step(args)
        torch.cuda.synchronize()

    return _blocks(side, BLOCK, body)


def _spun_block(side: Side, head_ms: float, events: bool) -> tuple[float, float, float, float]:
    """One block after a spin of ``head_ms``: (host ms per call by the old formula, queue ms, first ms, min device
    ms)."""
    step, args = side.step, side.args
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(BLOCK)]
    spin = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
    _sync()
    spin[0].record()
    torch.cuda._sleep(int(head_ms * (side.cycles_per_ms or 0)))
    spin[1].record()
    start = time.perf_counter()
    first = None
    for begin, end in pairs:
        side.prepare()
        if events:
            begin.record()
        step(args)
        if events:
            end.record()
        if first is None:
            first = time.perf_counter()
    queued = (time.perf_counter() - start) * 1e3
    _sync()
    wall = (time.perf_counter() - start) * 1e3
    head = spin[0].elapsed_time(spin[1])
    device = min(b.elapsed_time(e) for b, e in pairs) if events else (side.device_ms or 0.0)
    return max(queued, wall - head) / BLOCK, queued / BLOCK, ((first or start) - start) * 1e3, device


#: Blocks of the two methods with a spin (the old sizing grows it to 200 ms a block on a workload
#: that synchronises inside: fewer blocks keep the script's time in bounds).
SPUN_BLOCKS = 10


def _head_start(side: Side) -> float:
    """The head-start subtraction alone (no events): the spin sized from compile-lab's figures for this step."""
    values = []
    for _ in range(SPUN_BLOCKS):
        q = side.old_state.get("hs_q")
        head = head_start_ms(q, side.device_ms if q is not None else None, BLOCK, side.old_state.get("hs_f"))
        host, q, f, _ = _spun_block(side, head, events=False)
        side.old_state.update(hs_q=q, hs_f=f)
        values.append(host)
    return statistics.median(values)


def _old_clock(side: Side) -> float:
    """The clock before issue 12: spin, per-call events, max(queued, wall - spin), sized from its own last block."""
    values = []
    for _ in range(SPUN_BLOCKS):
        state = side.old_state
        head = head_start_ms(state.get("q"), state.get("d"), BLOCK, state.get("f"))
        host, q, f, d = _spun_block(side, head, events=True)
        state.update(q=q, f=f, d=d)
        values.append(host)
    return statistics.median(values)


def _host_blocks(side: Side) -> float:
    """compile-lab's own host sub-block, back to back (the loop without the measure round around it)."""
    spec = BlockSpec(side.step, [side.args] * BLOCK, side.prepare)
    return statistics.median(side.clock.host_block(spec) for _ in range(CALLS // BLOCK))


FACTORS: dict[str, Callable[[Side], float]] = {
    "plain": _plain, "events": _events, "keep": _keep, "clone": _clone, "gc off": _gc_off,
    "threads 1": _threads_one, "inner sync": _inner_sync, "head start": _head_start, "old clock": _old_clock,
    "block 100": lambda side: _plain(side, 100), "plain 300": lambda side: _plain(side, 300),
    "host blocks": _host_blocks,
}


def _compile_lab_hosts(bench: Benchmark) -> dict[str, float]:
    """Run compile-lab's own measurement once more; each side's median host_ms_per_call over its blocks."""
    events: list[Event] = []
    bench.emit = events.append
    bench.measured = {"eager": 0, "compiled": 0}
    bench.measure()
    hosts: dict[str, list[float]] = {"eager": [], "compiled": []}
    for event in events:
        if isinstance(event, BlockTimed) and event.stage == "measure" and event.host_ms_per_call is not None:
            hosts[event.side].append(event.host_ms_per_call)
    return {side: statistics.median(values) for side, values in hosts.items() if values}


def run_case(name: str, fields: dict[str, Any], mode: str, rounds: int) -> list[dict[str, Any]]:
    """Every method on both sides of one case, ``rounds`` times: one result dict per side."""
    options = RunOptions(device="cuda", mode=mode, iters=100, block_size=BLOCK, warmup=10, **fields).validated()
    torch.manual_seed(options.seed)
    device = torch.device("cuda:0")
    built = build_workload(options, device, torch.float32)
    warnings: list[str] = []
    bench = Benchmark(built, options, device, lambda event: None, warnings.append)
    bench.eager_setup()
    bench.compile(make_compile_fn(options))
    bench.warm_up()
    mark = getattr(torch.compiler, "cudagraph_mark_step_begin", None)
    sides = []
    for side_name, step in (("eager", built.eager_step), ("compiled", bench.compiled_step)):
        known = bench.clock._times.get(step)
        prepare = mark if (side_name == "compiled" and bench.cudagraphs and mark) else (lambda: None)
        sides.append(Side(name, mode, side_name, step, built.input_sets[0], prepare,
                          known.device_ms if known else None, bench.clock._calibrate(), bench.clock))
    per_round: list[dict[str, dict[str, float]]] = []
    for _ in range(rounds):
        figures = {side.side: {method: FACTORS[method](side) for method in FACTORS} for side in sides}
        for side_name, host in _compile_lab_hosts(bench).items():
            figures[side_name]["compile-lab"] = host
        per_round.append(figures)
    results = []
    for side in sides:
        rows = [r[side.side] for r in per_round]
        results.append(
            {
                "case": name,
                "mode": mode,
                "side": side.side,
                "device_ms": side.device_ms,
                "ms": {m: statistics.median(r[m] for r in rows) for m in METHODS if all(m in r for r in rows)},
                "ratio": {
                    m: statistics.median(r[m] / r["plain"] for r in rows) for m in METHODS if all(m in r for r in rows)
                },
                "rounds": rows,
                "warnings": warnings,
            }
        )
    del bench, built
    torch._dynamo.reset()
    torch.cuda.empty_cache()
    return results


def render(results: list[dict[str, Any]], env: dict[str, str], rounds: int) -> str:
    """The factor table as Markdown: plain ms per call, then each method's ratio to it."""
    shown = [m for m in METHODS if m != "plain"]
    lines = [
        f"Measured {env['date']} on {env['gpu']}, driver {env['driver']}, torch {env['torch']}, CUDA {env['cuda']}.",
        "",
        f"`plain` = ms per call of a plain loop (one synchronize per {BLOCK} calls, median over blocks); every other "
        f"column is that method's ms per call over `plain`'s, median of {rounds} paired round(s). `device` = the "
        "fastest call's device time (CUDA events). **compile-lab** is the host-inclusive time compile-lab reports "
        "(target: 1.00 +- 0.05).",
        "",
        "| case | mode | side | device ms | plain ms | " + " | ".join(
            f"**{m}**" if m == "compile-lab" else m for m in shown) + " |",
        "|---|---|---|---:|---:|" + "---:|" * len(shown),
    ]
    for r in results:
        device = f"{r['device_ms']:.4f}" if r["device_ms"] is not None else "n/a"
        cells = [f"**{r['ratio'][m]:.3f}**" if m == "compile-lab" else f"{r['ratio'][m]:.3f}"
                 for m in shown if m in r["ratio"]]
        lines.append(f"| {r['case']} | {r['mode']} | {r['side']} | {device} | {r['ms']['plain']:.4f} | "
                     + " | ".join(cells) + " |")
    with_cl = [r for r in results if "compile-lab" in r["ratio"]]
    if with_cl:
        worst = max(with_cl, key=lambda r: abs(r["ratio"]["compile-lab"] - 1))
        lines += ["", f"compile-lab against the plain loop: largest deviation {worst['ratio']['compile-lab']:.3f} "
                  f"({worst['case']}, {worst['side']}); target 1.00 +- 0.05."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run every case and write the table and the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("host_factors.md"))
    parser.add_argument("--json", type=Path, default=Path("host_factors.json"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2 rounds, the first two cases")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("host_factors.py needs a CUDA GPU", file=sys.stderr)
        return 2
    from fidelity import environment  # benchmarks/ is on sys.path when this runs as a script

    rounds = 2 if args.quick else args.rounds
    cases = CASES[:2] if args.quick else CASES
    results: list[dict[str, Any]] = []
    env = environment()
    for name, fields, mode in cases:
        started = time.perf_counter()
        try:
            results.extend(run_case(name, fields, mode, rounds))
        except Exception:  # noqa: BLE001 - one broken case must not lose the others; its traceback is printed
            print(f"{name} {mode}: failed:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
            continue
        print(f"{name} {mode}: measured in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        args.out.write_text(render(results, env, rounds))
        args.json.write_text(json.dumps({"env": env, "block": BLOCK, "calls": CALLS, "rounds": rounds,
                                         "results": results}, indent=1))
    text = render(results, env, rounds)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
