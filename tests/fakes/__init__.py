"""Test doubles shared by the engine, CLI and app tests.

``fake_worker_argv()`` gives the argv of a torch-free worker with the real protocol; pass it
as ``WorkerRunner(worker_argv=...)``. Its behaviours are listed in ``fake_worker``'s docstring.
``records`` holds ready-made records (``cuda_run_record()``) for the views' tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["FAKE_WORKER", "fake_worker_argv"]

FAKE_WORKER = Path(__file__).resolve().with_name("fake_worker.py")


def fake_worker_argv() -> list[str]:
    """The command line that starts the fake worker with this interpreter."""
    return [sys.executable, str(FAKE_WORKER)]
