"""The three worlds stay apart: the app and telemetry never import torch; engine and telemetry never import textual.

Each check runs in a fresh interpreter, so nothing imported by another test can hide a violation.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from fakes import fake_worker_argv

PROBE = """
import json, sys, importlib
for name in {modules!r}:
    importlib.import_module(name)
heavy = {{'torch', 'textual', 'triton', 'numpy', 'psutil', 'matplotlib', 'ray'}}
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))
"""


def _imported_after(modules: list[str]) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(modules=modules)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return {name.split(".")[0] for name in json.loads(out.strip().splitlines()[-1])}


ENGINE_PARENT_SIDE = [
    "tui.engine.catalog",
    "tui.engine.options",
    "tui.engine.protocol",
    "tui.engine.measure.stats",
    "tui.engine.store.results",
    "tui.engine.store.export",
    "tui.engine.store.history",
    "tui.engine.run.sweep",
    "tui.engine.runner",
    "tui.engine.compare",
    "tui.cli",
    "tui.cli.compare",
    "tui.engine.store.report_data",
    "tui.cli.report",
    "tui.engine.tune.driver",
    "tui.cli.tune",
    "tui.cli.tune_render",
]
REPORT = ["tui.report", "tui.report.colors"]
TELEMETRY = ["tui.telemetry.model", "tui.telemetry.nvml", "tui.telemetry.fake", "tui.telemetry.sampler",
             "tui.telemetry.host_load"]
APP = ["tui.app.app"]


@pytest.mark.slow  # imports torch in a fresh interpreter: seconds
@pytest.mark.torch
def test_the_probe_detects_an_import():
    """The probe itself works: importing torch is seen (so the checks below can fail)."""
    pytest.importorskip("torch")
    assert "torch" in _imported_after(["torch"])


def test_app_never_imports_torch():
    imported = _imported_after(APP + TELEMETRY)
    assert "torch" not in imported
    assert "triton" not in imported


def test_engine_parent_side_never_imports_torch_or_textual():
    imported = _imported_after(ENGINE_PARENT_SIDE)
    assert "torch" not in imported
    assert "textual" not in imported


def test_matplotlib_loads_only_when_a_report_is_made():
    """``compile-lab report``'s plots need matplotlib (an extra): the CLI, its parser and the report
    package import it only inside the report function (tui.report.plots.load_matplotlib)."""
    imported = _imported_after(ENGINE_PARENT_SIDE + REPORT + ["tui.cli.parse"])
    assert imported.isdisjoint({"matplotlib", "torch", "textual"})
    if importlib.util.find_spec("matplotlib") is not None:  # the probe sees it when it is imported
        assert "matplotlib" in _imported_after(["matplotlib"])


CLUSTER = ["tui.engine.cluster", "tui.engine.cluster.address", "tui.engine.cluster.handshake",
           "tui.engine.cluster.node", "tui.engine.cluster.runner", "tui.engine.cluster.ray_transport",
           "tui.cli.parse", "tui.cli.run"]

LOCAL_SWEEP = """
import json, sys
import tui.cli
from tui.engine.runner import WorkerRunner

def make_runner(keep_spare, telemetry=None, env=None):
    return WorkerRunner(worker_argv={fake!r}, keep_spare=keep_spare, env=env, sample_host=False)

tui.cli.make_runner = make_runner
code = tui.cli.main(["sweep", "--param", "n=64,128", "--iters", "20", "--no-history", "--quiet"])
print(json.dumps([code, sorted(m for m in sys.modules if m.split('.')[0] in {{'ray', 'torch', 'textual'}})]))
"""


def test_ray_loads_only_when_a_cluster_is_used():
    """``--cluster`` needs Ray (the compile-lab[cluster] extra): the CLI, its parser and every module of
    ``tui.engine.cluster`` import it only inside the functions a cluster run calls."""
    imported = _imported_after(ENGINE_PARENT_SIDE + CLUSTER)
    assert imported.isdisjoint({"ray", "torch", "textual"})
    if importlib.util.find_spec("ray") is not None:  # the probe sees it when it is imported
        assert "ray" in _imported_after(["ray"])


def test_a_local_sweep_through_the_cli_never_imports_ray():
    """A whole ``compile-lab sweep`` without ``--cluster`` (the fake worker, two runs) leaves Ray alone."""
    out = subprocess.run([sys.executable, "-c", LOCAL_SWEEP.format(fake=fake_worker_argv())], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    code, imported = json.loads(out.strip().splitlines()[-1])
    assert code == 0
    assert imported == []


def test_telemetry_never_imports_torch_or_textual():
    imported = _imported_after(TELEMETRY)
    assert imported.isdisjoint({"torch", "textual"})


def test_psutil_belongs_to_the_telemetry_layer_and_loads_when_a_run_starts():
    """Only ``tui.telemetry`` (the host's CPU use by process) and the runner's sweep of what a run left
    outside its worker's process group (``tui.engine.runner.leftovers``) name psutil, and only lazily:
    a missing psutil is a reason on a run's telemetry (and a sweep of the group alone), never an
    import error of the app or CLI."""
    import re
    from pathlib import Path

    package = Path(__file__).resolve().parents[1] / "tui"
    users = {str(p.relative_to(package.parent)) for p in package.rglob("*.py")
             if re.search(r"^\s*(import|from) psutil\b", p.read_text(), re.MULTILINE)}
    assert users == {"tui/telemetry/host_load.py", "tui/engine/runner/leftovers.py"}
    assert "psutil" not in _imported_after(APP + TELEMETRY + ENGINE_PARENT_SIDE)


def test_numpy_loads_with_the_first_bootstrap():
    """The bootstrap resamples with numpy (``tui.engine.measure.resample``); the app, the CLI and the engine
    import ``tui.engine.measure.stats`` at start and load numpy only when an interval is computed, so a
    first frame does not pay numpy's import."""
    assert "numpy" not in _imported_after(APP + TELEMETRY + ENGINE_PARENT_SIDE + ["tui.engine.measure.change_stats"])
    assert "numpy" in _imported_after(["tui.engine.measure.resample"])  # the probe sees it when it is imported


def test_the_display_helpers_the_cli_borrows_never_import_textual():
    """``tui.cli`` prints its table with ``tui.present.format``: that module must stay textual-free."""
    imported = _imported_after(["tui.present.format"])
    assert imported.isdisjoint({"torch", "textual"})


@pytest.mark.slow  # imports torch in a fresh interpreter: seconds
@pytest.mark.torch
def test_worker_package_is_the_only_engine_part_that_needs_torch():
    """The worker imports torch (and still not textual)."""
    pytest.importorskip("torch")
    imported = _imported_after(["tui.engine.worker.main", "tui.engine.worker.workloads"])
    assert "torch" in imported
    assert "textual" not in imported


def test_the_apps_status_words_match_the_engines_statuses():
    """``tui.present.format`` keeps its own copy of the statuses (so the first frame does not import
    ``tui.engine.store.results``); the copy must name exactly the engine's statuses."""
    from tui.present import format as app_format
    from tui.engine.store import results

    assert set(app_format.STATUS_LABELS) == set(results.STATUSES)
    assert app_format.TERMINAL_STATUSES == results.TERMINAL_STATUSES
