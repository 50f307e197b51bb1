"""Shared test set-up: every test gets its own compile-lab home (config, history, exports).

Markers (pyproject.toml): ``gpu`` tests are skipped without CUDA; ``torch`` tests are skipped
without torch. A test is a ``torch`` test when it says so (it starts a real worker, or a fresh
interpreter that imports torch) or when its module imported torch: this conftest adds the
marker then. ``.ci/run`` runs ``-m "not torch and not gpu"`` under Python 3.10 without torch.

``perf`` tests assert a wall-clock or CPU-time bound: they are left out unless the ``-m``
expression names ``perf`` (``.ci/run`` runs ``-m perf -n 0`` on its own, serially), so that a
loaded machine or parallel workers cannot fail the other runs. A test whose bound guards
behaviour that the inner loop must still check takes the ``timed`` fixture: it runs once
untimed, and once timed as a ``perf`` test.

The suite runs in parallel (``-n auto --dist worksteal``, pytest-xdist, with one worker per core and one more:
:func:`pytest_xdist_auto_num_workers`) unless the command line says ``-n`` or ``--dist``, names test files,
or pytest-xdist is not loaded (``-p no:xdist``, or not installed); ``-n 0`` runs it serially. Work stealing
keeps every worker busy to the end: xdist's default ``load`` schedule left one worker idle for the last
~50 s of the inner loop.

The tests' apps run without Textual's animations (``TEXTUAL_ANIMATIONS=none``, unless the caller set
it): a tab's sliding underline or a smooth scroll costs an app test its frames and the pilot's wait for
them, a third of the app tests' CPU time and most of their idle time, and decides nothing a test asserts.
Tests marked ``animated``, and the ``perf`` tests, which time what a user's app does, run with the
animations a user sees (:func:`_animations_where_asked`).

Every test has a home of its own, but the workers' inductor caches are shared by the whole suite: the suite
points ``TORCHINDUCTOR_CACHE_DIR`` at one folder of its own (unless the caller set one), so a test's compile is
warm when an earlier test compiled the same graph, as it was before the workers kept their caches under
compile-lab's home, and the user's own inductor cache is left alone.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
import tempfile
import types

import pytest

import css_cache
from tui import logs

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR",
                      os.path.join(tempfile.gettempdir(), f"compile-lab-tests-inductor-{os.getuid()}"))


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# The garbage collector's thresholds in the test processes (Python's default: 700, 10, 10), and the
# interpreter's own, which the tests that bound the app's time run under (the app runs under them).
GC_THRESHOLDS = (10_000, 20, 100)
PYTHON_GC_THRESHOLDS = gc.get_threshold()


def _collect_garbage_less_often() -> None:
    """Set :data:`GC_THRESHOLDS` in this process (each xdist worker configures its own).

    The app tests allocate millions of short-lived objects (a Textual app per test, its widgets,
    styles and strips). At Python's default thresholds the collector runs a full collection about
    every 70,000 allocations, over all that the test process holds (torch's and Textual's modules
    included): a third of the app tests' CPU time. These thresholds collect the youngest
    generation every 10,000 allocations and the whole heap about 14 times less often. Cycles are
    still collected, later: the heap stays flat from one test to the next. The tests that bound
    the app's time run under the interpreter's own thresholds (:func:`python_gc`).
    """
    gc.set_threshold(*GC_THRESHOLDS)


ANIMATIONS = os.environ.get("TEXTUAL_ANIMATIONS") or "none"
"""The tests' animation level: ``none``, or the one the caller set."""


def _animations_off() -> None:
    """:data:`ANIMATIONS` for the apps of this process and of the processes it starts.

    Textual read the variable when it was imported, before this conftest (a plugin imports it),
    so its constant is set too; ``App()`` reads the constant when an app is made.
    """
    from textual import constants

    os.environ["TEXTUAL_ANIMATIONS"] = ANIMATIONS
    constants.TEXTUAL_ANIMATIONS = ANIMATIONS


def pytest_configure(config):
    """Collect garbage less often (:func:`_collect_garbage_less_often`); apps without animations
    (:func:`_animations_off`). Where bytecode is not
    written (``PYTHONDONTWRITEBYTECODE``, ``-B``), write it under ``.pytest_cache/pycache``
    instead (``PYTHONPYCACHEPREFIX``), for this process and its children.

    The suite starts hundreds of fake workers and xdist workers; without bytecode each compiles
    ``tui`` from source (0.3 s of CPU a fake worker instead of 0.12 s). The sources stay free of
    ``__pycache__``, which is what the setting asks for. A prefix the user chose is kept.
    """
    _collect_garbage_less_often()
    _animations_off()
    if not sys.dont_write_bytecode or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    prefix = str(config.rootpath / ".pytest_cache" / "pycache")
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = prefix


# Each xdist worker imports torch and textual while it collects (0.2 GB for torch alone), and the
# slow tests start real workers beside it: on a machine of many cores the suite's own count of
# workers stops here unless ``--maxprocesses`` says otherwise.
MAX_AUTO_WORKERS = 8


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one xdist worker per core, as xdist counts them, and one more (``PYTEST_XDIST_AUTO_NUM_WORKERS``,
    when set, is xdist's to read).

    A good part of a test's wall time is waiting, not computing: for a fake worker's process to
    start or end, for a timeout to pass, for a pipe. With one worker per core those waits leave a
    core idle; the one more worker fills them (docs/BENCHMARKS.md §12 measures both counts).
    """
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    from xdist.plugin import pytest_xdist_auto_num_workers as per_core

    return per_core(config) + 1


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads -n
def pytest_cmdline_main(config):
    """``-n auto --dist worksteal`` for the suite or a folder of it, when the command line gives no ``-n``.

    A conftest rather than ``addopts``: ``addopts = "-n auto"`` makes pytest refuse its own
    command line wherever pytest-xdist is not loaded (``-p no:xdist``, or not installed). Test
    files named on the command line run serially: starting the xdist workers costs more than a
    file or two of tests. ``-m perf`` runs serially: its bounds are measured one test at a time.
    xdist's own workers (``workerinput``) run their share of the tests themselves.
    """
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    markexpr = config.option.markexpr or ""
    if ("perf" in markexpr and "not perf" not in markexpr) or _names_files(config):
        return
    if config.option.numprocesses is None and config.option.dist == "no" and not config.option.collectonly:
        config.option.numprocesses = "auto"
        config.option.dist = "worksteal"
        config.option.maxprocesses = config.option.maxprocesses or MAX_AUTO_WORKERS


def _names_files(config: pytest.Config) -> bool:
    """Whether the command line names test files or tests (not folders) and nothing else."""
    if config.args_source != pytest.Config.ArgsSource.ARGS or not config.args:
        return False
    here = config.invocation_params.dir
    return all((here / arg.split("::")[0]).is_file() for arg in config.args)


@pytest.fixture(params=[pytest.param(False, id="untimed"), pytest.param(True, id="timed", marks=pytest.mark.perf)])
def timed(request) -> bool:
    """True in the ``perf`` copy of a test: assert its time bound there, its behaviour in both."""
    return request.param


def pytest_runtest_setup(item):
    """Share Textual's CSS parses between the apps of this process (:mod:`css_cache`), once it is loaded."""
    css_cache.install_if_loaded()


@pytest.fixture(autouse=True)
def compile_lab_home(tmp_path, monkeypatch):
    """Point COMPILE_LAB_HOME at a temporary directory for the duration of one test."""
    home = tmp_path / "compile-lab-home"
    monkeypatch.setenv("COMPILE_LAB_HOME", str(home))
    yield home
    logs.reset()  # a CLI test's log handler writes to this test's data dir only


@pytest.fixture
def python_gc():
    """The interpreter's own garbage-collector thresholds for one test, then the suite's again.

    A test that bounds a stall or a load time measures what a user's app does, its full
    collections included: fewer collections (:data:`GC_THRESHOLDS`) would hide a stall.
    """
    gc.set_threshold(*PYTHON_GC_THRESHOLDS)
    yield
    gc.set_threshold(*GC_THRESHOLDS)


@pytest.fixture(autouse=True)
def _perf_tests_under_python_gc(request):
    """Every ``perf`` test runs under :func:`python_gc`, after a full collection: the garbage the tests before it
    left (a 20,000-run app's, in the serial perf step) is collected before the test, not during what it times."""
    if request.node.get_closest_marker("perf") is not None:
        gc.collect()
        request.getfixturevalue("python_gc")
    yield


@pytest.fixture(autouse=True)
def _animations_where_asked(request, monkeypatch):
    """Textual's full animations for an ``animated`` or a ``perf`` test: its apps and the app processes it starts."""
    if request.node.get_closest_marker("animated") is None and request.node.get_closest_marker("perf") is None:
        return
    from textual import constants

    monkeypatch.setattr(constants, "TEXTUAL_ANIMATIONS", "full")  # App() reads it when it is made
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "full")


def _module_imported_torch(item: pytest.Item) -> bool:
    module = getattr(item, "module", None)
    torch = getattr(module, "torch", None)
    return isinstance(torch, types.ModuleType) and torch.__name__ == "torch"


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    """Mark the tests of modules that imported torch ``torch``; skip gpu tests without CUDA and
    torch tests without torch (reported as skipped, never as passed); leave the ``perf`` tests out
    unless ``-m`` names them."""
    _leave_out_perf(config, items)
    for item in items:
        if item.get_closest_marker("torch") is None and _module_imported_torch(item):
            item.add_marker(pytest.mark.torch)
    if importlib.util.find_spec("torch") is None:
        skip_torch = pytest.mark.skip(reason="needs torch")
        for item in items:
            if item.get_closest_marker("torch") is not None:
                item.add_marker(skip_torch)
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items or _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in gpu_items:
        if not _missing_fixtures(item):
            item.add_marker(skip)


def _leave_out_perf(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the ``perf`` tests unless the ``-m`` expression names ``perf``.

    ``addopts = -m "not perf"`` would not do: a ``-m`` on the command line (``-m "not slow"``)
    replaces the one from addopts, and the perf tests would run again.
    """
    if "perf" in (config.option.markexpr or ""):
        return
    perf = [item for item in items if item.get_closest_marker("perf") is not None]
    if perf:
        items[:] = [item for item in items if item.get_closest_marker("perf") is None]
        config.hook.pytest_deselected(items=perf)


def _missing_fixtures(item: pytest.Item) -> set[str]:
    """Fixtures ``item`` asks for that nothing defines.

    A GPU test with one is not skipped on a machine without a GPU: it errors at set-up there
    too, so CI sees what would otherwise first fail on the GPU machine (it happened: a moved
    fixture left five GPU tests unable to start).
    """
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    return set(info.names_closure) - set(info.name2fixturedefs) - {"request"}
