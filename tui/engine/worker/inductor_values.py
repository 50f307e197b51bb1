"""An inductor option's value read against the type torch's config declares for it.

``--option freezing=maybe`` reached inductor as the text ``"maybe"``, which failed every candidate's compile
("Unexpected type of attr freezing, got str should be bool") as a compile error, and ``cpp.simdlen=abc`` was taken
silently. The command line reads a value as a bool, a whole number, a number or text (``90`` is a number), so a value
is taken in the declared kind where that is what it says: a whole number for a ``float`` (torch refuses an int there),
a number for a text option (``cuda.arch=90``), ``none`` for an option that may be None. :func:`checked_value` refuses
the rest in one line, and says nothing of a type it cannot read (a list, a callable): inductor judges those.
Imports no torch: the worker passes the declared type.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from tui.engine.catalog import echo

__all__ = ["checked_value", "ValueRefused"]

_WORDS = {bool: "true or false", int: "a whole number", float: "a number", str: "text", type(None): "none"}
"""The plain kinds, in the words a refusal uses."""


class ValueRefused(ValueError):
    """A value that is not of its option's declared kind (its message: one line)."""


def _kinds(declared: Any) -> tuple[type, ...] | None:
    """The plain kinds ``declared`` (a type or a union of them) allows, or None where it is anything else."""
    if declared in _WORDS:
        return (declared,)
    if isinstance(declared, types.UnionType) or typing.get_origin(declared) is typing.Union:
        kinds = typing.get_args(declared)
        return kinds if all(kind in _WORDS for kind in kinds) else None
    return None


def _as_kind(value: Any, kinds: tuple[type, ...]) -> tuple[bool, Any]:
    """(True, the value in one of ``kinds``) where it is one or says one, else (False, None)."""
    if isinstance(value, bool):  # a bool is an int to Python, not to inductor's config
        return (True, value) if bool in kinds else (False, None)
    if isinstance(value, int) and int in kinds or isinstance(value, float) and float in kinds:
        return True, value
    if isinstance(value, int) and float in kinds:
        return True, float(value)
    if isinstance(value, (int, float)) and str in kinds:
        return True, str(value)
    if isinstance(value, str) and str in kinds:
        return True, value
    if value is None or (isinstance(value, str) and value.lower() == "none"):
        return (True, None) if type(None) in kinds else (False, None)
    return False, None


def checked_value(key: str, value: Any, declared: Any) -> Any:
    """``value`` as option ``key`` takes it (its declared type ``declared``), or ValueRefused (``freezing='maybe' is
    not allowed: freezing takes true or false``); unchanged where the type is not made of the plain kinds. ``key`` is
    one torch knows (the worker checks the names first)."""
    kinds = _kinds(declared)
    if kinds is None:
        return value
    fits, taken = _as_kind(value, kinds)
    if fits:
        return taken
    words = " or ".join(dict.fromkeys(_WORDS[kind] for kind in kinds))
    raise ValueRefused(f"{key}={echo(value)} is not allowed: {key} takes {words}")
