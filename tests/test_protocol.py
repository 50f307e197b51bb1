"""tui.engine.protocol v3: one frozen dataclass per event, checked once where a line is decoded."""

from __future__ import annotations

import dataclasses
import json
import math
import typing

import pytest

from fakes.records import base_type, full_instance, unset_fields
from tui.engine import protocol
from tui.engine.protocol import (
    EVENTS,
    FAILURE_KINDS,
    PHASES,
    PROTOCOL_VERSION,
    SIDES,
    STAGES,
    BlockTimed,
    Event,
    Failed,
    PhaseChanged,
    ARTIFACT_KINDS,
    ArtifactWritten,
    ProtocolError,
    WorkerWarning,
    decode,
    encode,
    make_event,
)

EVENT_TYPES = [v for v in vars(protocol).values() if isinstance(v, type) and issubclass(v, Event) and v is not Event]

# Fields whose values come from a fixed set (or must agree with another field).
FIXED = {
    PhaseChanged: {"phase": PHASES[-1]},
    WorkerWarning: {"source": "runner"},
    BlockTimed: {"side": SIDES[-1], "stage": STAGES[0], "ms": (1.5, 2.25), "labels": ("batch=8", "batch=16")},
    Failed: {"kind": FAILURE_KINDS[-1]},
    ArtifactWritten: {"kind": ARTIFACT_KINDS[-1]},
}


def _full(cls: type[Event]) -> Event:
    return full_instance(cls, 3, **FIXED.get(cls, {}))


def test_every_event_name_has_one_dataclass():
    assert sorted(cls.NAME for cls in EVENT_TYPES) == sorted(EVENTS)
    assert all(dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen for cls in EVENT_TYPES)


@pytest.mark.parametrize("cls", EVENT_TYPES, ids=lambda c: c.NAME)
def test_every_event_round_trips_encode_decode_equal(cls):
    event = _full(cls)
    assert unset_fields(event) == []  # every field (a later one too) carries a value of its own
    line = encode(event)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    data = json.loads(line)
    assert (data["v"], data["event"]) == (PROTOCOL_VERSION, cls.NAME)
    assert decode(line) == event
    assert decode(line.decode()) == event
    fields = {k: v for k, v in data.items() if k not in ("v", "event", "t")}
    assert make_event(cls.NAME, data["t"], **fields) == event  # the worker's and the tests' builder agree


def test_a_non_finite_time_travels_as_null():
    event = make_event("block", 1.0, side="eager", stage="measure", index=0, clock="perf_counter",
                       ms=[1.0, math.nan, math.inf], host_ms_per_call=math.nan)  # fmt: skip
    assert event.ms == (1.0, None, None) and event.host_ms_per_call is None
    assert decode(encode(event)) == event
    assert b"NaN" not in encode(event) and b"Infinity" not in encode(event)


def _wrong(hint: typing.Any) -> typing.Any:
    return 12 if base_type(hint) is str else "wrong"


FIELD_CASES = [
    (cls, spec.name)
    for cls in EVENT_TYPES
    for spec in dataclasses.fields(cls)
]


@pytest.mark.parametrize(("cls", "name"), FIELD_CASES, ids=[f"{c.NAME}.{n}" for c, n in FIELD_CASES])
def test_a_field_of_the_wrong_type_is_a_protocol_error_naming_it(cls, name):
    data = _full(cls).to_json()
    data[name] = _wrong(typing.get_type_hints(cls)[name])
    with pytest.raises(ProtocolError, match=rf"bad {cls.NAME} event: {cls.NAME}\.{name}: expected "):
        decode(json.dumps(data))
    fields = {k: v for k, v in data.items() if k not in ("v", "event", "t")}
    with pytest.raises(ProtocolError, match=rf"{cls.NAME}\.{name}: expected "):
        make_event(cls.NAME, data["t"], **fields)


def test_a_wrong_field_inside_a_payload_is_named_by_its_path():
    with pytest.raises(ProtocolError, match=r"bad started event: started\.env\.gpu_memory_mb: expected int, got str"):
        make_event("started", 0.0, env={"torch": "2.13.0", "gpu_memory_mb": "lots"})
    line = json.dumps({"v": PROTOCOL_VERSION, "event": "measured", "t": 1.0, "diagnostics": {"graph_breaks": "x"}})
    with pytest.raises(ProtocolError, match=r"measured\.diagnostics\.graph_breaks: expected int, got str"):
        decode(line)
    with pytest.raises(ProtocolError, match=r"compiled\.diagnostics\.compile_times_s\.inductor: expected float"):
        make_event("compiled", 0.0, diagnostics={"compile_times_s": {"inductor": [1]}})


def test_an_unknown_field_is_a_protocol_error_naming_it():
    with pytest.raises(ProtocolError, match=r"bad block event: unknown field\(s\) wall_ms_per_call"):
        make_event("block", 0.0, side="eager", stage="measure", index=0, clock="x", ms=[1.0], wall_ms_per_call=1.0)
    line = json.dumps({"v": PROTOCOL_VERSION, "event": "phase", "t": 0, "phase": "measuring", "extra": 1, "also": 2})
    with pytest.raises(ProtocolError, match=r"bad phase event: unknown field\(s\) also, extra"):
        decode(line)


@pytest.mark.parametrize(
    ("event", "fields", "message"),
    [
        ("phase", {"phase": "levitating"}, r"phase: 'levitating' is not one of building, compiling"),
        ("block", {"side": "sideways", "ms": [1.0]}, r"side: 'sideways' is not one of eager, compiled"),
        ("block", {"stage": "cooldown", "ms": [1.0]}, r"stage: 'cooldown' is not one of compile, warmup, measure"),
        ("failed", {"kind": "gremlins"}, r"kind: 'gremlins' is not one of bad_options, "),
        ("block", {"ms": [1.0, 2.0], "labels": ["a"]}, r"labels: 1 labels for 2 times"),
    ],
)
def test_a_value_outside_the_protocol_is_a_protocol_error_naming_the_field(event, fields, message):
    with pytest.raises(ProtocolError, match=rf"bad {event} event: {message}"):
        make_event(event, 0.0, **fields)
    with pytest.raises(ProtocolError, match=message):
        decode(json.dumps({"v": PROTOCOL_VERSION, "event": event, "t": 0.0, **fields}))


@pytest.mark.parametrize("version", [2, 4, None, "3"])
def test_a_wrong_protocol_version_is_a_protocol_error(version):
    data = {"event": "phase", "t": 0.0, "phase": "measuring"}
    if version is not None:
        data["v"] = version
    with pytest.raises(ProtocolError, match=rf"protocol version {version!r}, expected {PROTOCOL_VERSION}"):
        decode(json.dumps(data))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"{not json", r"not JSON: b'\{not json'"),
        (b"\xff\xfe\x00", r"not JSON"),
        ("", r"not JSON"),
        (b"[1, 2]", r"not an event"),
        (b'"ready"', r"not an event"),
        (json.dumps({"v": PROTOCOL_VERSION, "event": "mystery", "t": 0}), r"not an event"),
        (json.dumps({"v": PROTOCOL_VERSION, "t": 0}), r"not an event"),
    ],
)
def test_a_line_that_is_not_an_event_is_a_protocol_error(line, message):
    with pytest.raises(ProtocolError, match=message):
        decode(line)


def test_make_event_refuses_an_unknown_event():
    with pytest.raises(ProtocolError, match=r"unknown event 'mystery'"):
        make_event("mystery", 0.0)


def test_events_are_frozen():
    event = make_event("phase", 0.0, phase="measuring")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.phase = "building"  # type: ignore[misc]
    assert dataclasses.replace(event, phase="building").phase == "building"
