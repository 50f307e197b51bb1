"""Shared test set-up: every test gets its own compile-lab home (config, history, exports)."""

from __future__ import annotations

import pytest


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
    return home


def pytest_collection_modifyitems(config, items):
    """Skip gpu-marked tests where there is no CUDA device (reported as skipped, never as passed)."""
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items or _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in gpu_items:
        item.add_marker(skip)
