"""Naming and dating runs: the sortable run id (also a tune's and a session's) and a moment as ISO 8601 UTC."""

from __future__ import annotations

import secrets
import time
from datetime import datetime, timezone

__all__ = ["new_run_id", "iso_utc"]


def new_run_id(now: float | None = None) -> str:
    """A sortable, file-name-safe id: ``YYYYmmdd-HHMMSS-xxxxxx`` (UTC, 6 random hex digits)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(3)}"


def iso_utc(seconds: float) -> str:
    """A moment (seconds since the epoch) as ISO 8601 UTC with a ``Z``, to the second: the CSV's ``timestamp``.
    OverflowError, OSError or ValueError where no date can show it."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
