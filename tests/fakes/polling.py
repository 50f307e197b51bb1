"""Waiting for something outside the test's event loop (a process to go, a file to appear).

Processes and files send no event a test could await, so these poll against a deadline.
Import as ``from fakes.polling import poll_until`` (pytest puts ``tests/`` on sys.path).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Any


async def poll_until(predicate: Callable[[], Any], within: float, interval: float = 0.02) -> Any:
    """``predicate()``'s first true value within ``within`` seconds, else its last (false) value."""
    deadline = time.monotonic() + within
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        await asyncio.sleep(interval)


def group_alive(pgid: int) -> bool:
    """Whether a process group ``pgid`` still has a process (a zombie counts until it is reaped)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
