"""What the tuner tries: the catalog of knobs (data, in one place) and the candidates made from it.

A :class:`Knob` is a mode, an axis of ``torch.compile`` (``fullgraph``, ``dynamic``) or an inductor
option, with the values to try, a one-line reason and the devices it applies to. A
:class:`Candidate` is the default compile with some knobs set: the screening tries each value
alone (one factor at a time, so each result says what that knob does), and the race may add the
combination of the values that each beat the default (:func:`combine`).

torch refuses a ``mode`` together with ``options``: a candidate holds either, and where both are
wanted (a combination, or an option pinned with ``--option``) its mode becomes the options the
mode stands for (:data:`MODE_OPTIONS`, or the worker torch's own table when the probe read it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tui.engine.options import DEFAULT_MODE, MODES, OptionsError, RunOptions, comma_items

__all__ = ["Knob", "Candidate", "CATALOG", "KNOBS", "SPACE_GROUPS", "MODE_OPTIONS", "SpaceError", "option_keys",
           "parse_space", "candidates", "combine", "distinct", "DEFAULT", "AUTOTUNING", "autotunes", "config_settings"]

MODE, AXIS, OPTION = "mode", "axis", "option"
"""What a knob sets: ``torch.compile``'s ``mode``, one of its other arguments, or an inductor option."""

MODE_OPTIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "reduce-overhead": {"triton.cudagraphs": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True, "coordinate_descent_tuning": True},
    "max-autotune": {"max_autotune": True, "triton.cudagraphs": True, "coordinate_descent_tuning": True},
}
"""The inductor options each mode stands for (torch's ``list_mode_options``), when the probe could not read them."""


class SpaceError(ValueError):
    """``--space`` names something the catalog does not have: one line, what is allowed."""


@dataclass(frozen=True)
class Knob:
    """One thing to try: its name, its values per device kind, why, and on what."""

    name: str
    """``mode``, ``fullgraph``, ``dynamic`` or an inductor option (``triton.cudagraphs``)."""
    kind: str
    values: Mapping[str, tuple[Any, ...]]
    """Device kind (``cpu``, ``cuda``) -> the values tried there; a kind not in it: the knob does not apply."""
    reason: str
    inference_only: bool = False
    """Only for a forward pass (not with ``--train``)."""
    needs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """Options it only means something with (``max_autotune_gemm_backends`` needs ``max_autotune``)."""


_BOTH = ("cpu", "cuda")


def _on(kinds: Sequence[str], *values: Any) -> dict[str, tuple[Any, ...]]:
    return {kind: tuple(values) for kind in kinds}


CATALOG: tuple[Knob, ...] = (
    Knob("mode", MODE, {"cuda": ("reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune"),
                        "cpu": ("max-autotune-no-cudagraphs",)},
         "reduce-overhead replays CUDA graphs (fewer launches: for launch-bound models); max-autotune benchmarks "
         "GEMM/conv templates and tunes kernel configs (a longer compile)"),
    Knob("fullgraph", AXIS, _on(_BOTH, True),
         "one graph or an error: no graph breaks, so no eager code between compiled pieces"),
    Knob("dynamic", AXIS, _on(_BOTH, False),
         "shapes specialised from the first call: no symbolic-shape guards or kernels"),
    Knob("layout_optimization", OPTION, _on(("cuda",), False),
         "inductor turns conv nets to channels-last, which can make cuDNN pick slower convolutions and adds "
         "layout conversions"),
    Knob("freezing", OPTION, _on(_BOTH, True),
         "constant-folds the weights into the graph (inference only): weight layouts and folded ops prepared once",
         inference_only=True),
    Knob("coordinate_descent_tuning", OPTION, _on(("cuda",), True),
         "tunes each Triton kernel's block sizes by coordinate descent (a longer compile)"),
    Knob("epilogue_fusion", OPTION, _on(("cuda",), False),
         "pointwise ops fused into a matmul template's epilogue can be slower than cuBLAS plus a separate kernel"),
    Knob("max_autotune_gemm_backends", OPTION, _on(("cuda",), "ATEN,TRITON"),
         "with max_autotune: which GEMM backends the autotuner may pick (CUTLASS/CK left out)",
         needs={"max_autotune": True}),
    Knob("shape_padding", OPTION, _on(("cuda",), False),
         "padding matmul shapes to aligned sizes costs a copy; off when the copy outweighs the gain"),
    Knob("cpp_wrapper", OPTION, _on(_BOTH, True),
         "the generated code's wrapper in C++ instead of Python: less host time per call for small, "
         "launch-bound graphs (a longer compile)"),
    Knob("cpp.simdlen", OPTION, _on(("cpu",), 256),
         "CPU kernels vectorised at 256 bits rather than the widest ISA found (AVX-512 can lower the clock)"),
    Knob("aggressive_fusion", OPTION, _on(_BOTH, True),
         "fuses nodes that share no reads too: fewer kernels, more work per kernel"),
)
"""Every knob the tuner knows, in the order the screening tries them."""

KNOBS: dict[str, Knob] = {knob.name: knob for knob in CATALOG}

SPACE_GROUPS: dict[str, tuple[str, ...]] = {
    "modes": ("mode",),
    "axes": ("fullgraph", "dynamic"),
    "options": tuple(k.name for k in CATALOG if k.kind == OPTION),
    "all": tuple(KNOBS),
}
"""``--space`` words: a group of knobs; the default is ``all``."""


def option_keys() -> tuple[str, ...]:
    """Every inductor option the catalog names (what the probe asks torch about)."""
    keys = [k.name for k in CATALOG if k.kind == OPTION]
    keys += [key for knob in CATALOG for key in knob.needs]
    keys += [key for options in MODE_OPTIONS.values() for key in options]
    return tuple(dict.fromkeys(keys))


def parse_space(text: str | None) -> tuple[str, ...]:
    """``--space``: a comma list of groups (:data:`SPACE_GROUPS`) and knob names -> knob names, in catalog order
    (None: ``all``; an empty list is refused)."""
    text = "all" if text is None else text
    if not text.replace(",", "").strip():
        raise SpaceError(f"is empty (allowed: a comma list of {', '.join(SPACE_GROUPS)} or knob names)")
    try:
        words = comma_items(text, "space")
    except OptionsError as exc:  # an empty item: the one rule of a flag's comma list
        raise SpaceError(exc.message) from None
    chosen: set[str] = set()
    for word in words:
        if word in SPACE_GROUPS:
            chosen.update(SPACE_GROUPS[word])
        elif word in KNOBS:
            chosen.add(word)
        else:
            raise SpaceError(f"{word!r} is not allowed (allowed: {', '.join(SPACE_GROUPS)}, or "
                             f"{', '.join(KNOBS)})")
    return tuple(name for name in KNOBS if name in chosen)


@dataclass(frozen=True)
class Candidate:
    """The default compile with some knobs set: ``settings`` are (knob, value) pairs, in catalog order."""

    settings: tuple[tuple[str, Any], ...] = ()

    @property
    def name(self) -> str:
        """``default``, or the settings as ``knob=value`` joined by spaces (a mode by its name)."""
        if not self.settings:
            return DEFAULT
        return " ".join(str(value) if knob == "mode" else f"{knob}={value}" for knob, value in self.settings)

    @property
    def is_default(self) -> bool:
        return not self.settings

    def apply(self, base: RunOptions, pinned: Mapping[str, Any] | None = None,
              modes: Mapping[str, Mapping[str, Any]] | None = None) -> RunOptions:
        """``base`` compiled as this candidate says, with ``pinned`` options in it (a mode with options: as options)."""
        settings = dict(self.settings)
        mode = settings.pop("mode", DEFAULT_MODE)
        changes: dict[str, Any] = {axis: settings.pop(axis) for axis in ("fullgraph", "dynamic") if axis in settings}
        options = {**dict(base.inductor_options), **dict(pinned or {})}
        for key, value in settings.items():
            options.update(KNOBS[key].needs if key in KNOBS else {})
            options[key] = value
        if options and mode != DEFAULT_MODE:
            options = {**(modes or MODE_OPTIONS).get(mode, MODE_OPTIONS.get(mode, {})), **options}
            mode = DEFAULT_MODE
        applied = dataclasses.replace(base, mode=mode, inductor_options=options, **changes)
        return dataclasses.replace(applied, cold_compile=True) if autotunes(applied, modes) else applied


def config_settings(options: RunOptions, modes: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The ``torch._inductor.config`` settings of ``options``: its mode's options, then its own (empty: none, and
    the config form would only repeat the call)."""
    settings = dict((modes or MODE_OPTIONS).get(options.mode, MODE_OPTIONS.get(options.mode, {})))
    settings.update(options.inductor_options)
    return settings


AUTOTUNING = ("max_autotune", "max_autotune_gemm", "max_autotune_pointwise")
"""The inductor options under which a compile benchmarks kernel choices and keeps its picks in the compile cache."""


def autotunes(options: RunOptions, modes: Mapping[str, Mapping[str, Any]] | None = None) -> bool:
    """Whether a compile of ``options`` autotunes (a max-autotune mode, or one of :data:`AUTOTUNING` set).

    Such a candidate runs with a cold compile cache (``cold_compile``) in the search: its picks differ from one
    fresh autotuning to the next (docs/BENCHMARKS.md §22), and a warm cache would serve every process of the search
    the first one's picks, so neither the race nor the confirmation would see what another machine's first compile
    may pick, nor pay its compile time."""
    settings = config_settings(options, modes)
    return any(bool(settings.get(key)) for key in AUTOTUNING)


DEFAULT = "default"
"""The name of the default compile's candidate."""


def _applies(knob: Knob, device_kind: str, train: bool) -> bool:
    return device_kind in knob.values and not (knob.inference_only and train)


def candidates(knobs: Iterable[str], device: str, train: bool, defaults: Mapping[str, Any] | None = None,
               missing: Iterable[str] = ()) -> tuple[list[Candidate], list[str]]:
    """The default compile, then each value of each knob alone; and a note for each knob or value left out.

    ``defaults``: the worker torch's value of each option (a value equal to it is the default compile
    already); ``missing``: options that torch does not have.
    """
    kind = "cuda" if device.startswith("cuda") else "cpu"
    lacking, defaults = set(missing), dict(defaults or {})
    found, notes, elsewhere = [Candidate()], [], []
    for name in knobs:
        knob = KNOBS[name]
        if kind not in knob.values:
            elsewhere.append(name)
            continue
        if not _applies(knob, kind, train):
            notes.append(f"{name}: left out (a forward pass only, not --train)")
            continue
        absent = [key for key in (name, *knob.needs) if knob.kind == OPTION and key in lacking]
        if absent:
            notes.append(f"{name}: left out (this torch has no {', '.join(absent)})")
            continue
        for value in knob.values[kind]:
            if knob.kind == OPTION and name in defaults and defaults[name] == value:
                notes.append(f"{name}={value}: left out (this torch's default already)")
                continue
            if knob.kind == MODE and value not in MODES:
                continue
            found.append(Candidate(((name, value),)))
    if elsewhere:
        notes.insert(0, f"left out on {kind} (they apply to {'cuda' if kind == 'cpu' else 'cpu'} only): "
                        f"{', '.join(elsewhere)}")
    return found, notes


def combine(parts: Sequence[Candidate]) -> Candidate | None:
    """One candidate with every setting of ``parts`` (a mode's options merged in); None when two disagree.

    Two modes are combined as their options (:meth:`Candidate.apply` turns a mode into options when
    options are there); a knob set to two different values cannot be combined.
    """
    merged: dict[str, Any] = {}
    modes = []
    for part in parts:
        for knob, value in part.settings:
            if knob == "mode":
                modes.append(value)
                continue
            if knob in merged and merged[knob] != value:
                return None
            merged[knob] = value
    if len(set(modes)) > 1:
        options: dict[str, Any] = {}
        for mode in modes:
            options.update(MODE_OPTIONS.get(mode, {}))
        if any(merged.get(k, v) != v for k, v in options.items()):
            return None
        merged.update(options)
        modes = []
    settings = ([("mode", modes[0])] if modes else []) + [(k, merged[k]) for k in _ordered(merged)]
    return Candidate(tuple(settings))


def _ordered(settings: Mapping[str, Any]) -> list[str]:
    order = {name: index for index, name in enumerate(KNOBS)}
    return sorted(settings, key=lambda k: (order.get(k, len(order)), k))


def distinct(found: Sequence[Candidate], base: RunOptions, pinned: Mapping[str, Any] | None = None,
             modes: Mapping[str, Mapping[str, Any]] | None = None) -> tuple[list[Candidate], list[str]]:
    """``found`` less the candidates that run the same configuration as one before them (an option pinned with
    ``--option`` can make a mode the default compile), each with a note."""
    kept: list[Candidate] = []
    seen: dict[str, str] = {}
    notes = []
    for candidate in found:
        options = candidate.apply(base, pinned, modes)
        key = repr((options.mode, options.fullgraph, options.dynamic, sorted(options.inductor_options.items())))
        if key in seen:
            notes.append(f"{candidate.name}: left out (the same configuration as {seen[key]} with the pinned options)")
            continue
        seen[key] = candidate.name
        kept.append(candidate)
    return kept, notes
