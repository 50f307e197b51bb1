"""Save an SVG of the app mid-sweep: the README's screenshots.

    python benchmarks/screenshot.py --out assets/screenshot-cpu.svg            # CPU workloads, real worker
    python benchmarks/screenshot.py --real --out assets/screenshot-h200.svg    # CUDA + real NVML

It starts the app headless at 160x48, queues a small sweep (default and reduce-overhead,
fullgraph off/on) through the real worker, waits until the second run is measuring or the
first has finished, and saves the screen.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tui.app.app import CompileLabApp  # noqa: E402
from tui.engine.options import RunOptions  # noqa: E402
from tui.engine.runner import WorkerRunner  # noqa: E402
from tui.engine.run.sweep import expand  # noqa: E402
from tui.telemetry.nvml import NvmlSource  # noqa: E402


async def shoot(out: Path, real: bool, timeout: float) -> int:
    """Run the sweep in the app and save the screen once a later run is under way."""
    telemetry = NvmlSource()  # on a machine without a driver the pane says why
    if real:
        base = RunOptions(workload="cnn", device="cuda", iters=400, block_size=20)
    else:
        base = RunOptions(workload="pointwise", device="cpu", params={"n": 256}, iters=400, block_size=20)
    options = expand(base, modes=["default", "reduce-overhead"], fullgraphs=[False, True])
    app = CompileLabApp(runner=WorkerRunner(telemetry=telemetry), telemetry=telemetry,
                        load_history=False)
    async with app.run_test(size=(160, 48)) as pilot:
        records = app.enqueue(options, origin="sweep")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            await pilot.pause(0.25)
            if records[0].status in ("done", "failed") and records[1].status == "measuring":
                break
            if records[1].status in ("done", "failed"):
                break
        await pilot.pause(0.3)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(app.export_screenshot(title="compile-lab"))
        print(f"saved {out} ({[r.status for r in records]})")
        app.action_cancel_all()
        await app.shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse arguments and take the screenshot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--real", action="store_true", help="CUDA workload and real NVML telemetry")
    parser.add_argument("--timeout", type=float, default=90.0)
    args = parser.parse_args(argv)
    return asyncio.run(shoot(args.out, args.real, args.timeout))


if __name__ == "__main__":
    raise SystemExit(main())
