"""Linux's ``prctl`` for the two process settings compile-lab uses (no-ops elsewhere).

* :data:`PR_SET_PDEATHSIG`: a worker asks to be SIGKILLed when its parent (the app or CLI) dies;
* :data:`PR_SET_CHILD_SUBREAPER`: an orphaned descendant is handed to this process instead of PID 1,
  as init replacements such as tini do (the runner, and each worker: see :mod:`tui.engine.runner.leftovers`).
"""

from __future__ import annotations

import sys

__all__ = ["PR_SET_PDEATHSIG", "PR_SET_CHILD_SUBREAPER", "prctl"]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def prctl(option: int, value: int) -> bool:
    """``prctl(option, value)`` on Linux; True when it applied (False elsewhere, or when it failed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError, TypeError):
        return False
