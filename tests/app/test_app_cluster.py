"""The app on a Ray cluster (``compile-lab --cluster ADDRESS``), with the cluster's connection faked.

``tui.engine.cluster.open_cluster`` is replaced by one that returns a runner whose runs are the fake
worker's (tests/test_cluster_ray.py runs the real Ray path): what is checked here is the app's side, that
every run it queues goes to the cluster's lanes and runner, with the device a cluster gives.
"""

from __future__ import annotations

import pytest
from textual.widgets import Input
from tui.app.components.chooser import Chooser

from app_helpers import fake_runner, notifications, wait_until
from tui.engine.cluster.link import ClusterLink
from tui.app.components.picker import Picker
from tui.engine import cluster
from tui.engine.cluster import ClusterError
from tui.engine.run.session import CLUSTER_LANE

LANES = (f"{CLUSTER_LANE}0", f"{CLUSTER_LANE}1")


class FakeClusterRunner:
    """A cluster's runner: each run in a fresh fake worker, any number at once."""

    keep_spare = False

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.closed = False

    async def run(self, record, on_event=None):
        self.ran.append(record.run_id)
        runner = fake_runner()
        try:
            return await runner.run(record, on_event)
        finally:
            await runner.aclose()

    async def aclose(self) -> None:
        self.closed = True

    def kill_all(self) -> None:
        pass


@pytest.fixture
def connections(monkeypatch):
    """Every open_cluster call: (address, device kind, cpus); the runner it returned is ``made[0]``."""
    calls: list[tuple[str, str, float]] = []
    made: list[FakeClusterRunner] = []

    def open_cluster(address, device, cpus=1.0, worker_argv=None, env=None):
        calls.append((address, device, cpus))
        made.append(FakeClusterRunner())
        return made[-1], LANES

    monkeypatch.setattr(cluster, "open_cluster", open_cluster)
    return calls, made


async def test_every_run_goes_to_the_clusters_lanes(make_app, connections):
    calls, made = connections
    app = make_app(load_history=False, cluster=ClusterLink("10.0.0.1:6379", 2.0))
    async with app.run_test(size=(120, 40)) as pilot:
        picker = app.query_one(Picker)
        select = picker.query_one("#device", Chooser)
        assert [value for _, value in select.options] == ["cpu", "cuda"]  # a node's CPUs or some node's GPU
        select.value = "cuda"
        picker.query_one("#repeat", Input).value = "3"
        await pilot.pause()
        app.table.focus()
        await pilot.press("r")
        await wait_until(pilot, lambda: len(app.session.records) == 3 and app.settled, timeout=60, what="settled")
        assert any("Runs go to the Ray cluster at 10.0.0.1:6379: 2 at once." in m for m in notifications(app))
    records = app.session.records
    assert [r.status for r in records] == ["done"] * 3
    assert all(r.options.device == "cuda" for r in records)  # Ray gives each run its GPU
    assert calls == [("10.0.0.1:6379", "cuda", 2.0)]  # connected once, at the first run
    assert sorted(made[0].ran) == sorted(r.run_id for r in records)
    assert app.runner.last_pid is None  # the local runner never ran anything
    assert made[0].closed  # closed with the session when the app quit


async def test_a_cluster_that_cannot_be_reached_queues_nothing_and_says_why(make_app, monkeypatch):
    def refuse(*args, **kwargs):
        raise ClusterError("--cluster: nothing answers at 10.0.0.1:6379 (connection refused)")

    monkeypatch.setattr(cluster, "open_cluster", refuse)
    app = make_app(load_history=False, cluster=ClusterLink("10.0.0.1:6379"))
    async with app.run_test(size=(120, 40)) as pilot:
        app.table.focus()
        await pilot.press("r")
        await wait_until(pilot, lambda: any("nothing answers" in m for m in notifications(app)), what="the refusal")
        assert app.session.records == []

