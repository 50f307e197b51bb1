"""Run options read from a file (the app's config, a history line), and what in them runs code.

:func:`decode_options` is the one typed decode of stored options: every field is checked
against its annotation in :class:`~tui.engine.options.RunOptions` (through
:func:`tui.typed.decode_fields`), ``dynamic`` is read as auto/true/false, a workload parameter
must be a number, text or true/false, and an unknown key is a problem too. A field that does
not fit takes its default and is named (``where.field: why``, the convention of
``decode_fields``: the reader adds "default used" and where the file is); the rest is kept, so
one bad field never costs the others, and nothing here raises.

Options that came from a file did not come from the user in this session. Two kinds of them
start a program: ``python`` (the worker's interpreter) and inductor options (``cpp.cxx`` names
the C++ compiler, others name compilers, flags or directories a compiler reads; which ones
differs between torch versions, so every inductor option counts). :func:`code_settings` lists
them; the app shows them and asks before the first run that uses them (``tui.app.trust``).
:data:`HIDDEN_FIELDS` are the options that affect a run and have no field in the app's picker:
the picker shows those that differ from their defaults in one line.

Options stored before ``precision`` had a boolean ``tf32`` instead: true read as ``tf32``, false as
``ieee`` (it turned cuDNN's TF32 off as ``ieee`` does), by :func:`precision_from_tf32`, the one
place of that rule; :func:`upgrade_tf32_run` applies it to a stored run and says so in the run's
``notes`` ("precision from the old TF32 switch"), which the CSV and the details show.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from tui.engine.catalog import echo
from tui.engine.option_table import DYNAMIC, FIELD, OPTIONS, PARAMS, code_fields, hidden_fields, limit_fields
from tui.engine.options import OptionsError, RunOptions, check_compile_settings, full_dtype, parse_dynamic
from tui.typed import decode_fields, printable

__all__ = ["decode_options", "check_hidden", "code_settings", "hidden_settings", "HIDDEN_FIELDS", "LIMIT_FIELDS",
           "CODE_FIELDS", "precision_from_tf32", "upgrade_tf32_run", "TF32_NOTE"]

HIDDEN_FIELDS = hidden_fields()
"""RunOptions fields that change a run and have no field in the app's picker (the option table's ``picker`` None)."""

LIMIT_FIELDS = limit_fields()
"""The picker's measurement limits: a stored value a run would refuse is dropped as a hidden one is
(:func:`check_hidden`), so one bad number in a config never makes the first run a refusal."""

CODE_FIELDS = code_fields()
"""RunOptions fields whose values start a program (an interpreter; a compiler and its flags)."""

_SCALARS = (str, int, float, bool)
_FIELDS = tuple(f.name for f in dataclasses.fields(RunOptions))
_STORED = {spec.name: spec.stored for spec in OPTIONS}
_DEFAULTS = RunOptions()


def decode_options(data: Any, where: str = "options") -> tuple[RunOptions, list[str]]:
    """Stored options -> ``(options, problems)``; every problem names ``where.field`` and why.

    A value of the wrong type takes the field's default; an unknown key and a workload
    parameter that is not a number, text or true/false are left out. Never raises.
    """
    if not isinstance(data, dict):
        return RunOptions(), [f"{where}: expected an object, got {_kind(data)}"]
    data, _, problems = precision_from_tf32(data, where)
    problems += [f"{where}.{echo(printable(str(key)), plain=True)}: unknown option"
                for key in data if key not in _FIELDS]  # fmt: skip
    plain = {k: v for k, v in data.items() if k in _FIELDS and _STORED.get(k, FIELD) == FIELD}
    typed, found = decode_fields(RunOptions, plain, where=where)
    problems += found
    changes: dict[str, Any] = {}
    for name in (name for kind in (DYNAMIC, PARAMS) for name, stored in _STORED.items() if stored == kind):
        if name not in data:
            continue
        if _STORED[name] == DYNAMIC:
            try:
                changes[name] = parse_dynamic(data[name])
            except OptionsError as exc:
                problems.append(f"{where}.{exc}")
        else:
            changes[name] = _params(data[name], f"{where}.{name}", problems)
    changes["dtype"] = full_dtype(typed.dtype)  # a config written by hand may say bf16, as the tables do
    return dataclasses.replace(typed, **changes), problems


TF32_NOTE = "precision from the old TF32 switch: tf32 {tf32} read as {precision}"
"""The note of a stored run whose precision was read from its ``tf32`` option."""
_LEGACY_TF32 = {True: "tf32", False: "ieee"}


def precision_from_tf32(data: dict[str, Any], where: str = "options") -> tuple[dict[str, Any], str | None, list[str]]:
    """Stored options with the old ``tf32`` switch as ``precision``: ``(options, note, problems)``.

    ``tf32`` true is ``tf32``, false ``ieee``; ``note`` (:data:`TF32_NOTE`) says so, None when
    there was nothing to read. A ``tf32`` that is not true/false, or one beside a ``precision``,
    is a problem and dropped. Options without ``tf32`` come back as they are.
    """
    if "tf32" not in data:
        return data, None, []
    data = dict(data)
    value = data.pop("tf32")
    if "precision" in data:
        return data, None, [f"{where}.tf32: the old TF32 switch beside precision (ignored)"]
    if not isinstance(value, bool):
        return data, None, [f"{where}.tf32: expected true or false, got {echo(value)}"]
    data["precision"] = _LEGACY_TF32[value]
    return data, TF32_NOTE.format(precision=data["precision"], tf32=str(value).lower()), []


def upgrade_tf32_run(item: dict[str, Any]) -> dict[str, Any]:
    """A stored run (a history line, a JSON export's run) whose options have ``tf32``, with ``precision``.

    The note goes to the run's ``notes``. Anything else, and a run without ``tf32``, is left as it is.
    """
    options = item.get("options")
    if not isinstance(options, dict) or "tf32" not in options:
        return item
    upgraded, note, _ = precision_from_tf32(options)
    if note is None:
        return item  # a malformed tf32 stays, for decode_options to name
    notes = item.get("notes")
    return {**item, "options": upgraded, "notes": [*notes, note] if isinstance(notes, list) else [note]}


def _params(value: Any, where: str, problems: list[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        problems.append(f"{where}: expected an object, got {_kind(value)}")
        return {}
    params: dict[str, Any] = {}
    for key, item in value.items():
        name = printable(str(key))
        if isinstance(item, _SCALARS):
            params[name] = printable(item) if isinstance(item, str) else item
        else:
            problems.append(f"{where}.{echo(name, plain=True)}: expected a number, text or true/false, "
                            f"got {_kind(item)}")  # fmt: skip
    return params


def check_hidden(options: RunOptions, where: str = "options") -> tuple[RunOptions, list[str]]:
    """``options`` with each :data:`HIDDEN_FIELDS` and :data:`LIMIT_FIELDS` value the run would refuse defaulted.

    The picker cannot show or correct these, so a saved one that is out of range (a negative
    ``timeout_s``, a ``python`` that is no executable file, a malformed inductor option name)
    would refuse every run: it is named and dropped instead. Each is judged on its own.
    """
    problems: list[str] = []
    changes: dict[str, Any] = {}
    for name in HIDDEN_FIELDS + LIMIT_FIELDS:
        value = getattr(options, name)
        if name == "compile_optimizer" or value == getattr(_DEFAULTS, name):
            continue  # compile_optimizer is a bool that the picker applies only with train
        try:
            if name == "inductor_options":
                check_compile_settings("inductor", "default", value)
            else:
                dataclasses.replace(_DEFAULTS, **{name: value}).validated()
        except OptionsError as exc:
            problems.append(f"{where}.{exc}")
            changes[name] = getattr(_DEFAULTS, name)
    return dataclasses.replace(options, **changes), problems


def code_settings(options: RunOptions) -> list[tuple[str, str]]:
    """The settings of ``options`` that start a program, as ``(name, value)`` text pairs.

    ``python`` (its path as given) and every inductor option (``inductor_options.cpp.cxx``, its
    value as JSON unless it is text), in a stable order.
    """
    found = []
    if options.python is not None:
        found.append(("python", options.python))
    for key in sorted(options.inductor_options):
        value = options.inductor_options[key]
        found.append((f"inductor_options.{key}", value if isinstance(value, str) else _json(value)))
    return found


def hidden_settings(options: RunOptions) -> list[tuple[str, str]]:
    """The :data:`HIDDEN_FIELDS` of ``options`` that differ from their defaults, as ``(name, value)`` text.

    Inductor options are listed one by one (``inductor_options.cpp.cxx``), like :func:`code_settings`.
    """
    found: list[tuple[str, str]] = []
    for name in HIDDEN_FIELDS:
        value = getattr(options, name)
        if value == getattr(_DEFAULTS, name):
            continue
        if name == "inductor_options":
            found += [pair for pair in code_settings(options) if pair[0] != "python"]
        else:
            found.append((name, value if isinstance(value, str) else _json(value)))
    return found


def _json(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
