"""What the warm spare worker saves: a 6-configuration sweep with and without it.

    python benchmarks/spare_worker.py

Each configuration still gets a fresh worker process; with the spare, the next one has
already imported torch while the current one runs.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tui.engine.options import RunOptions  # noqa: E402
from tui.engine.store.results import RunRecord  # noqa: E402
from tui.engine.runner import WorkerRunner  # noqa: E402
from tui.engine.run.sweep import expand  # noqa: E402


async def sweep(keep_spare: bool) -> tuple[float, list[str], set[int]]:
    """Run the sweep; (seconds, statuses, worker pids)."""
    base = RunOptions(workload="pointwise", params={"n": 64}, iters=20, block_size=10, device="cpu")
    configs = expand(base, backends=["eager", "aot_eager"], fullgraphs=[False, True], dynamics=[None, False])[:6]
    runner = WorkerRunner(keep_spare=keep_spare)
    start = time.perf_counter()
    statuses, pids = [], set()
    try:
        for options in configs:
            record = await runner.run(RunRecord.new(options))
            statuses.append(record.status)
            pids.add(runner.last_pid)
    finally:
        await runner.aclose()
    return time.perf_counter() - start, statuses, pids


def main() -> int:
    """Time both variants and print them."""
    for keep_spare in (False, True):
        seconds, statuses, pids = asyncio.run(sweep(keep_spare))
        print(f"keep_spare={keep_spare}: 6 configurations in {seconds:.1f} s, "
              f"{len(pids)} worker processes, statuses {sorted(set(statuses))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
