"""Which runs of BASE and NEW measure the same configuration: the match key, pairs and unmatched rows.

A run's key is the value of each of :data:`MATCH_FIELDS` (:func:`field_values`): what it ran
(workload, parameters, compile settings, dtype, precision, device kind, flags that change the numbers)
and where (torch version, GPU name). Settings that change how long or how it was measured, not what
(iters, warm-up, block size, seed, time budget, noise limits, profile, traces, timeout), are not
in it. ``mode`` is normalised: a backend that ignores it (all but inductor) reads as the default
mode, and its inductor options as none, so ``--ignore backend`` pairs inductor's default mode with
``--backend eager``.

Where a run ran is its GPU's kind, never its place: ``device`` is the device kind (``cpu``,
``cuda``), so ``cuda:0`` and ``cuda:3`` of one box, or a GPU picked by ``CUDA_VISIBLE_DEVICES``,
are one configuration, and a multi-GPU sweep's runs of a configuration are processes of it, however
its lanes spread them. Which kind of GPU is ``gpu_name``'s job (``--ignore gpu_name`` pairs an H100's
run with an H200's); the GPU's UUID and the node (hostname) are not in the key, so the same
configuration on two GPUs or two nodes of one kind is one configuration (``compare --across``
sets kinds or nodes side by side: :mod:`~tui.engine.compare.across`).

Every run of a side with one key is that side of the pair: the K processes of one ``--repeat``
group and separate runs of the configuration alike (a configuration run again is another process
of it). A key on one side only is an :class:`Unmatched` row, with a hint naming the fields in which
the nearest key of the other side differs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tui.engine.options import DEFAULT_MODE, DEFAULT_PRECISION, SHORT_DTYPES, key_value_words, mode_applies
from tui.engine.store.results import RunRecord
from tui.typed import printable

__all__ = ["MATCH_FIELDS", "ConfigKey", "Pair", "Unmatched", "field_values", "config_key", "pair_up", "check_ignore"]

MATCH_FIELDS = (
    "workload", "params", "backend", "mode", "inductor_options", "fullgraph", "dynamic", "dtype", "precision", "device",
    "train", "compile_optimizer", "l2_flush", "cold_compile", "torch_version", "gpu_name",
)  # fmt: skip
"""The fields two runs must share to be compared (``--ignore`` drops some of them)."""

_UNSAID = {"mode": DEFAULT_MODE, "precision": DEFAULT_PRECISION}
"""Fields a key's label leaves out at these values (as it leaves out false flags)."""
_HINT_FIELDS = 2
"""An unmatched row names the other side's nearest key when it differs in at most this many fields."""


def _text(value: object) -> str:
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str) if value else ""
    if isinstance(value, bool):
        return str(value).lower()
    return "" if value is None else str(value)


def field_values(record: RunRecord) -> dict[str, str]:
    """Every match field of a run as text, normalised (see the module docstring)."""
    o = record.options
    applies = mode_applies(o.backend)
    return {
        "workload": o.workload,
        "params": " ".join(f"{k}={_text(v)}" for k, v in sorted(o.params.items())),
        "backend": o.backend,
        "mode": o.mode if applies else DEFAULT_MODE,
        "inductor_options": _text(o.inductor_options if applies else {}),
        "fullgraph": _text(o.fullgraph),
        "dynamic": o.dynamic_label,
        "dtype": o.dtype,
        "precision": o.precision,
        "device": "cuda" if o.device.startswith("cuda") else o.device,
        "train": _text(o.train),
        "compile_optimizer": _text(o.compile_optimizer),
        "l2_flush": _text(o.l2_flush),
        "cold_compile": _text(o.cold_compile),
        "torch_version": record.env.torch or "",
        "gpu_name": record.env.gpu_name or "",
    }


def check_ignore(names: Iterable[str]) -> tuple[str, ...]:
    """``--ignore``'s field names, checked (ValueError naming the first unknown one and what is allowed)."""
    names = tuple(dict.fromkeys(n.strip() for n in names if n.strip()))
    for name in names:
        if name not in MATCH_FIELDS:
            shown = printable(name)[:40]
            raise ValueError(f"{shown!r} is not a match field (allowed: {', '.join(MATCH_FIELDS)})")
    return names


@dataclass(frozen=True)
class ConfigKey:
    """What a pair's runs share: ``(field, value)`` for each match field not ignored, in :data:`MATCH_FIELDS` order."""

    fields: tuple[tuple[str, str], ...]

    def value(self, name: str) -> str | None:
        """The field's value, None when the field is ignored."""
        return next((value for key, value in self.fields if key == name), None)

    def label(self, skip: Iterable[str] = ()) -> str:
        """``pointwise n=512 inductor dyn=auto fp32 cpu torch 2.13.0``: the fields that are said, in order.

        ``skip``: fields said elsewhere (those every row of a table shares).
        """
        words, skip = [], set(skip)
        for name, value in self.fields:
            if name in skip or not value or _UNSAID.get(name) == value:
                continue
            if name == "dynamic":
                words.append(f"dyn={value}")
            elif value == "false":
                continue
            elif value == "true":
                words.append(name.replace("_", "-"))
            elif name == "torch_version":
                words.append(f"torch {value}")
            elif name == "inductor_options":
                words.append(_options_words(value))
            elif name == "dtype":
                words.append(SHORT_DTYPES.get(value, value))
            else:
                words.append(value)
        return printable(" ".join(words))


def _options_words(text: str) -> str:
    """The key's inductor options (sorted JSON) as the run table says them (:func:`key_value_words`)."""
    try:
        options = json.loads(text)
    except ValueError:
        return text
    return key_value_words(options) if isinstance(options, dict) else text


def config_key(record: RunRecord, ignore: Sequence[str] = ()) -> ConfigKey:
    """The run's :class:`ConfigKey` with the ``ignore`` fields left out."""
    values = field_values(record)
    return ConfigKey(tuple((name, values[name]) for name in MATCH_FIELDS if name not in ignore))


@dataclass(frozen=True)
class Pair:
    """One configuration measured on both sides: every run of each side with the key."""

    key: ConfigKey
    base: tuple[RunRecord, ...]
    new: tuple[RunRecord, ...]
    differences: tuple[str, ...] = ()
    """The ignored fields whose values are not one and the same on both sides: ``backend: inductor -> eager``."""
    names: tuple[str, str] = ("BASE", "NEW")
    """What the sides are called in notes and noise reasons (``compare --across``: the two kinds)."""


@dataclass(frozen=True)
class Unmatched:
    """A configuration on one side only (``side``: ``base`` or ``new``), listed rather than dropped."""

    key: ConfigKey
    side: str
    records: tuple[RunRecord, ...]
    hint: str = ""
    """How the nearest configuration of the other side differs: ``NEW has torch_version 2.13.0``."""


def _by_key(records: Iterable[RunRecord], ignore: Sequence[str]) -> dict[ConfigKey, list[RunRecord]]:
    groups: dict[ConfigKey, list[RunRecord]] = {}
    for record in records:
        groups.setdefault(config_key(record, ignore), []).append(record)
    return groups


NO_VALUE = "none"
"""How a hint or a pair's note shows a field without a value (a user file run with its factory's defaults has no
params)."""


def _values_text(records: Sequence[RunRecord], name: str) -> str:
    values = list(dict.fromkeys(field_values(r)[name] or NO_VALUE for r in records))
    return values[0] if len(values) == 1 else "{" + ", ".join(values) + "}"


def _differences(base: Sequence[RunRecord], new: Sequence[RunRecord], ignore: Sequence[str]) -> tuple[str, ...]:
    found = []
    for name in ignore:
        before, after = _values_text(base, name), _values_text(new, name)
        if before != after or before.startswith("{"):
            found.append(printable(f"{name}: {before} -> {after}"))
    return tuple(found)


def _hint(key: ConfigKey, others: Iterable[ConfigKey], other_side: str) -> str:
    best: list[tuple[str, str]] | None = None
    for other in others:
        differ = [
            (name, value) for (name, value), (_, mine) in zip(other.fields, key.fields, strict=False) if value != mine
        ]
        if len(differ) > 1 and any(name == "workload" for name, _ in differ):
            continue  # another workload with other settings too is another model: only a moved file is worth pairing
        if best is None or len(differ) < len(best):
            best = differ
    if not best or len(best) > _HINT_FIELDS:
        return ""
    said = ", ".join(f"{name} {value or NO_VALUE}" for name, value in best)
    return printable(f"{other_side} has it with {said} (--ignore {','.join(name for name, _ in best)})")


def pair_up(base: Iterable[RunRecord], new: Iterable[RunRecord], ignore: Sequence[str] = (),
            names: tuple[str, str] = ("BASE", "NEW")) -> tuple[list[Pair], list[Unmatched]]:
    """Pairs in BASE's order of first appearance, then the rows of BASE only and of NEW only.

    ``names``: what the sides are called in the pairs' notes and the unmatched rows' hints.
    """
    base_groups, new_groups = _by_key(base, ignore), _by_key(new, ignore)
    pairs = [Pair(key, tuple(runs), tuple(new_groups[key]), _differences(runs, new_groups[key], ignore), names)
             for key, runs in base_groups.items() if key in new_groups]  # fmt: skip
    unmatched = [Unmatched(key, "base", tuple(runs), _hint(key, [k for k in new_groups if k not in base_groups],
                                                           names[1]))
                 for key, runs in base_groups.items() if key not in new_groups]  # fmt: skip
    unmatched += [Unmatched(key, "new", tuple(runs), _hint(key, [k for k in base_groups if k not in new_groups],
                                                           names[0]))
                  for key, runs in new_groups.items() if key not in base_groups]  # fmt: skip
    return pairs, unmatched
