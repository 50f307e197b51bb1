"""tlparse (on PyPI, offline, not a dependency) turns a run's TORCH_TRACE logs into an HTML report.

:func:`run_tlparse` runs ``tlparse <run>/torch_trace --latest -o <run>/tlparse --overwrite
--no-browser`` when ``tlparse`` is on PATH, and says where the report is (``index.html``) or why
there is none. The CLI calls it for ``--tlparse``; the app can call it off the UI thread.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui.engine.explain.artifacts import TLPARSE_DIR, artifact_paths

__all__ = ["TlparseResult", "TLPARSE_TIMEOUT_S", "tlparse_available", "run_tlparse"]

TLPARSE_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class TlparseResult:
    """``report``: the report's index.html (None when there is none); ``why``: why not, in one line."""

    report: str | None = None
    why: str | None = None


def tlparse_available() -> str | None:
    """tlparse's path on PATH, or None."""
    return shutil.which("tlparse")


def run_tlparse(record: Any, timeout_s: float = TLPARSE_TIMEOUT_S) -> TlparseResult:
    """Make (or remake) the tlparse report of a run's TORCH_TRACE logs; never raises."""
    found = artifact_paths(record)
    if found.torch_trace is None:
        gone = "torch_trace" in found.gone
        return TlparseResult(why="its TORCH_TRACE logs are gone" if gone else "the run kept no TORCH_TRACE logs "
                             "(run it with --torch-trace)")
    program = tlparse_available()
    if program is None:
        return TlparseResult(why=f"tlparse is not on PATH (pip install tlparse); the logs are in {found.torch_trace}")
    out = Path(found.folder) / TLPARSE_DIR
    argv = [program, found.torch_trace, "--latest", "-o", str(out), "--overwrite", "--no-browser"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s,
                              check=False)
    except subprocess.TimeoutExpired:
        return TlparseResult(why=f"tlparse did not finish within {timeout_s:g} s")
    except OSError as exc:
        return TlparseResult(why=f"tlparse could not be started: {exc.strerror or exc}")
    report = out / "index.html"
    if done.returncode != 0 or not report.is_file():
        lines = [line for line in (done.stderr or done.stdout or "").splitlines() if line.strip()]
        return TlparseResult(why=f"tlparse exited with code {done.returncode}: {lines[-1] if lines else 'no report'}")
    return TlparseResult(report=str(report))
