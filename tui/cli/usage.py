"""The command line's usage error, apart so that the flag parsers (``run_flags``) and the flags' reader
(``parse``), which imports them, can both raise it."""

from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(Exception):
    """Bad usage: the message is one line (without the ``compile-lab: error:`` prefix).

    Not a ValueError: raised by a flag's argparse type, it passes through argparse (which would turn a
    ValueError into "invalid int value") to the command line's one line."""
