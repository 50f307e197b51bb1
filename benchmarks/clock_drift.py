"""Why compile-lab and do_bench disagree on power-capped GEMMs: each method's clocks, side by side.

    python benchmarks/clock_drift.py --out clock_drift.md

On the H200 the TF32 and bf16 8192 GEMMs read 3-11% faster through compile-lab than through
``triton.testing.do_bench`` while NVML reported a software power cap. This script times one
such GEMM (eager; no compile needed) with each method in turn, twice, in an ABAB order so that
a drift of the card over time shows up as a difference between the rounds, and samples NVML's
SM clock, power and throttle reasons every 5 ms in a thread while each method runs:

* compile-lab's CUDA clock (``CudaClock.run_block``) with blocks of 10 and of 100 calls;
* one event pair around each 10-call block (no per-call events);
* ``do_bench(..., return_mode="median")`` with rep=200 ms (its default use) and rep=25 ms;
* for compile-lab's blocks of 10, also the median of each block's first and last call.

If a method's median follows its mean SM clock, the difference is the card's power management,
not the method.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402


class ClockSampler:
    """Samples SM clock (MHz), power (W) and throttle reasons of GPU 0 in a thread."""

    def __init__(self, period_s: float = 0.005) -> None:
        import pynvml

        pynvml.nvmlInit()
        self.nvml = pynvml
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        self.period_s = period_s
        self.samples: list[tuple[float, int, float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        nv, h = self.nvml, self.handle
        while not self._stop.is_set():
            try:
                clock = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
                power = nv.nvmlDeviceGetPowerUsage(h) / 1000.0
                reasons = nv.nvmlDeviceGetCurrentClocksEventReasons(h)
            except nv.NVMLError:  # a sample NVML did not answer reads as zeros
                clock, power, reasons = 0, 0.0, 0
            self.samples.append((time.perf_counter(), clock, power, reasons))
            time.sleep(self.period_s)

    def __enter__(self) -> ClockSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def window(self, start: float, end: float) -> dict[str, float]:
        """Mean SM clock and power, and the share of samples power-capped, between two perf_counter times."""
        rows = [s for s in self.samples if start <= s[0] <= end and s[1] > 0]
        if not rows:
            return {"clock": float("nan"), "power": float("nan"), "capped": float("nan"), "n": 0}
        sw_power_cap = 0x4  # nvmlClocksEventReasonSwPowerCap
        hw_slowdown = 0x8 | 0x40 | 0x80  # HW slowdown, HW thermal, HW power brake
        return {
            "clock": statistics.fmean(r[1] for r in rows),
            "power": statistics.fmean(r[2] for r in rows),
            "capped": sum(1 for r in rows if r[3] & (sw_power_cap | hw_slowdown)) / len(rows),
            "n": len(rows),
        }


def main(argv: list[str] | None = None) -> int:
    """Run the methods in two rounds and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("clock_drift.md"))
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--dtypes", default="tf32,bfloat16,float32")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("clock_drift.py needs a CUDA GPU", file=sys.stderr)
        return 2
    from triton.testing import do_bench

    from tui.engine.worker.measure import CudaClock

    device = torch.device("cuda:0")
    lines = [
        f"GEMM {args.n}x{args.n} `x @ x.T`, eager, {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
        f"{time.strftime('%Y-%m-%d')}. Median ms per call; SM clock and power are NVML's means over each "
        "method's own time window (5 ms sampling); `capped` = share of samples with a power-cap or "
        "HW-slowdown throttle reason.",
        "",
        "| dtype | round | method | median ms | mean SM MHz | mean W | capped | samples |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for dtype_name in args.dtypes.split(","):
        tf32 = dtype_name == "tf32"
        dtype = torch.float32 if dtype_name in ("tf32", "float32") else getattr(torch, dtype_name)
        torch.backends.cuda.matmul.allow_tf32 = tf32
        x = torch.randn(args.n, args.n, device=device, dtype=dtype)

        def step(a: tuple) -> torch.Tensor:
            return a[0] @ a[0].T

        for _ in range(20):
            step((x,))
        torch.cuda.synchronize()
        clock = CudaClock(device)
        with ClockSampler() as sampler:
            for round_ in (1, 2):
                by_position: dict[str, list[float]] = {"first": [], "last": []}

                def cl_blocks(size: int, blocks: int) -> float:
                    times: list[float] = []
                    for _ in range(blocks):
                        ms = clock.run_block(step, [(x,)] * size).ms
                        times.extend(ms)
                        if size == 10:
                            by_position["first"].append(ms[0])
                            by_position["last"].append(ms[-1])
                    return statistics.median(times)

                def block_pair(size: int = 10, blocks: int = 20) -> float:
                    values = []
                    for _ in range(blocks):
                        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        torch.cuda.synchronize()
                        clock._head_start(step, size)
                        begin.record()
                        for _ in range(size):
                            step((x,))
                        end.record()
                        torch.cuda.synchronize()
                        values.append(begin.elapsed_time(end) / size)
                    return statistics.median(values)

                methods = [
                    ("compile-lab, blocks of 10", lambda: cl_blocks(10, 10)),
                    ("compile-lab, blocks of 100", lambda: cl_blocks(100, 1)),
                    ("one event pair per 10-call block", block_pair),
                    ("do_bench rep=200 ms", lambda: do_bench(lambda: step((x,)), warmup=25, rep=200,
                                                             return_mode="median")),
                    ("do_bench rep=25 ms", lambda: do_bench(lambda: step((x,)), warmup=5, rep=25,
                                                            return_mode="median")),
                ]
                for name, run in methods:
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                    median = float(run())
                    torch.cuda.synchronize()
                    w = sampler.window(start, time.perf_counter())
                    lines.append(f"| {dtype_name} | {round_} | {name} | {median:.4f} | {w['clock']:.0f} | "
                                 f"{w['power']:.0f} | {w['capped']:.0%} | {w['n']} |")
                    print(lines[-1], flush=True)
                for position, values in by_position.items():
                    lines.append(f"| {dtype_name} | {round_} | compile-lab, blocks of 10, {position} call only | "
                                 f"{statistics.median(values):.4f} | | | | |")
        x = None  # frees the tensor (the closures above keep its cell) before the next dtype
        torch.cuda.empty_cache()
    args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
