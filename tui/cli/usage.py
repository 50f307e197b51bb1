"""The command line's usage error, apart so that the flag parsers (``run_flags``) and the flags' reader
(``parse``), which imports them, can both raise it."""

from __future__ import annotations

from collections.abc import Callable

from tui.engine.option_table import SPECS
from tui.engine.options import OptionsError

__all__ = ["UsageError", "number_flag", "flag_of", "refusal", "usage_line"]


class UsageError(Exception):
    """Bad usage: the message is one line (without the ``compile-lab: error:`` prefix).

    Not a ValueError: raised by a flag's argparse type, it passes through argparse (which would turn a
    ValueError into "invalid int value") to the command line's one line."""


def number_flag(flag: str, allowed: str, integer: bool = False) -> Callable[[str], float | int]:
    """An argparse ``type`` reading ``flag``'s text as a number (a whole one when ``integer``).

    Text that is no number raises :class:`UsageError` naming the flag and ``allowed``; the value's
    range is the command's to check, after parsing, in the same words.
    """
    read: Callable[[str], float | int] = int if integer else float

    def parse(text: str) -> float | int:
        try:
            return read(text)
        except ValueError:
            what = "a whole number" if integer else "a number"
            raise UsageError(f"{flag}: {text.strip()[:40]!r} is not {what} (allowed: {allowed})") from None

    return parse


def flag_of(field: str) -> str:
    """The flag that sets option ``field`` (``params`` -> ``--param``, ``timeout_s`` -> ``--timeout``): its spec's
    (tui.engine.option_table), else the field's name dashed (``max_memory`` -> ``--max-memory``); a field that is
    a flag already (``--python``) as it is."""
    if field.startswith("-"):
        return field
    spec = SPECS.get(field)
    if spec is not None and spec.flag:
        return spec.flag
    return "--" + field.replace("_", "-")


def refusal(exc: OptionsError) -> str:
    """An option's refusal as the command line says it, naming the flag the user typed: ``--timeout: 0.0 is not
    allowed (allowed: ...)``, where the option's own name (``timeout_s``) means nothing on a command line."""
    field, _, key = exc.field.partition(".")  # ``noise_limits.max_drift``: the flag, then the key the user typed
    return f"{flag_of(field)}: {key + ': ' if key else ''}{exc.message}"


def usage_line(exc: Exception) -> str:
    """What a refused input says after ``compile-lab: error:``: an option's refusal naming its flag (:func:`refusal`),
    else the error's own line (a UsageError's, a ClusterError's)."""
    return refusal(exc) if isinstance(exc, OptionsError) else str(exc)
