"""Whether an inductor option's value is of the type torch's config declares for it, in words when it is not.

``--option freezing=maybe`` reached inductor as the text ``"maybe"``, which failed every candidate's compile
("Unexpected type of attr freezing, got str should be bool") as a compile error, and ``cpp.simdlen=abc`` was taken
silently. Torch's config declares each option's type (``bool``, ``int | None``, ...); :func:`value_refusal` reads a
value against it, where the type is made of the plain kinds a command line or a config gives (true/false, a whole
number, a number, text, none), and says nothing of a type it cannot read (a list, a callable): inductor judges those.
Imports no torch: the worker passes the declared type.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from tui.engine.catalog import echo

__all__ = ["value_refusal"]

_WORDS = {bool: "true or false", int: "a whole number", float: "a number", str: "text", type(None): "none"}
"""The plain kinds, in the words a refusal uses."""


def _kinds(declared: Any) -> tuple[type, ...] | None:
    """The plain kinds ``declared`` (a type or a union of them) allows, or None where it is anything else."""
    if declared in _WORDS:
        return (declared,)
    if isinstance(declared, types.UnionType) or typing.get_origin(declared) is typing.Union:
        kinds = typing.get_args(declared)
        return kinds if all(kind in _WORDS for kind in kinds) else None
    return None


def _fits(value: Any, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool):  # a bool is an int to Python, not to inductor's config
        return bool in kinds
    if isinstance(value, int):
        return int in kinds or float in kinds
    return any(isinstance(value, kind) for kind in kinds if kind is not bool)


def value_refusal(key: str, value: Any, declared: Any) -> str | None:
    """Why ``value`` cannot be option ``key``'s, whose declared type is ``declared`` (``freezing='maybe' is not
    allowed: freezing takes true or false``), or None where it can or the type is not one of the plain kinds.
    ``key`` is one torch knows (the worker checks the names first)."""
    kinds = _kinds(declared)
    if kinds is None or _fits(value, kinds):
        return None
    words = " or ".join(dict.fromkeys(_WORDS[kind] for kind in kinds))
    return f"{key}={echo(value)} is not allowed: {key} takes {words}"
