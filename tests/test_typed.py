"""tui.typed: JSON objects into frozen dataclasses, every field checked once."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from tui.typed import FieldError, JsonRecord, decode_fields, encode_fields, finite


@dataclass(frozen=True)
class Inner(JsonRecord):
    size: int | None = None
    name: str = "inner"


@dataclass(frozen=True)
class Plain:
    """Not a JsonRecord: decoded through its own from_json."""

    x: float = 0.0

    @classmethod
    def from_json(cls, data: Any) -> Plain:
        return decode_fields(cls, data)[0]

    def to_json(self) -> dict[str, Any]:
        return {"x": self.x}


@dataclass(frozen=True)
class Every(JsonRecord):
    count: int = 0
    ratio: float = 1.0
    name: str = "n"
    flag: bool = False
    maybe_count: int | None = None
    maybe_ratio: float | None = None
    maybe_name: str | None = None
    maybe_flag: bool | None = None
    names: tuple[str, ...] = ()
    times: tuple[float | None, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    free: dict[str, Any] = field(default_factory=dict)
    inner: Inner = field(default_factory=Inner)
    maybe_inner: Inner | None = None
    inners: dict[str, Inner] = field(default_factory=dict)
    plain: Plain = field(default_factory=Plain)
    anything: Any = None


@dataclass(frozen=True)
class Required(JsonRecord):
    n: int
    label: str = ""


GOOD = {
    "count": 3,
    "ratio": 2.5,
    "name": "x",
    "flag": True,
    "maybe_count": None,
    "maybe_ratio": 4,
    "maybe_name": "y",
    "maybe_flag": False,
    "names": ["a", "b"],
    "times": [1.5, None, 2],
    "counts": {"a": 1, "b": 2},
    "free": {"nested": {"list": [1, "two", None]}},
    "inner": {"size": 7, "name": "i"},
    "maybe_inner": {"size": None},
    "inners": {"k": {"size": 1}},
    "plain": {"x": 0.25},
    "anything": [1, {"two": 2}],
}


def test_each_annotation_kind_decodes():
    value, problems = decode_fields(Every, GOOD, where="every")
    assert problems == []
    assert value == Every(
        count=3, ratio=2.5, name="x", flag=True, maybe_count=None, maybe_ratio=4.0, maybe_name="y",
        maybe_flag=False, names=("a", "b"), times=(1.5, None, 2.0), counts={"a": 1, "b": 2},
        free={"nested": {"list": [1, "two", None]}}, inner=Inner(7, "i"), maybe_inner=Inner(None, "inner"),
        inners={"k": Inner(1)}, plain=Plain(0.25), anything=[1, {"two": 2}],
    )  # fmt: skip
    assert isinstance(value.maybe_ratio, float) and isinstance(value.times[2], float)  # an int is a float
    assert isinstance(value.names, tuple)


def test_missing_fields_take_their_defaults_and_unknown_keys_are_ignored():
    value, problems = decode_fields(Every, {"from_the_future": 1}, where="every")
    assert value == Every() and problems == []


@pytest.mark.parametrize(
    ("name", "bad", "why"),
    [
        ("count", "3", "expected int, got str"),
        ("count", True, "expected int, got bool"),  # a bool is not a number
        ("count", 2.5, "expected int, got float"),
        ("ratio", "fast", "expected float, got str"),
        ("ratio", False, "expected float, got bool"),
        ("name", 5, "expected str, got int"),
        ("flag", 1, "expected bool, got int"),
        ("flag", None, "expected a value, got null"),
        ("maybe_count", [1], "expected int, got list"),
        ("names", "ab", "expected a list, got str"),
        ("names", ["a", 2], "expected str, got int"),
        ("counts", [1, 2], "expected an object, got list"),
        ("counts", {"a": "one"}, "expected int, got str"),
        ("inner", "big", "expected an object, got str"),
        ("plain", 3, "expected an object, got int"),
    ],
)
def test_a_wrong_type_falls_back_to_the_default_with_a_named_problem(name, bad, why):
    value, problems = decode_fields(Every, {**GOOD, name: bad}, where="every")
    assert problems == [f"every.{name}: {why}"]
    assert getattr(value, name) == getattr(Every(), name)
    others = decode_fields(Every, GOOD)[0]
    assert [f for f in GOOD if f != name and getattr(value, f) != getattr(others, f)] == []  # the rest is kept


def test_a_wrong_field_of_a_nested_record_is_named_by_its_path():
    value, problems = decode_fields(Every, {"inner": {"size": "big", "name": "kept"},
                                            "inners": {"k": {"size": []}}}, where="every")  # fmt: skip
    assert problems == ["every.inner.size: expected int, got str", "every.inners['k'].size: expected int, got list"]
    assert value.inner == Inner(None, "kept") and value.inners == {"k": Inner()}


def test_without_where_the_class_names_the_problem():
    assert decode_fields(Every, {"count": "x"})[1] == ["Every.count: expected int, got str"]
    assert Every.decode({"count": "x"}, "here")[1] == ["here.count: expected int, got str"]
    assert Every.from_json({"count": "x", "name": "kept"}) == Every(name="kept")


def test_an_integral_float_is_an_int_and_a_non_finite_float_is_none():
    value, problems = decode_fields(Every, {"count": 4.0, "ratio": math.inf, "times": [math.nan, 1.0]})
    assert problems == [] and value.count == 4 and isinstance(value.count, int)
    assert value.ratio is None and value.times == (None, 1.0)


def test_a_required_field_raises():
    assert decode_fields(Required, {"n": 2}) == (Required(2), [])
    with pytest.raises(FieldError, match=r"^req\.n: missing$"):
        decode_fields(Required, {"label": "x"}, where="req")
    with pytest.raises(FieldError, match=r"^req\.n: expected int, got str$"):
        decode_fields(Required, {"n": "two"}, where="req")
    with pytest.raises(FieldError, match="expected an object, got list"):
        decode_fields(Required, [1, 2], where="req")


def test_encode_is_the_inverse_of_decode():
    value = decode_fields(Every, GOOD)[0]
    data = json.loads(json.dumps(encode_fields(value), allow_nan=False))
    assert data["names"] == ["a", "b"] and data["inner"] == {"size": 7, "name": "i"}
    assert decode_fields(Every, data) == (value, [])
    assert value.to_json() == encode_fields(value)


def test_finite_replaces_non_finite_floats_recursively():
    value = {"a": [1.0, math.nan, {"b": -math.inf}], 2: (math.inf,)}
    assert finite(value) == {"a": [1.0, None, {"b": None}], "2": [None]}
    assert finite("text") == "text" and finite(3) == 3
