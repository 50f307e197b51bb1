"""Stored run options (config, history): typed decode, the hidden options and the settings that run code.

Issue 11, items 4-6: a wrong type in one field costs that field only, is named, and never reaches
a reader that would crash on it; ``python`` and inductor options are listed as settings that
start a program.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import typing

import pytest

from tui.engine.store.history import History
from tui.engine.options import OptionsError, RunOptions
from tui.engine.store.results import RunRecord
from tui.engine.store.stored_options import (
    CODE_FIELDS,
    HIDDEN_FIELDS,
    LIMIT_FIELDS,
    check_hidden,
    code_settings,
    TF32_NOTE,
    decode_options,
    hidden_settings,
    precision_from_tf32,
)

DEFAULTS = RunOptions()

#: One value of the wrong type per RunOptions field (what a hand-edited or foreign file holds).
WRONG_TYPES = {
    "workload": 5, "params": "n=64", "backend": None, "mode": ["default"], "inductor_options": "cpp.cxx=/bin/sh",
    "fullgraph": "yes", "dynamic": 7, "dtype": 16, "precision": 1, "device": {"cuda": 0}, "warmup": "five",
    "iters": 2.5, "block_size": True, "time_budget_s": "1h", "l2_flush": "true", "cold_compile": None,
    "timeout_s": "abc", "memory_limit_gb": [2], "python": 5, "train": 0, "compile_optimizer": "no", "seed": "0",
    "target_ci": "2%", "noise_threshold": None, "noise_limits": ["max_drift", 0.2], "profile": "false",
    "trace": "yes", "torch_trace": 1,
}  # fmt: skip

#: Every field away from its default, with the right type (decoding checks types, not combinations).
FULL = RunOptions(
    workload="matmul", params={"n": 64}, backend="aot_eager", mode="max-autotune", inductor_options={"cpp.cxx": "g++"},
    fullgraph=True, dynamic=False, dtype="bfloat16", precision="tf32", device="cuda:0", warmup=3, iters=20,
    block_size=5, time_budget_s=2.5, l2_flush=True, cold_compile=True, timeout_s=30.0, memory_limit_gb=2.0,
    python="/usr/bin/python3", train=True, compile_optimizer=True, seed=7, target_ci=0.03, noise_threshold=0.05,
    noise_limits={"max_drift": 0.2}, profile=False, trace=True, torch_trace=True,
)  # fmt: skip


def test_the_table_of_wrong_types_covers_every_field():
    assert set(WRONG_TYPES) == {f.name for f in dataclasses.fields(RunOptions)}
    assert all(getattr(FULL, name) != getattr(DEFAULTS, name) for name in WRONG_TYPES)


def test_every_field_round_trips_without_a_problem():
    assert decode_options(json.loads(json.dumps(FULL.to_dict()))) == (FULL, [])
    assert decode_options({}) == (DEFAULTS, [])


@pytest.mark.parametrize("name", sorted(WRONG_TYPES))
def test_a_field_of_the_wrong_type_takes_its_default_is_named_and_costs_nothing_else(name):
    data = {**FULL.to_dict(), name: WRONG_TYPES[name]}
    options, problems = decode_options(data, where="options")
    assert getattr(options, name) == getattr(DEFAULTS, name)
    assert len(problems) == 1 and problems[0].startswith(f"options.{name}: "), problems
    others = {f.name for f in dataclasses.fields(RunOptions)} - {name}
    assert all(getattr(options, other) == getattr(FULL, other) for other in others)


def test_the_issues_cases():
    # "options": {"params": "n=64"} crashed the app at every start; {"timeout_s": "abc"} on r.
    assert decode_options({"params": "n=64"}, "record.options") == (
        DEFAULTS, ["record.options.params: expected an object, got str"])
    assert decode_options({"timeout_s": "abc", "workload": "matmul"}) == (
        RunOptions(workload="matmul"), ["options.timeout_s: expected float, got str"])
    assert decode_options({"workload": 5})[1] == ["options.workload: expected str, got int"]
    assert decode_options({"backend": None})[1] == ["options.backend: expected a value, got null"]


def test_the_old_tf32_switch_reads_as_a_precision():
    """A config or record written before precision: tf32 true is tf32, false is ieee (cuDNN's TF32 was off too)."""
    assert decode_options({"workload": "cnn", "tf32": True}) == (RunOptions(workload="cnn", precision="tf32"), [])
    assert decode_options({"tf32": False}) == (RunOptions(precision="ieee"), [])
    assert decode_options({"tf32": "yes"}) == (DEFAULTS, ["options.tf32: expected true or false, got 'yes'"])
    assert decode_options({"tf32": True, "precision": "default"}, "record.options") == (
        DEFAULTS, ["record.options.tf32: the old TF32 switch beside precision (ignored)"])
    assert precision_from_tf32({"tf32": False}) == ({"precision": "ieee"}, TF32_NOTE.format(tf32="false",
                                                                                           precision="ieee"), [])


def test_a_bad_dynamic_costs_only_dynamic():
    # Before: one bad "dynamic" in a history line reset every option of the row.
    options, problems = decode_options({"workload": "matmul", "dynamic": "sometimes", "iters": 9})
    assert options == RunOptions(workload="matmul", iters=9)
    assert problems == ["options.dynamic: 'sometimes' is not allowed (allowed: auto, true, false)"]
    for text, value in (("auto", None), ("true", True), ("false", False), (None, None), (True, True)):
        assert decode_options({"dynamic": text}) == (RunOptions(dynamic=value), [])


def test_unknown_keys_are_named_and_the_rest_is_kept():
    options, problems = decode_options({"workload": "matmul", "no_such_option": 1, "x" * 300: 2})
    assert options == RunOptions(workload="matmul")
    assert problems[0] == "options.no_such_option: unknown option"
    assert problems[1].startswith("options." + "x" * 40 + "… (300 characters)")


def test_parameters_keep_numbers_text_and_booleans_and_name_the_rest():
    options, problems = decode_options({"params": {"n": 64, "scale": 0.5, "name": "a\x1b[2J", "flag": True,
                                                   "shape": [1, 2], "cfg": {"a": 1}, "none": None}})  # fmt: skip
    assert options.params == {"n": 64, "scale": 0.5, "name": "a\\x1b[2J", "flag": True}
    assert [p.split(":")[0] for p in problems] == ["options.params.shape", "options.params.cfg", "options.params.none"]


def test_text_from_a_file_is_made_printable():
    options, _ = decode_options({"python": "/x/\x1b]0;title\x07py", "inductor_options": {"cpp.cxx": "g++"}})
    assert options.python == "/x/\\x1b]0;title\\x07py"


@pytest.mark.parametrize("top", [None, [], "options", 5, True])
def test_options_that_are_not_an_object_are_the_defaults(top):
    options, problems = decode_options(top, "options")
    assert options == DEFAULTS and len(problems) == 1 and problems[0].startswith("options: expected an object")


ODD_VALUES = [None, "", "x" * 10_000, 0, -1, 10**30, 1e308, -0.0, True, [], [None], {}, {"": {"": []}}]


@pytest.mark.parametrize("value", ODD_VALUES, ids=range(len(ODD_VALUES)))
def test_whatever_a_file_holds_the_result_is_typed_and_validated_refuses_it_cleanly(value):
    """Any JSON value in any field: the decoded options have their annotated types, so
    ``validated()`` either passes or raises OptionsError (never TypeError or AttributeError)."""
    hints = typing.get_type_hints(RunOptions)
    for name in hints:
        options, _ = decode_options({name: value})
        for field_name, hint in hints.items():
            assert _fits(getattr(options, field_name), hint), (name, field_name, getattr(options, field_name))
        try:
            options.validated()
        except OptionsError:
            pass


def _fits(value, hint) -> bool:
    origin = typing.get_origin(hint)
    if origin is dict:
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    args = typing.get_args(hint)
    if args:  # X | None
        return value is None or any(_fits(value, a) for a in args if a is not type(None))
    if hint is float:
        return isinstance(value, float)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


# ----- the options without a picker field --------------------------------------------------------


@pytest.mark.parametrize(
    "name, value",
    [
        ("timeout_s", -1.0), ("timeout_s", 10.0**9), ("block_size", 0), ("seed", -3), ("time_budget_s", 0.0),
        ("memory_limit_gb", -2.0), ("python", "/nonexistent/bin/python"), ("python", " "),
        ("inductor_options", {"bad key!": 1}),
    ],
)  # fmt: skip
def test_a_hidden_option_the_run_would_refuse_is_named_and_dropped(name, value):
    options, problems = check_hidden(dataclasses.replace(RunOptions(workload="matmul", seed=5), **{name: value}))
    assert getattr(options, name) == getattr(DEFAULTS, name)
    assert options.workload == "matmul" and (name == "seed" or options.seed == 5)
    assert len(problems) == 1 and problems[0].startswith(f"options.{name}: "), problems


def test_hidden_options_the_run_accepts_are_kept():
    kept = RunOptions(timeout_s=604800.0, block_size=100_000, seed=2**31 - 1, time_budget_s=0.5, memory_limit_gb=2.0,
                      python=sys.executable, inductor_options={"cpp.cxx": "/bin/true"}, compile_optimizer=True)
    assert check_hidden(kept) == (kept, [])


def test_hidden_fields_and_code_fields():
    fields = {f.name for f in dataclasses.fields(RunOptions)}
    assert set(HIDDEN_FIELDS) <= fields and set(CODE_FIELDS) <= set(HIDDEN_FIELDS)
    assert hidden_settings(DEFAULTS) == [] and code_settings(DEFAULTS) == []
    # block_size, time_budget_s, timeout_s and memory_limit_gb are picker fields (LIMIT_FIELDS): not hidden.
    assert not set(LIMIT_FIELDS) & set(HIDDEN_FIELDS) and set(LIMIT_FIELDS) <= fields
    assert hidden_settings(FULL) == [
        ("seed", "7"), ("python", "/usr/bin/python3"), ("inductor_options.cpp.cxx", "g++"),
        ("compile_optimizer", "true"), ("target_ci", "0.03"), ("noise_threshold", "0.05"),
        ("noise_limits", '{"max_drift": 0.2}'), ("profile", "false"), ("trace", "true"), ("torch_trace", "true"),
    ]  # fmt: skip
    several = RunOptions(python="/x/py", inductor_options={"max_autotune": True, "cpp.cxx": "/bin/sh"})
    assert code_settings(several) == [
        ("python", "/x/py"), ("inductor_options.cpp.cxx", "/bin/sh"), ("inductor_options.max_autotune", "true")]


# ----- the history reads options the same way -------------------------------------------------------


def test_a_history_line_with_a_wrong_type_loads_with_its_line_and_field_named(tmp_path):
    history = History(tmp_path / "history.jsonl")
    good = RunRecord.new(RunOptions(workload="matmul", params={"n": 64}))
    good.fail("crash", "gone")
    history.append(good)
    line = json.loads((tmp_path / "history.jsonl").read_text())
    line.update(run_id="r2", options={**line["options"], "params": "n=64", "dynamic": "x", "python": 5, "colour": 1})
    with (tmp_path / "history.jsonl").open("a") as handle:
        handle.write(json.dumps(line) + "\n")
    records, problems = history.load()
    assert [r.run_id for r in records] == [good.run_id, "r2"]
    assert records[1].options == RunOptions(workload="matmul")
    where = f"{tmp_path / 'history.jsonl'} line 2: record.options"
    assert problems == [
        f"{where}.colour: unknown option (default used)",
        f"{where}.python: expected str, got int (default used)",
        f"{where}.dynamic: 'x' is not allowed (allowed: auto, true, false) (default used)",
        f"{where}.params: expected an object, got str (default used)",
    ]


def test_a_short_dtype_written_by_hand_reads_as_its_full_name():
    # a config saying "bf16", as the tables do, loaded, but the app's picker knew only bfloat16 and showed float32
    options, problems = decode_options({"workload": "mlp", "dtype": "bf16"})
    assert options.dtype == "bfloat16" and problems == []
