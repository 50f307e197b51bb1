"""The ``compile-lab`` entry point: the command line, which opens the app when no subcommand is given.

The two front ends never import each other (``tests/test_import_graph.py``); this module is the one
place that knows both. The app is imported only when it is opened, so ``compile-lab run`` never loads
textual.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO
from collections.abc import Sequence

__all__ = ["main", "open_app"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``compile-lab`` with ``argv`` (the process's arguments when None); returns the exit code.

    A Ctrl-C that reaches here came before a command took the signals over (while Python imports, while ``tune``
    asks the worker's torch which options it has) or during a command that keeps no runs (``compare``,
    ``report``): one line and exit 130, as a stopped run's, instead of Python's traceback.
    """
    try:
        from tui.cli import main as cli_main

        return cli_main(argv, open_app=open_app)
    except KeyboardInterrupt:
        sys.stderr.write("\ncompile-lab: stopped (Ctrl-C)\n")
        return 130


def open_app(no_mouse: bool = False, theme: str | None = None, cluster: Any = None) -> int:
    """Open the app (a missing textual is one line, exit 0: the command line still works; no terminal to draw on
    or read keys from is one line, exit 2: :func:`not_a_terminal`)."""
    from tui.cli.parse import PROG

    missing = not_a_terminal(sys.stdin, sys.stderr)
    if missing is not None:
        sys.stderr.write(f"{PROG}: error: the app needs a terminal, and its {missing} is not one; `{PROG} run`, "
                         f"`sweep` and `tune` work without one (`{PROG} run --help`)\n")
        return 2
    from tui import paths

    unusable = paths.home_problem(needs_config=True)  # every run would fail inside inductor, said as its fault
    if unusable is not None:
        sys.stderr.write(f"{PROG}: error: {unusable}\n")
        return 2
    try:
        from tui.app.app import run_app
    except ImportError as exc:
        print(f"{PROG}: the app could not be loaded ({exc}); `{PROG} run --help` shows the command line")
        return 0
    return int(run_app(no_mouse=no_mouse, theme=theme, cluster=cluster) or 0)


def not_a_terminal(keys: TextIO | None, screen: TextIO | None) -> str | None:
    """Which of the app's streams is no terminal: ``input (stdin)`` (its keys) or ``screen (stderr)`` (Textual
    draws there), else None. Without them the app would wait for keys that never come and draw to nowhere, a
    core busy until it is killed (``compile-lab < /dev/null``, ``ssh host compile-lab`` without ``-t``)."""
    for stream, name in ((keys, "input (stdin)"), (screen, "screen (stderr)")):
        try:
            if stream is None or not stream.isatty():
                return name
        except ValueError:  # a closed stream
            return name
    return None
