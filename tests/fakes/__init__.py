"""Test doubles shared by the engine, CLI and app tests.

``fake_worker_argv()`` gives the argv of a torch-free worker with the real protocol; pass it
as ``WorkerRunner(worker_argv=...)``. Its behaviours are listed in ``fake_worker``'s docstring.
``records`` holds ready-made records (``cuda_run_record()``) for the views' tests.
``stand_in_python(root, name)`` makes ``root/name/bin/python``, a second interpreter for A/B tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["FAKE_WORKER", "fake_worker_argv", "stand_in_python"]

FAKE_WORKER = Path(__file__).resolve().with_name("fake_worker.py")


def fake_worker_argv() -> list[str]:
    """The command line that starts the fake worker with this interpreter, without ``site`` (``-S``).

    The fake imports the standard library and ``tui`` (from the path it puts first) and nothing
    installed, so the ``.pth`` files ``site`` runs at every start (an editable install's import
    finder, and whatever else the environment put there) are a cost without a use; the inner loop
    starts hundreds of fake workers. The real worker (``python -m tui.engine.worker``) keeps ``site``:
    it needs torch.
    """
    return [sys.executable, "-S", str(FAKE_WORKER)]


def stand_in_python(root: Path, name: str) -> str:
    """``root/name/bin/python``: a script that runs this interpreter (a venv, as far as a table shows).

    A script, not a symlink: a link to a virtual environment's python starts the base interpreter
    (Python finds ``pyvenv.cfg`` beside the path it was started as), which lacks the venv's packages.
    """
    path = root / name / "bin" / "python"
    path.parent.mkdir(parents=True)
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    path.chmod(0o755)
    return str(path)
