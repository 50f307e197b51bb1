"""Which difference between compile-lab and do_bench moves a power-capped GEMM's time?

    python benchmarks/gemm_gap.py --out gemm_gap.md [--rounds 5] [--dtypes bfloat16,tf32]

On the H200 the bf16 8192 GEMM read 7% faster through compile-lab than through
``triton.testing.do_bench`` over five interleaved rounds, with or without compile-lab's L2
flush, while fp32 agreed to 0.4%. The two methods differ in a few ways; this script takes
them one at a time on the same eager GEMM and inputs, in interleaved rounds, with NVML's SM
clock and power sampled over each method's own time window:

* ``do_bench`` itself (rep=200 ms, median);
* a replica of do_bench's loop in this file (256 MB flush, an event pair per call, every
  call queued before one synchronize), with and without the flush;
* the replica with a synchronize after every 10 calls, and with a spin kernel before every
  10 calls: compile-lab's head start, the earlier generous one, and a fixed 1 ms;
* compile-lab's own ``CudaClock.run_block`` in blocks of 10 (with and without flush, with and
  without its head start) and in blocks of 100.

If the replica reads like do_bench and the replica with a pause every 10 calls reads like
compile-lab, the difference is how long the card runs without a pause (its power
management), not how either method reads its clock.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

from clock_drift import ClockSampler  # noqa: E402

FLUSH_BYTES = 256 * 10**6  # do_bench's cache size


def replica(fn: Callable[[], object], calls: int, flush: torch.Tensor | None, sync_every: int | None = None,
            head_start: Callable[[], None] | None = None) -> float:
    """do_bench's measuring loop, optionally paused (synchronize, head start) every ``sync_every`` calls."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    for i in range(calls):
        if sync_every and i % sync_every == 0:
            torch.cuda.synchronize()
            if head_start is not None:
                head_start()
        if flush is not None:
            flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))


def main(argv: list[str] | None = None) -> int:
    """Run every method once per round, for each dtype, and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("gemm_gap.md"))
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=120, help="timed calls per method and round")
    parser.add_argument("--dtypes", default="bfloat16,tf32")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("gemm_gap.py needs a CUDA GPU", file=sys.stderr)
        return 2
    import triton
    from triton.testing import do_bench

    from tui.engine.worker.measure import CudaClock

    device = torch.device("cuda:0")
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=device)
    lines = [
        f"GEMM {args.n}x{args.n} `x @ x.T`, eager, {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
        f"triton {triton.__version__}, {time.strftime('%Y-%m-%d')}. Median ms per call over {args.calls} calls "
        f"per method and round; `vs do_bench` = this method's median / do_bench's in the same round, then the "
        "median over rounds. SM clock and power: NVML means over the method's own window (5 ms sampling).",
        "",
        "| dtype | method | median ms (per round) | vs do_bench | mean SM MHz | mean W |",
        "|---|---|---|---:|---:|---:|",
    ]
    for dtype_name in args.dtypes.split(","):
        torch.backends.cuda.matmul.allow_tf32 = dtype_name == "tf32"
        dtype = torch.float32 if dtype_name in ("tf32", "float32") else getattr(torch, dtype_name)
        x = torch.randn(args.n, args.n, device=device, dtype=dtype)

        def fn() -> torch.Tensor:
            return x @ x.T

        def step(a: tuple) -> torch.Tensor:
            return a[0] @ a[0].T

        clock = CudaClock(device)
        clock_flush = CudaClock(device, l2_flush=True)
        clock_plain = CudaClock(device, l2_flush=True)
        clock_plain._sleep = None  # no head start

        heads: dict[int, list[float]] = {}

        def blocks(c: CudaClock, size: int) -> float:
            times: list[float] = []
            for _ in range(max(1, args.calls // size)):
                times.extend(c.run_block(step, [(x,)] * size)[0])
                heads.setdefault(id(c), []).append(c.last_head_ms)
            return statistics.median(times)

        def head_start() -> None:
            clock._head_start(step, 10)

        def old_head_start() -> None:
            # before 2026-12-03: 1.5 x the whole block's queueing time, at least 0.2 ms
            known = clock._times.get(step)
            queue_ms = known.queue_ms if known is not None else 1.0
            clock._sleep(int(max(1.5 * 10 * queue_ms, 0.2) * clock._calibrate()))

        methods: list[tuple[str, Callable[[], float]]] = [
            ("do_bench (rep=200 ms, flush)", lambda: do_bench(fn, warmup=25, rep=200, return_mode="median")),
            ("replica: flush, all queued, one sync", lambda: replica(fn, args.calls, flush)),
            ("replica: no flush, all queued, one sync", lambda: replica(fn, args.calls, None)),
            ("replica: flush, sync every 10", lambda: replica(fn, args.calls, flush, 10)),
            ("replica: flush, sync + head start every 10", lambda: replica(fn, args.calls, flush, 10, head_start)),
            ("replica: flush, sync + old head start every 10",
             lambda: replica(fn, args.calls, flush, 10, old_head_start)),
            ("replica: flush, sync + 1 ms spin every 10",
             lambda: replica(fn, args.calls, flush, 10, lambda: clock._sleep(int(clock._calibrate())))),
            ("compile-lab blocks of 10, flush", lambda: blocks(clock_flush, 10)),
            ("compile-lab blocks of 10, flush, no head start", lambda: blocks(clock_plain, 10)),
            ("compile-lab blocks of 10", lambda: blocks(clock, 10)),
            ("compile-lab blocks of 120", lambda: blocks(clock, args.calls)),
        ]
        for _ in range(30):
            fn()
        blocks(clock, 10)
        blocks(clock_flush, 10)
        torch.cuda.synchronize()
        results: dict[str, list[tuple[float, dict[str, float]]]] = {name: [] for name, _ in methods}
        with ClockSampler() as sampler:
            for round_ in range(args.rounds):
                order = methods if round_ % 2 == 0 else list(reversed(methods))
                for name, run in order:
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                    median = float(run())
                    torch.cuda.synchronize()
                    results[name].append((median, sampler.window(start, time.perf_counter())))
                    print(dtype_name, round_, name, f"{median:.4f}", flush=True)
        reference = [m for m, _ in results[methods[0][0]]]
        mean_head = {c: statistics.fmean(v) for c, v in heads.items()}
        lines.append(f"| {dtype_name} | (compile-lab's mean head start per block, over all its blocks here: "
                     f"{mean_head.get(id(clock), 0):.3f} ms, {mean_head.get(id(clock_flush), 0):.3f} ms with flush) "
                     "| | | | |")
        for name, _ in methods:
            medians = [m for m, _ in results[name]]
            ratio = statistics.median(m / r for m, r in zip(medians, reference, strict=True))
            clock_mhz = statistics.fmean(w["clock"] for _, w in results[name])
            power = statistics.fmean(w["power"] for _, w in results[name])
            lines.append(f"| {dtype_name} | {name} | {' / '.join(f'{m:.4f}' for m in medians)} | {ratio:.3f} | "
                         f"{clock_mhz:.0f} | {power:.0f} |")
        x = None  # frees the tensor (the closures above keep its cell) before the next dtype
        torch.cuda.empty_cache()
    lines += ["", "do_bench as installed:", "", "```python", inspect.getsource(do_bench).rstrip(), "```"]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:4 + (len(methods) + 1) * len(args.dtypes.split(","))]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
