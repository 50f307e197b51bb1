"""The ``compile-lab`` entry point: the command line, which opens the app when no subcommand is given.

The two front ends never import each other (``tests/test_import_graph.py``); this module is the one
place that knows both. The app is imported only when it is opened, so ``compile-lab run`` never loads
textual.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Sequence

__all__ = ["main", "open_app"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``compile-lab`` with ``argv`` (the process's arguments when None); returns the exit code."""
    from tui.cli import main as cli_main

    return cli_main(argv, open_app=open_app)


def open_app(no_mouse: bool = False, theme: str | None = None, cluster: Any = None) -> int:
    """Open the app (a missing textual is one line, exit 0: the command line still works)."""
    from tui.cli.parse import PROG

    try:
        from tui.app.app import run_app
    except ImportError as exc:
        print(f"{PROG}: the app could not be loaded ({exc}); `{PROG} run --help` shows the command line")
        return 0
    return int(run_app(no_mouse=no_mouse, theme=theme, cluster=cluster) or 0)
