"""The worker's event protocol: one frozen dataclass per event, one JSON line each on a private channel.

The worker duplicates its original stdout into a private file descriptor, then points
fd 1 at stderr, so anything torch, inductor, a compiler or a user's model prints (from Python or
from C) lands in stderr and can never corrupt the event stream. The parent reads the child's
stdout pipe line by line and turns each line into an event with :func:`decode`, which checks
every field once; nothing downstream re-checks a type.

Parent -> worker (one line on the worker's stdin)::

    {"command": "run", "run_id": "...", "options": {RunOptions.to_dict()}}

Worker -> parent: ``{"v": PROTOCOL_VERSION, "event": NAME, "t": seconds since the worker
started, ...fields}``, the fields being those of the event's dataclass below
(:class:`Ready`, :class:`Started`, :class:`PhaseChanged`, :class:`WorkerWarning`,
:class:`Compiled`, :class:`BlockTimed`, :class:`GraphCoded`, :class:`Measured`, :class:`Profiled`,
:class:`ArtifactWritten`, :class:`Finished`, :class:`Failed`). A run with ``options.trace`` gets
``"artifacts_dir"`` in its command too: the run's data folder, where the worker writes the Chrome trace
(:mod:`tui.engine.explain.artifacts`).

A run that ends well sends ``measured`` (everything measured) before its profile pass, which re-compiles and can
take minutes, and ``finished`` (no fields: the worker ended well) after it; a run stopped between the two keeps
its measurement (:mod:`tui.engine.run.kept`).

Version 2 renamed a block's ``wall_ms_per_call`` to ``host_ms_per_call`` (one name for the
host-inclusive time per call, from the worker to the CSV) and typed every payload. Version 3 moved the
results that ``finished`` carried into ``measured``, sent before the profile pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from tui.engine.explain.artifacts import GraphCode
from tui.engine.explain.kernels import Profile
from tui.engine.payloads import Accuracy, Diagnostics, Env, Memory
from tui.typed import FieldError, decode_fields, encode_fields, finite

__all__ = [
    "PROTOCOL_VERSION",
    "PHASES",
    "STAGES",
    "SIDES",
    "FAILURE_KINDS",
    "EVENTS",
    "Event",
    "Ready",
    "Started",
    "PhaseChanged",
    "WorkerWarning",
    "Compiled",
    "BlockTimed",
    "Profiled",
    "GraphCoded",
    "ArtifactWritten",
    "ARTIFACT_KINDS",
    "Measured",
    "Finished",
    "Failed",
    "ProtocolError",
    "encode",
    "decode",
    "make_event",
]

PROTOCOL_VERSION = 3

PHASES = ("building", "compiling", "warming_up", "checking_accuracy", "measuring", "diagnosing")
"""The worker's phases, in the order it runs them."""
STAGES = ("compile", "warmup", "measure")
SIDES = ("eager", "compiled")
FAILURE_KINDS = (
    "bad_options",  # refused before or right after start (unknown backend, dtype the device cannot run)
    "setup_error",  # this machine could not host the run (the GPU's lock file cannot be taken)
    "workload_error",  # a user workload file that cannot be loaded or returns the wrong thing
    "compile_error",  # torch.compile / inductor raised
    "graph_break",  # fullgraph=True and the workload breaks the graph
    "out_of_memory",  # CUDA or host allocation failed
    "runtime_error",  # the workload itself raised while running
    "crash",  # the worker died (signal, nonzero exit) without saying why
    "timeout",  # the per-run timeout ended it
    "cancelled",  # the user cancelled it
)


class ProtocolError(ValueError):
    """A line from the worker is not a valid event."""


@dataclass(frozen=True)
class Event:
    """Every event's header: ``t``, seconds since the worker started."""

    NAME: ClassVar[str] = ""
    t: float = 0.0

    def check(self) -> None:
        """Raise FieldError when a field's value is outside what the protocol allows."""

    def to_json(self) -> dict[str, Any]:
        """The event as a JSON-ready dict, with the protocol header."""
        return {"v": PROTOCOL_VERSION, "event": self.NAME, **encode_fields(self)}


@dataclass(frozen=True)
class Ready(Event):
    """The worker imported torch and waits for its command."""

    NAME: ClassVar[str] = "ready"
    pid: int | None = None
    python: str | None = None
    python_version: str | None = None
    torch: str | None = None


@dataclass(frozen=True)
class Started(Event):
    """The worker read its command and prepared the device."""

    NAME: ClassVar[str] = "started"
    run_id: str | None = None
    env: Env = field(default_factory=Env)
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PhaseChanged(Event):
    """A phase (one of :data:`PHASES`) began."""

    NAME: ClassVar[str] = "phase"
    phase: str = PHASES[0]

    def check(self) -> None:
        _one_of("phase", self.phase, PHASES)


@dataclass(frozen=True)
class WorkerWarning(Event):
    """A one-line warning; ``source`` is ``worker`` or ``runner`` (the parent's own notices)."""

    NAME: ClassVar[str] = "warning"
    message: str = ""
    source: str = "worker"


@dataclass(frozen=True)
class Compiled(Event):
    """The first compiled call returned: its time (``compile_s``) and what dynamo saw."""

    NAME: ClassVar[str] = "compiled"
    compile_s: float | None = None
    diagnostics: Diagnostics = field(default_factory=Diagnostics)


@dataclass(frozen=True)
class BlockTimed(Event):
    """One timing block of one side.

    ``ms``: per-call times of the block's clock (``clock``, a :mod:`tui.engine.measure.clocks` name);
    ``host_ms_per_call``: the block's host-inclusive time per call; ``labels``: one input label
    per call (dynamic shapes), or None. ``t_start`` / ``t_end``: when the block's timed calls ran,
    in the worker's ``time.monotonic()`` seconds (on Linux the same clock as the parent's): on a
    GPU the device loop's start and end on the GPU (its events, anchored to one event per round,
    so the two sides' spans never overlap), on the CPU around the calls. The parent matches
    telemetry samples to each side's blocks with them; None when the worker did not say.
    """

    NAME: ClassVar[str] = "block"
    side: str = "eager"
    stage: str = "measure"
    index: int = 0
    clock: str = ""
    ms: tuple[float | None, ...] = ()
    host_ms_per_call: float | None = None
    labels: tuple[str, ...] | None = None
    l2_flush: bool = False
    t_start: float | None = None
    t_end: float | None = None

    def check(self) -> None:
        _one_of("side", self.side, SIDES)
        _one_of("stage", self.stage, STAGES)
        if self.labels is not None and len(self.labels) != len(self.ms):
            raise FieldError(f"labels: {len(self.labels)} labels for {len(self.ms)} times")


@dataclass(frozen=True)
class Profiled(Event):
    """The profile pass ran after ``measured`` (or was skipped, or failed: ``profile.why``; or the run's timeout or a
    cancel stopped it, and the runner says so with this event)."""

    NAME: ClassVar[str] = "profiled"
    profile: Profile = field(default_factory=Profile)


@dataclass(frozen=True)
class GraphCoded(Event):
    """Inductor's output code of one graph compiled during the run (sent once measuring has ended)."""

    NAME: ClassVar[str] = "code"
    graph: GraphCode = field(default_factory=GraphCode)


ARTIFACT_KINDS = ("trace", "torch_trace")
"""What a worker wrote into the run's data folder: ``trace``, the profile pass as a Chrome trace;
``torch_trace``, the directory torch's structured logs went to (TORCH_TRACE)."""


@dataclass(frozen=True)
class ArtifactWritten(Event):
    """The worker wrote ``name`` (``size_bytes`` long) into the run's data folder; ``kind`` says what it is."""

    NAME: ClassVar[str] = "artifact"
    kind: str = ARTIFACT_KINDS[0]
    name: str = ""
    size_bytes: int = 0

    def check(self) -> None:
        _one_of("kind", self.kind, ARTIFACT_KINDS)


@dataclass(frozen=True)
class Measured(Event):
    """The measurement is complete: what the run measured besides its timing blocks, sent before the profile pass
    (which re-compiles, and can take minutes with max-autotune).

    From here the run's results are whole: a run stopped later (its timeout, a cancel, in the profile pass)
    keeps them (:mod:`tui.engine.run.kept`).
    """

    NAME: ClassVar[str] = "measured"
    compile_s: float | None = None
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    accuracy: Accuracy = field(default_factory=Accuracy)
    memory: Memory = field(default_factory=Memory)
    flops_per_call: float | None = None
    bytes_per_call: float | None = None
    warnings: tuple[str, ...] = ()
    iters: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Finished(Event):
    """The worker ended well: after ``measured``, its profile pass (``profiled``) and what it wrote were sent."""

    NAME: ClassVar[str] = "finished"


@dataclass(frozen=True)
class Failed(Event):
    """The run failed: ``kind`` (one of :data:`FAILURE_KINDS`), a one-line message, the full detail."""

    NAME: ClassVar[str] = "failed"
    kind: str = "crash"
    message: str = ""
    detail: str = ""

    def check(self) -> None:
        _one_of("kind", self.kind, FAILURE_KINDS)


_EVENT_TYPES: dict[str, type[Event]] = {
    cls.NAME: cls for cls in (Ready, Started, PhaseChanged, WorkerWarning, Compiled, BlockTimed, Profiled, GraphCoded,
                              ArtifactWritten, Measured, Finished, Failed)
}
EVENTS = tuple(_EVENT_TYPES)
_FIELDS = {cls: {f.name for f in fields(cls)} for cls in _EVENT_TYPES.values()}


def _one_of(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise FieldError(f"{name}: {value!r} is not one of {', '.join(allowed)}")


def make_event(event: str, t: float = 0.0, **fields: Any) -> Event:
    """Build the typed event ``event`` from JSON-style fields, checked like a decoded line.

    ValueError (a :class:`ProtocolError`) for an unknown event or a field that does not fit.
    """
    cls = _EVENT_TYPES.get(event)
    if cls is None:
        raise ProtocolError(f"unknown event {event!r}")
    return _build(cls, {"t": t, **fields})


def _build(cls: type[Event], data: dict[str, Any]) -> Event:
    unknown = sorted(set(data) - _FIELDS[cls] - {"v", "event"})
    if unknown:
        raise ProtocolError(f"bad {cls.NAME} event: unknown field(s) {', '.join(unknown)}")
    try:
        result, problems = decode_fields(cls, data, where=cls.NAME)
        if problems:
            raise FieldError("; ".join(problems))
        result.check()
    except FieldError as exc:
        raise ProtocolError(f"bad {cls.NAME} event: {exc}") from None
    return result


def encode(event: Event) -> bytes:
    """One event as a JSON line (non-finite floats become null)."""
    return (json.dumps(finite(event.to_json()), separators=(",", ":")) + "\n").encode()


def decode(line: bytes | str) -> Event:
    """Parse and check one line into its typed event, or raise :class:`ProtocolError`."""
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"not JSON: {line[:120]!r}") from exc
    if not isinstance(data, dict) or data.get("event") not in _EVENT_TYPES:
        raise ProtocolError(f"not an event: {line[:120]!r}")
    if data.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {data.get('v')!r}, expected {PROTOCOL_VERSION}")
    return _build(_EVENT_TYPES[data["event"]], data)
