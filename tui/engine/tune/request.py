"""What a tune is asked, checked once, and the candidates it races: for every front end (CLI, app).

:func:`check_request` turns the search's own settings as the user typed them (the budget, the
space, the objective, the calls, the memory limit) into a :class:`TuneRequest`, or an
:class:`~tui.engine.options.OptionsError` naming the field and what it allows (one line).
:func:`plan_search` asks the worker's torch which catalog options it has (a subprocess: blocking,
so a front end calls it off its event loop), or takes what a cluster's node said
(:func:`tui.engine.tune.probe.ask_torch`), and returns the candidates, the notes to show and the
modes' options, as :class:`SearchPlan`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tui.engine.options import OptionsError, RunOptions
from tui.engine.runner.torch_probe import no_cuda
from tui.engine.tune import probe as probe_module
from tui.engine.tune.objective import OBJECTIVES, Objective
from tui.engine.tune.space import Candidate, SpaceError, candidates, distinct, option_keys, parse_space

__all__ = ["BUDGET_MAX_S", "CALLS_MAX", "MEMORY_MAX_GB", "DEFAULT_BUDGET", "TuneRequest", "SearchPlan",
           "parse_budget", "parse_calls", "parse_memory", "check_request", "plan_search", "nothing_to_try",
           "device_refused", "pinned_note", "probe_keys", "pinned_refused", "plan_refused", "DEVICE", "PINNED",
           "SPACE"]

BUDGET_MAX_S = 86_400.0
DEFAULT_BUDGET = "10m"
MEMORY_MAX_GB = 1_000_000.0
CALLS_MAX = 10**12
_BUDGET_ALLOWED = "a duration above 0 and at most 1 day: seconds, or a number with s, m or h (90s, 10m, 1h)"
_BUDGET_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([smh]?)\s*$")


def parse_budget(text: str) -> float:
    """The budget: seconds (``90``, ``90s``), minutes (``10m``) or hours (``1h``); OptionsError otherwise."""
    match = _BUDGET_RE.match(text or "")
    if not match:
        raise OptionsError("budget", f"{text!r} is not allowed (allowed: {_BUDGET_ALLOWED})")
    seconds = float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]
    if not 0 < seconds <= BUDGET_MAX_S:
        raise OptionsError("budget", f"{text!r} is not allowed (allowed: {_BUDGET_ALLOWED})")
    return seconds


def parse_calls(value: int | str | None) -> int | None:
    """The calls a job makes (an integer from 1 to :data:`CALLS_MAX`; empty text: None); OptionsError otherwise."""
    return _parsed(value, int, lambda calls: 1 <= calls <= CALLS_MAX, "calls",
                   f"an integer from 1 to {CALLS_MAX}")


def parse_memory(value: float | str | None) -> float | None:
    """A peak-memory limit in GB (a number above 0 and at most :data:`MEMORY_MAX_GB`; empty text: None);
    OptionsError otherwise."""
    return _parsed(value, float, lambda gb: 0 < gb <= MEMORY_MAX_GB, "max_memory",  # NaN fails it
                   f"a number of GB above 0 and at most {MEMORY_MAX_GB:g}")


def _parsed(value: Any, convert: Callable[[Any], Any], fits: Callable[[Any], bool], field: str, allowed: str) -> Any:
    """``value`` as typed (text is stripped first) converted and in range; None for no value or empty text;
    OptionsError naming ``field`` and what is ``allowed`` otherwise."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = convert(value.strip() if isinstance(value, str) else value)
    except ValueError:
        number = None
    if number is None or not fits(number):
        raise OptionsError(field, f"{str(value).strip()} is not allowed (allowed: {allowed})")
    return number


@dataclass(frozen=True)
class TuneRequest:
    """The search's own settings, checked: the objective, the knobs tried and the budget in seconds."""

    objective: Objective = field(default_factory=Objective)
    knobs: tuple[str, ...] = ()
    budget_s: float = 600.0


def check_request(objective: str = "device", calls: int | str | None = None,
                  max_memory: float | str | None = None, space: str | None = None,
                  budget: str = DEFAULT_BUDGET) -> TuneRequest:
    """The settings as typed, checked in the app's dialog's order, top to bottom (budget, space, objective, calls;
    then the memory limit): the first bad field is the OptionsError's, the one the dialog marks."""
    seconds = parse_budget(budget)
    try:
        knobs = parse_space(space)
    except SpaceError as exc:
        raise OptionsError("space", str(exc)) from None
    if objective not in OBJECTIVES:
        raise OptionsError("objective", f"{objective!r} is not allowed (allowed: {', '.join(OBJECTIVES)})")
    count = parse_calls(calls)
    memory = parse_memory(max_memory)
    return TuneRequest(Objective(objective, count, memory), knobs, seconds)


@dataclass(frozen=True)
class SearchPlan:
    """The candidates to race (the default compile first), what to tell the user, and torch's modes' options."""

    candidates: tuple[Candidate, ...]
    notes: tuple[str, ...] = ()
    modes: Mapping[str, Mapping[str, Any]] | None = None
    torch: str | None = None
    """The version of the torch that was asked (None when it could not be)."""
    asked: str = probe_module.THIS_MACHINE
    """Whose torch was asked, in words (:attr:`~tui.engine.runner.torch_probe.TorchOptions.asked`)."""
    fallback: bool = False
    """The runs run on a cluster whose torch could not be asked: this machine's was (a note says why)."""
    cuda: bool | None = None
    """Whether the torch asked can use a CUDA device (None: it did not say)."""
    unknown_pinned: tuple[str, ...] = ()
    """The pinned options (``--option``) that the torch asked does not have: every run would fail on them."""
    known: tuple[str, ...] = ()
    """The catalog's options that the torch asked has (the names a misspelt pinned option is matched against)."""


def probe_keys(base: RunOptions) -> tuple[str, ...]:
    """What the probe asks torch about: the catalog's options, and the pinned ones (``--option``), so that one
    torch lacks is refused before any run (:func:`pinned_refused`)."""
    return tuple(dict.fromkeys([*option_keys(), *base.inductor_options]))


def plan_search(base: RunOptions, knobs: tuple[str, ...],
                found: probe_module.TorchOptions | None = None) -> SearchPlan:
    """The distinct candidates on ``base``, from what torch said about the catalog: ``found``, when it was asked
    already (:func:`~tui.engine.tune.probe.ask_torch`: a cluster's node), else this machine's worker's torch is
    asked here (blocking: a subprocess)."""
    if found is None:
        found = probe_module.probe_torch(probe_keys(base), base.python)
    cands, notes = candidates(knobs, base.device, base.train, found.defaults, found.missing)
    cands, same = distinct(cands, base, base.inductor_options, found.modes or None)
    notes = [*notes, *same]
    pinned = pinned_note(base.inductor_options)
    if pinned:
        notes.append(pinned)
    if found.problem:
        notes.insert(0, f"{found.problem}: the catalog is tried as it is")
    if found.fallback:
        notes.insert(0, found.fallback)
    unknown = tuple(key for key in base.inductor_options if key in found.missing)
    return SearchPlan(tuple(cands), tuple(notes), found.modes or None, found.torch, found.asked, bool(found.fallback),
                      found.cuda, unknown, tuple(found.defaults))


def pinned_note(pinned: Mapping[str, Any]) -> str | None:
    """What the pinned options (``--option``; the app: the picker's) mean for the answer: every candidate has them,
    the default compile too, so "the default compile" in the answer is torch.compile with them; None when none is."""
    if not pinned:
        return None
    settings = ", ".join(f"{key}={value}" for key, value in sorted(pinned.items()))
    return (f"pinned in every candidate, the default compile's included: {settings}; \"the default compile\" below "
            "is torch.compile with them")


def device_refused(plan: SearchPlan, device: str) -> str | None:
    """Why the runs' torch cannot run ``device`` (a ``cuda`` device where that torch has no CUDA: a CPU build),
    in one line that a front end puts after the device's name (``--device: ...``); else None. Every candidate's
    run would fail as the default compile's does, so the search is refused before it starts any."""
    if not device.startswith("cuda") or plan.cuda is not False:
        return None
    return no_cuda(device, plan.torch, plan.asked)


def pinned_refused(plan: SearchPlan) -> str | None:
    """Why the pinned options cannot run (one the torch asked does not have: every run, the default compile's
    included, would fail on it), in one line that a front end puts after the field's name, with the nearest name
    that torch has; else None, and None where the runs run on a cluster whose torch could not be asked
    (:attr:`SearchPlan.fallback`: this machine's torch says nothing of the nodes')."""
    if not plan.unknown_pinned or plan.fallback:
        return None
    key = plan.unknown_pinned[0]
    near = difflib.get_close_matches(key, [name for name in plan.known if name != key], n=1)
    hint = f"did you mean {near[0]}?" if near else "see torch._inductor.list_options()"
    return f"{key!r} is not an inductor option of {plan.asked} ({hint})"


def nothing_to_try(plan: SearchPlan) -> str | None:
    """Why ``plan`` races nothing (the default compile is its only candidate: every knob of the space was left out
    for the device, the worker's torch or the pinned options, as its notes say), else None. A search of the
    default compile alone would end in "no configuration beats the default compile", having compared nothing."""
    if any(not candidate.is_default for candidate in plan.candidates):
        return None
    return ("nothing to race against the default compile: every knob of the space was left out (the notes say "
            "why); widen the space or pin fewer options")


DEVICE, PINNED, SPACE = "device", "inductor_options", "space"
"""What :func:`plan_refused` names as at fault: the device, the pinned options, the space."""


def plan_refused(plan: SearchPlan, device: str) -> tuple[str, str] | None:
    """Why the search cannot start, as (what is at fault: :data:`DEVICE`, :data:`PINNED` or :data:`SPACE`, one
    line), the first of :func:`device_refused`, :func:`pinned_refused` and :func:`nothing_to_try`; None when it
    can. Both front ends refuse so before any run; for the first two they say the reason alone, without the plan's
    notes (every run would fail), for the last after them (the notes say why the space is empty)."""
    for fault, reason in ((DEVICE, device_refused(plan, device)), (PINNED, pinned_refused(plan)),
                          (SPACE, nothing_to_try(plan))):
        if reason is not None:
            return fault, reason
    return None
