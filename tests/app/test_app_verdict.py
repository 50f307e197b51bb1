"""The verdict in the app: a done row shows its word, a noisy run is dimmed, named and explained."""

from __future__ import annotations

from app_helpers import notifications, wait_until
from tui.app.components.details import render_details
from tui.engine.options import RunOptions
from rich.console import Console


def _text(renderable) -> str:
    console = Console(width=160, record=True, file=open("/dev/null", "w"))
    console.print(renderable)
    return console.export_text()


async def test_a_noisy_run_is_dimmed_named_and_explained(make_app):
    app = make_app()
    # A stall limit every sample meets: the fake worker's steady run is noisy by that rule alone.
    noisy = RunOptions(workload="pointwise", iters=20, block_size=5, noise_limits={"stall_factor": 1e-6})
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        app.enqueue([noisy.validated(), RunOptions(workload="pointwise", iters=20, block_size=5).validated()])
        await wait_until(pilot, lambda: app.settled and app.table.row_count == 2
                         and all(app.records[r].finished for r in app.table.run_ids), what="both runs")
        first, second = app.table.run_ids
        await wait_until(pilot, lambda: app.table.cell_text(first, "status") == "noisy", what="noisy row")
        assert app.table.cell_text(second, "status") == "faster"
        assert app.table._cells[first]["speedup"].style == "dim"
        assert app.table._cells[second]["speedup"].style == "bold green"
        (message,) = [m for m in notifications(app) if "a stall" in m]
        assert message.startswith("pointwise") and "re-run on a quiet machine" in message
        details = _text(render_details(app.records[first]))
        assert "verdict" in details and "noisy" in details and "eager time: a stall" in details
        assert "significant: compiled is faster" not in details  # the speedup line agrees with the verdict


async def test_a_queue_of_noisy_runs_is_told_once_not_once_a_run(make_app):
    """One notice when the queue ends: the count and the first run's reason (toasts covered the table at 80x24)."""
    app = make_app()
    noisy = RunOptions(workload="pointwise", iters=20, block_size=5, noise_limits={"stall_factor": 1e-6})
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        app.enqueue([noisy.validated()] * 3)
        await wait_until(pilot, lambda: app.settled and len(app.session.records) == 3
                         and all(r.finished for r in app.session.records), what="three runs")
        await wait_until(pilot, lambda: any("3 runs of this queue were noisy" in m for m in notifications(app)),
                         what="the count")
        told = [m for m in notifications(app) if "noisy" in m.lower() or "a stall" in m]
        assert len(told) == 1 and "a stall" in told[0]
