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
from collections.abc import Callable
from functools import cache
from typing import Any, Protocol, TypeGuard, TypeVar, Union, runtime_checkable

__all__ = ["JsonRecord", "decode_fields", "encode_fields", "finite", "printable", "FieldError"]

T = TypeVar("T")
R = TypeVar("R", bound="JsonRecord")


class _Record(Protocol):
    """A nested record's type: a dataclass that builds itself from JSON (a :class:`JsonRecord`, or its own)."""

    @classmethod
    def from_json(cls, data: Any) -> Any: ...


@runtime_checkable
class _Encodable(Protocol):
    """A nested record: a dataclass that writes itself as JSON."""

    def to_json(self) -> Any: ...
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


# Control characters other than newline and tab: C0, DEL and C1 (ESC, CSI, OSC... start terminal commands).
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))}


def printable(text: str) -> str:
    """``text`` with every terminal control character shown as ``\\xNN``, newlines and tabs kept.

    What a worker, a file or a user wrote is shown as text, never run by the terminal: every
    string decoded here goes through it, and so does anything printed that did not.
    """
    return text.translate(_CONTROL)


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
            try:
                value = float(value)
            except OverflowError:  # an integer of hundreds of digits: JSON allows it, a float cannot hold it
                raise TypeError(f"expected float, got an integer of {len(str(abs(value)))} digits") from None
            return value if math.isfinite(value) else None
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif kind is str:
        if isinstance(value, str):
            return printable(value)
    elif isinstance(value, kind):
        return value
    raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")


# A converter turns one JSON value into its annotation's type, or raises TypeError; a nested
# record's dropped fields go to ``problems``, named from ``where``. One is built per annotation
# and cached: a history of thousands of lines decodes the same few annotations over and over.
Converter = Callable[[Any, str, "list[str]"], Any]


def _is_record(hint: Any) -> TypeGuard[type[_Record]]:
    return dataclasses.is_dataclass(hint) and isinstance(hint, type) and hasattr(hint, "from_json")


@cache
def _names_records(hint: Any) -> bool:
    """True when a value of ``hint`` can hold a nested record (its problems need a ``where``)."""
    base, _ = _split_optional(hint)
    if _is_record(base):
        return True
    if typing.get_origin(base) not in (tuple, dict):
        return False
    return any(_names_records(a) for a in typing.get_args(base) if a is not ...)


@cache
def _converter(hint: Any) -> Converter:
    base, optional = _split_optional(hint)
    if base in _SCALARS:
        return _scalar_converter(base, optional)
    convert = _base_converter(base)
    if optional or base is Any:
        def nullable(value: Any, where: str, problems: list[str]) -> Any:
            return None if value is None else convert(value, where, problems)

        return nullable

    def required(value: Any, where: str, problems: list[str]) -> Any:
        if value is None:
            raise TypeError("expected a value, got null")
        return convert(value, where, problems)

    return required


def _scalar_converter(kind: type, optional: bool) -> Converter:
    isfinite = math.isfinite

    def convert(value: Any, where: str, problems: list[str]) -> Any:
        cls = type(value)
        if cls is kind:  # the common case first: exactly the annotated type
            if kind is str:
                return printable(value)
            return value if kind is not float or isfinite(value) else None
        if value is None:
            if optional:
                return None
            raise TypeError("expected a value, got null")
        return _scalar(kind, value)

    return convert


def _base_converter(hint: Any) -> Converter:
    if hint is Any:
        return lambda value, where, problems: value
    origin = typing.get_origin(hint)
    if origin is tuple:
        return _tuple_converter(typing.get_args(hint)[0])
    if origin is dict:
        return _dict_converter(typing.get_args(hint)[1])
    if _is_record(hint):
        return _record_converter(hint)

    def unknown(value: Any, where: str, problems: list[str]) -> Any:
        raise TypeError(f"cannot decode into {hint!r}")

    return unknown


def _tuple_converter(item_hint: Any) -> Converter:
    item, named = _converter(item_hint), _names_records(item_hint)

    def convert(value: Any, where: str, problems: list[str]) -> Any:
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"expected a list, got {type(value).__name__}")
        if named:
            return tuple(item(v, f"{where}[{i}]", problems) for i, v in enumerate(value))
        return tuple(item(v, where, problems) for v in value)

    return convert


def _dict_converter(item_hint: Any) -> Converter:
    item, named = _converter(item_hint), _names_records(item_hint)

    def convert(value: Any, where: str, problems: list[str]) -> Any:
        if not isinstance(value, dict):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        if named:
            return {str(k): item(v, f"{where}[{k!r}]", problems) for k, v in value.items()}
        return {str(k): item(v, where, problems) for k, v in value.items()}

    return convert


def _record_converter(hint: type[_Record]) -> Converter:
    def convert(value: Any, where: str, problems: list[str]) -> Any:
        if isinstance(value, hint):
            return value
        if not isinstance(value, dict):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        if issubclass(hint, JsonRecord):  # keep the names of its dropped fields
            result, nested = hint.decode(value, where)
            problems.extend(nested)
            return result
        return hint.from_json(value)

    return convert


@cache
def _plan(cls: type) -> tuple[tuple[str, Converter, bool, bool], ...]:
    """Per init field of ``cls``: (name, converter, required, whether its problems need a where)."""
    hints = typing.get_type_hints(cls)
    return tuple(
        (spec.name, _converter(hints[spec.name]),
         spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING,
         _names_records(hints[spec.name]))
        for spec in dataclasses.fields(cls)
        if spec.init
    )  # fmt: skip


def decode_fields(cls: type[T], data: Any, *, where: str = "") -> tuple[T, list[str]]:
    """Build ``cls`` from the JSON object ``data``: (instance, problems).

    A field missing from ``data`` takes its default; a field whose value does not fit its
    annotation takes its default too and is named in ``problems`` (``where.field: why``; a
    field of a nested record as ``where.field.inner: why``).
    A field without a default that is missing or wrong raises :class:`FieldError`. Keys that
    ``cls`` has no field for are ignored.
    """
    prefix = where or cls.__name__
    if not isinstance(data, dict):
        raise FieldError(f"{prefix}: expected an object, got {type(data).__name__}")
    kwargs: dict[str, Any] = {}
    problems: list[str] = []
    plain: type = cls  # the cache takes a plain class (mypy reads a type[T] as possibly unhashable)
    for name, convert, required, named in _plan(plain):
        if name not in data:
            if required:
                raise FieldError(f"{prefix}.{name}: missing")
            continue
        nested: list[str] = [] if named else problems  # a field without records adds no problems
        try:
            kwargs[name] = convert(data[name], f"{prefix}.{name}" if named else prefix, nested)
        except (TypeError, ValueError, FieldError) as exc:
            if required:
                raise FieldError(f"{prefix}.{name}: {exc}") from None
            problems.append(f"{prefix}.{name}: {exc}")
            continue
        if named:
            problems.extend(nested)
    return cls(**kwargs), problems


def encode_fields(obj: Any) -> dict[str, Any]:
    """A JSON-ready dict of a dataclass's fields (nested dataclasses through their ``to_json``)."""
    result: dict[str, Any] = {}
    for spec in dataclasses.fields(obj):
        result[spec.name] = _encode(getattr(obj, spec.name))
    return result


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and isinstance(value, _Encodable) and not isinstance(value, type):
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
    def from_json(cls: type[R], data: Any) -> R:
        """Build from a dict; fields of the wrong type take their defaults (see :func:`decode_fields`)."""
        return decode_fields(cls, data)[0]

    @classmethod
    def decode(cls, data: Any, where: str = "") -> tuple[Any, list[str]]:
        """Like :meth:`from_json`, also returning one problem line per dropped field."""
        return decode_fields(cls, data, where=where)
