"""Shared test set-up: every test gets its own compile-lab home (config, history, exports).

Markers (pyproject.toml): ``gpu`` tests are skipped without CUDA; ``torch`` tests are skipped
without torch. A test is a ``torch`` test when it says so (it starts a real worker, or a fresh
interpreter that imports torch) or when its module imported torch: this conftest adds the
marker then. ``.ci/run`` runs ``-m "not torch and not gpu"`` under Python 3.10 without torch.
"""

from __future__ import annotations

import importlib.util
import types

import pytest

from tui import logs


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.fixture(autouse=True)
def compile_lab_home(tmp_path, monkeypatch):
    """Point COMPILE_LAB_HOME at a temporary directory for the duration of one test."""
    home = tmp_path / "compile-lab-home"
    monkeypatch.setenv("COMPILE_LAB_HOME", str(home))
    yield home
    logs.reset()  # a CLI test's log handler writes to this test's data dir only


def _module_imported_torch(item: pytest.Item) -> bool:
    module = getattr(item, "module", None)
    torch = getattr(module, "torch", None)
    return isinstance(torch, types.ModuleType) and torch.__name__ == "torch"


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    """Mark the tests of modules that imported torch ``torch``; skip gpu tests without CUDA and
    torch tests without torch (reported as skipped, never as passed)."""
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
