"""The fields a run's options are told apart by, each with one short form that is never cut.

One place for the app's results table (a column per field) and the command line's table (a label
whose differing fields come first): the workload, its parameters, backend, mode, fullgraph,
dynamic, dtype (+ precision), device, the flags (train, cold compile, L2 flush, inductor options) and the interpreter.
Long values get short forms here (``max-autotune-no-cudagraphs`` -> ``max-autotune-no-cg``,
``bfloat16`` -> ``bf16``); the details screen and the exports keep the full values.

Imports no textual: the command line uses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable, Iterable, Mapping

from tui.engine.run.ab import interpreter_name
from tui.engine.options import (
    DEFAULT_MODE, DEFAULT_PRECISION, SHORT_DTYPES, RunOptions, key_value_words, mode_applies,
)  # fmt: skip
from tui.present.format import MISSING
from tui.present.format import workload_word
from tui.typed import printable

__all__ = [
    "OptionField",
    "OPTION_FIELDS",
    "FIELDS_BY_KEY",
    "SHORT_MODES",
    "SHORT_DTYPES",
    "NOT_APPLICABLE",
    "ON",
    "short_mode",
    "short_dtype",
    "short_device",
    "workload_word",
    "params_text",
    "inductor_text",
    "flags_text",
    "differing",
    "option_words",
]

SHORT_MODES = {"max-autotune-no-cudagraphs": "max-autotune-no-cg"}
"""Modes whose name is longer than a column should be; the others are short enough as they are."""
NOT_APPLICABLE = MISSING
"""A field that does not apply to the run (the mode of a backend other than inductor)."""
ON = "✓"
"""A true boolean field (fullgraph) in a cell; false is blank (as the app's check boxes)."""
_UUID_CHARS = 8
"""Hex digits of a GPU uuid kept in a device's short form (``GPU-8d4f0000``), as short ids go."""


def short_mode(options: RunOptions) -> str:
    """The mode's short form for inductor; ``–`` for a backend that ignores the mode."""
    if not mode_applies(options.backend):
        return NOT_APPLICABLE
    return SHORT_MODES.get(options.mode, options.mode)


def short_dtype(options: RunOptions) -> str:
    """``fp32``, ``bf16``, ``fp16``, with the precision when it is not the default: ``fp32+tf32``, ``fp32+ieee``."""
    dtype = SHORT_DTYPES.get(options.dtype, options.dtype)
    return dtype if options.precision == DEFAULT_PRECISION else f"{dtype}+{printable(options.precision)}"


def short_device(device: str) -> str:
    """``cpu``, ``cuda``, ``cuda:1``; a GPU named by uuid as ``GPU-8d4f0000`` (its first hex digits)."""
    if device.startswith("cuda:GPU-"):
        return device[len("cuda:"):][: len("GPU-") + _UUID_CHARS]
    return device


def params_text(options: RunOptions) -> str:
    """``batch=8 seq=1024``: the workload's parameters as set (empty for a user workload)."""
    return printable(" ".join(f"{key}={value}" for key, value in options.params.items()))


def inductor_text(options: RunOptions) -> str:
    """``cpp_wrapper=True freezing=True``: the inductor options as ``key=value``, by key (empty without any)."""
    return printable(key_value_words(options.inductor_options))


def _plain_flags(options: RunOptions) -> list[str]:
    """The flags but the inductor options: ``train`` (``train+opt``), ``cold``, ``l2-flush``."""
    flags = []
    if options.train:
        flags.append("train+opt" if options.compile_optimizer else "train")
    if options.cold_compile:
        flags.append("cold")
    if options.l2_flush:
        flags.append("l2-flush")
    return flags


def flags_text(options: RunOptions, spell: bool = False) -> str:
    """What else changes the numbers: ``train`` (``train+opt`` with a compiled optimizer), ``cold``
    (cold compile), ``l2-flush``, ``2 opts`` (inductor options; the details list them).

    ``spell``: the inductor options as :func:`inductor_text` says them instead of their count, where rows
    that differ by one option alone (a tune's candidates) must read apart.
    """
    flags = _plain_flags(options)
    if options.inductor_options and spell:
        flags.append(inductor_text(options))
    elif options.inductor_options:
        count = len(options.inductor_options)
        flags.append(f"{count} opt{'s' if count != 1 else ''}")
    return " ".join(flags)


def _spelled_flags(options: RunOptions) -> str:
    return flags_text(options, spell=True)


@dataclass(frozen=True)
class OptionField:
    """One field of a run's options as a person reads it in a table."""

    key: str
    """The app table's column key (and the name the command line's label uses for it)."""
    header: str
    """The column header: short, since the values are."""
    meaning: str
    """What the field is, for the column chooser."""
    value: Callable[[RunOptions], str]
    """The field's short form for one run."""
    width: int
    """The most columns a value gets in the app's table (the widest known value fits)."""
    omit: tuple[str, ...] = ()
    """Values that go unsaid in a label unless they tell rows apart (``dyn=`` is always said)."""
    word_of: Callable[[str], str] | None = None
    """How a value reads in a label when it is not the value itself (``dyn=auto``, ``fullgraph``)."""
    identity: Callable[[RunOptions], str] | None = None
    """What tells two runs' values apart where the short form may not (two files named ``model.py``, two runs of
    one inductor option each, ``1 opt``)."""

    def word(self, value: str, differs: bool = False) -> str:
        """``value`` as a word of a label; empty when it goes unsaid (``differs``: it tells rows apart)."""
        if value == NOT_APPLICABLE or (value in self.omit and not differs):
            return ""
        if self.word_of is not None:
            return self.word_of(value)
        return value


def _fullgraph_word(value: str) -> str:
    return "fullgraph" if value == ON else "no-fullgraph"


OPTION_FIELDS: tuple[OptionField, ...] = (
    OptionField("workload", "workload", "the workload (a user's file by its name)", workload_word, 20,
                identity=lambda o: o.workload),
    OptionField("params", "params", "the workload's parameters (sizes)", params_text, 32),
    OptionField("backend", "backend", "torch.compile's backend", lambda o: printable(o.backend), 12),
    OptionField("mode", "mode",
                "inductor's mode (– for other backends); max-autotune-no-cg: max-autotune-no-cudagraphs",
                short_mode, 18, omit=(DEFAULT_MODE,)),
    OptionField("fullgraph", "fg", f"fullgraph: {ON} when the whole function must compile as one graph",
                lambda o: ON if o.fullgraph else "", 2, omit=("",), word_of=_fullgraph_word),
    OptionField("dynamic", "dyn", "dynamic shapes: auto, true or false", lambda o: o.dynamic_label, 5,
                word_of=lambda value: f"dyn={value}"),
    OptionField("dtype", "dtype", "the dtype of parameters and inputs; +tf32: TF32 for matmuls and cuDNN, +ieee: "
                "no TF32 (the precision option; none said: torch's defaults)", short_dtype, 9),
    OptionField("device", "device", "cpu, cuda, cuda:N, or a GPU by its uuid's first digits",
                lambda o: short_device(o.device), 12),
    OptionField("flags", "flags", "train (+opt), cold compile, l2-flush, the inductor options (key=value); ×3: 3 "
                "processes, #2: a previous session's second process", flags_text, 32, omit=("",),
                identity=_spelled_flags),
    OptionField("python", "python", "the worker's interpreter (--python; an A/B sweep's side): its venv's directory",
                lambda o: printable(interpreter_name(o.python)), 16, omit=("",)),
)
"""The fields in the order a label reads them."""

FIELDS_BY_KEY = {field.key: field for field in OPTION_FIELDS}


def differing(options: Iterable[RunOptions]) -> frozenset[str]:
    """The keys of the fields whose values are not the same for every one of ``options``."""
    seen: dict[str, set[str]] = {field.key: set() for field in OPTION_FIELDS}
    for one in options:
        for field in OPTION_FIELDS:
            seen[field.key].add((field.identity or field.value)(one))
    return frozenset(key for key, values in seen.items() if len(values) > 1)


def option_words(options: RunOptions, differs: frozenset[str] = frozenset(),
                 skip: tuple[str, ...] = (), names: Mapping[str, str] | None = None) -> list[str]:
    """The label of ``options`` as words, the fields in ``differs`` first (each said, and whole), then the rest.

    Where the flags tell the runs apart, the inductor options are named (``freezing=True``), last, instead of
    counted: a tune's candidates differ by one option alone, and ``1 opt`` reads alike for each.
    ``skip``: fields said elsewhere (the command line writes the workload and its parameters first);
    ``names``: the listing's workload names (:func:`workload_word`).
    """
    fields = [field for field in OPTION_FIELDS if field.key not in skip]
    ordered = ([field for field in fields if field.key in differs]
               + [field for field in fields if field.key not in differs])
    spell = "flags" in differs and any(field.key == "flags" for field in fields) and bool(options.inductor_options)
    words = [field.word(_label_value(field, options, names, spell), field.key in differs) for field in ordered]
    return [word for word in words if word] + ([inductor_text(options)] if spell else [])


def _label_value(field: OptionField, options: RunOptions, names: Mapping[str, str] | None, spell: bool) -> str:
    """``field``'s value in a label: the workload by the listing's name; the flags less the inductor options where
    ``spell`` names those at the label's end."""
    if field.key == "workload":
        return workload_word(options, names)
    if field.key == "flags" and spell:
        return " ".join(_plain_flags(options))
    return field.value(options)
