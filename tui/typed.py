"""Decoding JSON objects into frozen dataclasses, checking every field once.

Every dataclass that crosses a seam (worker events, their payloads, run summaries, history
lines) is read from JSON by :func:`decode_fields`: a value whose type does not match the
field's annotation is dropped to the field's default and named in the problems list, so a
reader downstream never has to re-check a type. :func:`encode_fields` is the inverse.

Annotations understood: ``int``, ``float``, ``str``, ``bool`` (each optionally ``| None``),
``tuple[X, ...]`` of those, ``dict[str, X]`` (X a scalar, or ``Any`` for free-form JSON), a
nested dataclass with its own ``from_json``, and ``Any`` (kept as it is).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from functools import lru_cache
from typing import Any, Callable, TypeVar, Union

__all__ = ["JsonRecord", "decode_fields", "encode_fields", "finite", "FieldError"]

T = TypeVar("T")
_SCALARS = (int, float, str, bool)


class FieldError(ValueError):
    """A required field is missing or has the wrong type."""


def finite(value: Any) -> Any:
    """``value`` with non-finite floats replaced by None, recursively (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


@lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _split_optional(hint: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        return (args[0] if len(args) == 1 else Any), optional
    return hint, False


def _scalar(kind: type, value: Any) -> Any:
    """``value`` as ``kind``, or raise TypeError (bools are not numbers; ints are floats)."""
    if kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = float(value)
            return value if math.isfinite(value) else None
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif isinstance(value, kind):
        return value
    raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")


def _convert(hint: Any, value: Any) -> Any:
    """Convert one JSON value to ``hint``; TypeError when it does not fit."""
    hint, optional = _split_optional(hint)
    if value is None:
        if optional or hint is Any:
            return None
        raise TypeError("expected a value, got null")
    if hint is Any:
        return value
    if hint in _SCALARS:
        return _scalar(hint, value)
    origin = typing.get_origin(hint)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"expected a list, got {type(value).__name__}")
        item = typing.get_args(hint)[0]
        return tuple(_convert(item, v) for v in value)
    if origin is dict:
        if not isinstance(value, dict):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        item = typing.get_args(hint)[1]
        return {str(k): _convert(item, v) for k, v in value.items()}
    if dataclasses.is_dataclass(hint):
        if isinstance(value, hint):
            return value
        if not isinstance(value, dict):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        return hint.from_json(value)
    raise TypeError(f"cannot decode into {hint!r}")


def decode_fields(cls: Callable[..., T], data: Any, *, where: str = "") -> tuple[T, list[str]]:
    """Build ``cls`` from the JSON object ``data``: (instance, problems).

    A field missing from ``data`` takes its default; a field whose value does not fit its
    annotation takes its default too and is named in ``problems`` (``where.field: why``).
    A field without a default that is missing or wrong raises :class:`FieldError`. Keys that
    ``cls`` has no field for are ignored.
    """
    if not isinstance(data, dict):
        raise FieldError(f"{where or cls.__name__}: expected an object, got {type(data).__name__}")
    hints = _hints(cls)  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    problems: list[str] = []
    for spec in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not spec.init or spec.name not in data:
            if spec.init and spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise FieldError(f"{where or cls.__name__}.{spec.name}: missing")
            continue
        try:
            kwargs[spec.name] = _convert(hints[spec.name], data[spec.name])
        except (TypeError, ValueError, FieldError) as exc:
            label = f"{where or cls.__name__}.{spec.name}"
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise FieldError(f"{label}: {exc}") from None
            problems.append(f"{label}: {exc}")
    return cls(**kwargs), problems


def encode_fields(obj: Any) -> dict[str, Any]:
    """A JSON-ready dict of a dataclass's fields (nested dataclasses through their ``to_json``)."""
    result: dict[str, Any] = {}
    for spec in dataclasses.fields(obj):
        result[spec.name] = _encode(getattr(obj, spec.name))
    return result


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return value.to_json()
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return finite(value)


class JsonRecord:
    """``to_json`` / ``from_json`` for a frozen dataclass of JSON-typed fields."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return encode_fields(self)

    @classmethod
    def from_json(cls, data: Any):  # noqa: ANN206  (an instance of the subclass)
        """Build from a dict; fields of the wrong type take their defaults (see :func:`decode_fields`)."""
        return decode_fields(cls, data)[0]

    @classmethod
    def decode(cls, data: Any, where: str = "") -> tuple[Any, list[str]]:
        """Like :meth:`from_json`, also returning one problem line per dropped field."""
        return decode_fields(cls, data, where=where)
