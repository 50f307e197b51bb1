"""Snapshots of the results table after a sweep (issue 14 items 1 and 3): rows told apart at 80x24 and 120x40.

A sweep over two modes and dynamic auto/true/false of one workload: the mode and dyn columns come
right after the speedup, each value whole (``max-autotune-no-cg`` is max-autotune-no-cudagraphs'
short form), and what every row shares is in the pane's title. Records are injected with fixed
run ids and events, as in test_snapshots_app. Update after a deliberate change with
``--snapshot-update`` and read the new SVGs' text first.
"""

from __future__ import annotations

import math

import pytest

from app_helpers import no_gpu_source, wait_until
from test_snapshots_app import _app, _env, _settle
from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.store.results import RunRecord

SWEEP = [
    (mode, dynamic) for mode in ("reduce-overhead", "max-autotune-no-cudagraphs") for dynamic in (None, True, False)
]


def sweep_record(index: int, mode: str, dynamic: bool | None) -> RunRecord:
    """A done CPU run of the sweep; each configuration's compiled side a little faster or slower."""
    options = RunOptions(workload="pointwise", params={"n": 512}, mode=mode, dynamic=dynamic, iters=40)
    record = RunRecord(f"20250101-000000-swp{index:03d}", options.validated(), created=float(index))
    record.apply(make_event("started", 0.0, env=_env("cpu", False)))
    record.apply(
        make_event("compiled", 0.0, compile_s=2.0 + index, diagnostics={"graph_breaks": 0, "recompiles": index % 2})
    )
    record.apply(make_event("phase", 0.0, phase="measuring"))
    compiled = 0.70 + 0.12 * index
    for block in range(4):
        for side, base in (("eager", 1.30), ("compiled", compiled)):
            ms = [round(base + 0.01 * math.sin((block * 10 + j) / 3.0), 4) for j in range(10)]
            record.apply(make_event("block", 0.0, side=side, stage="measure", index=block, clock="perf_counter", ms=ms,
                                    host_ms_per_call=round(base * 1.1, 4)))
    record.apply(make_event("measured", 0.0, diagnostics={"graph_breaks": 0, "recompiles": index % 2},
                            accuracy={"passed": True, "max_abs_err": 0.0}, memory={}, warnings=[]))
    record.apply(make_event("finished", 0.0))
    return record


async def _swept(pilot, *, sidebar: bool = True) -> None:
    app = pilot.app
    await _settle(pilot)
    for index, (mode, dynamic) in enumerate(SWEEP):
        app.inject_record(sweep_record(index, mode, dynamic))
    if not sidebar:
        app.action_toggle_sidebar()
    await wait_until(pilot, lambda: app.table.row_count == len(SWEEP), what="the sweep's rows")
    app.table.move_cursor(row=0)
    first = app.table.run_ids[0]
    await wait_until(
        pilot, lambda: getattr(app.main_screen.chart_run, "run_id", None) == first, what="the chart on row 0"
    )
    await _settle(pilot)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_snapshot_a_sweep_tells_its_rows_apart(snap_compare, size):
    """The mode and dyn columns right after the speedup, whole; ``pointwise n=512 inductor fp32 cpu`` in the title."""
    async def run_before(pilot):
        await _swept(pilot)

    assert snap_compare(_app(no_gpu_source()), terminal_size=size, run_before=run_before)


def test_snapshot_a_sweep_at_80x24_without_the_sidebar(snap_compare):
    """``b`` gives the table the screen's width: status, speedup, mode, dyn and more, each whole."""
    async def run_before(pilot):
        await _swept(pilot, sidebar=False)

    assert snap_compare(_app(no_gpu_source()), terminal_size=(80, 24), run_before=run_before)
