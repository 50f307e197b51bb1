"""The run options' table (tui.engine.option_table): one spec per field, and every reader agrees with it.

Each spec's option, set alone to a value other than its default, goes through the reproduce
command and the command line's parser, and through the stored form (JSON, then
``decode_options``), and comes back the same.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from typing import Any

import pytest

from tui.cli.parse import options_from_args
from tui.cli.parser import build_parser
from tui.cli.run_flags import is_table_flag
from tui.engine import options as options_module
from tui.engine.store.columns import CSV_COLUMNS
from tui.engine.option_table import (
    CUSTOM,
    LIMIT,
    NEGATED,
    OPTIONS,
    SPECS,
    SWITCH,
    VALUE,
    code_fields,
    field_widgets,
    hidden_fields,
    limit_fields,
)
from tui.engine.options import RunOptions
from tui.engine.store.reproduce import _FLAGS, reproduce_command
from tui.engine.store.stored_options import CODE_FIELDS, HIDDEN_FIELDS, LIMIT_FIELDS, decode_options
from tui.present.option_fields import FIELDS_BY_KEY

FIELDS = [f.name for f in dataclasses.fields(RunOptions)]
DEFAULTS = RunOptions()

# Options whose other value cannot be made from their type alone.
_OTHER = {
    "workload": "cnn", "params": {"n": 2048, "scale": 0.5, "name": "x"}, "device": "cuda:0",
    "python": "/usr/bin/python3",
    "backend": "aot_eager", "mode": "max-autotune", "inductor_options": {"cpp.cxx": "g++", "max_autotune": True},
    "dynamic": True, "dtype": "bfloat16", "precision": "tf32", "noise_limits": {"max_drift": 0.2},
}  # fmt: skip


def _other(name: str) -> Any:
    """A value of ``name`` that is not its default (from its type where that is enough)."""
    if name in _OTHER:
        return _OTHER[name]
    default = getattr(DEFAULTS, name)
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        low, high = SPECS[name].int_range or (0, 2**31)
        return default + 1 if default < high else low
    if isinstance(default, float):
        return default * 2
    assert default is None, f"{name}: give _OTHER a value other than {default!r}"
    return 1.5


def test_every_field_has_exactly_one_spec():
    names = [spec.name for spec in OPTIONS]
    assert sorted(names) == sorted(FIELDS) and len(names) == len(set(names))
    assert list(_FLAGS) == names  # the reproduce command writes them in the table's order


@pytest.mark.parametrize("name", FIELDS)
def test_a_value_goes_through_the_reproduce_command_and_the_parser(name):
    options = dataclasses.replace(DEFAULTS, **{name: _other(name)})
    assert options != DEFAULTS
    line = reproduce_command(options)
    assert line != "compile-lab run"
    parsed = options_from_args(build_parser().parse_args(shlex.split(line)[1:]))
    assert parsed == options, line


@pytest.mark.parametrize("name", FIELDS)
def test_a_value_goes_through_the_stored_form(name):
    options = dataclasses.replace(DEFAULTS, **{name: _other(name)})
    assert decode_options(json.loads(json.dumps(options.to_dict())), "config") == (options, [])


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_every_table_flag_is_in_the_parser_with_its_help(command):
    sub = build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    actions = {flag: action for action in sub._actions for flag in action.option_strings}
    for spec in OPTIONS:
        assert spec.flag in actions, spec.name
        action = actions[spec.flag]
        if is_table_flag(spec):
            assert action.dest == spec.dest and "{" not in (action.help or "")
            if spec.cli == VALUE:
                assert action.metavar == spec.metavar
                if spec.parse in (int, float):  # read as the picker reads it (a refusal names the field)
                    assert type(action.type("7")) is spec.parse and action.type("7") == spec.parse("7"), spec.name
                else:
                    assert action.type is spec.parse, spec.name


def test_the_kinds_agree():
    for spec in OPTIONS:
        default = getattr(DEFAULTS, spec.name)
        if spec.cli == SWITCH:
            assert default is False, spec.name
        if spec.cli == NEGATED:
            assert default is True and spec.flag and spec.flag.startswith("--no-"), spec.name
        if spec.int_range is not None:
            assert spec.parse is int, spec.name
            assert default is None or spec.int_range[0] <= default <= spec.int_range[1], spec.name
        if spec.sweep:
            assert spec.cli in (CUSTOM, "pairs"), spec.name
        assert (spec.picker == LIMIT) == (spec.limit is not None), spec.name
        if spec.picker is not None and spec.name != "params":
            assert spec.widget is not None, spec.name
        assert spec.label is None or spec.label in FIELDS_BY_KEY, spec.name
        assert spec.csv is None or CSV_COLUMNS.count(spec.name) == 1, spec.name


def test_an_integer_option_that_defaults_to_unset_may_stay_unset_and_is_checked_when_set(monkeypatch):
    # No integer option defaults to None yet: give a None-default field (time_budget_s) an integer range.
    monkeypatch.setitem(options_module.INT_RANGES, "time_budget_s", (1, 256))
    options_module.check_range("time_budget_s", None)
    options_module.check_range("time_budget_s", 256)
    with pytest.raises(options_module.OptionsError, match="time_budget_s: 0 is not allowed .*from 1 to 256"):
        options_module.check_range("time_budget_s", 0)
    with pytest.raises(options_module.OptionsError, match="iters: None is not allowed"):
        options_module.check_range("iters", None)


def test_a_spec_with_a_csv_help_gets_a_column_of_its_value(monkeypatch):
    from tui.engine.store import columns

    spec = dataclasses.replace(SPECS["seed"], csv="the random seed")
    monkeypatch.setattr(columns, "OPTIONS", (*OPTIONS[:1], spec))
    [column] = columns._option_columns()
    record = type("Record", (), {"options": dataclasses.replace(DEFAULTS, seed=7)})()
    assert (column.name, column.meaning, column.get(record, None)) == ("seed", "the random seed", 7)


def test_the_readers_take_their_lists_from_the_table():
    assert options_module.INT_RANGES == {s.name: s.int_range for s in OPTIONS if s.int_range}
    assert HIDDEN_FIELDS == hidden_fields() and LIMIT_FIELDS == limit_fields() and CODE_FIELDS == code_fields()
    assert set(CODE_FIELDS) <= set(HIDDEN_FIELDS) and not set(LIMIT_FIELDS) & set(HIDDEN_FIELDS)
    assert set(field_widgets()) | {"params"} | set(HIDDEN_FIELDS) == set(FIELDS)


def test_a_number_options_range_is_its_spec_and_a_refusal_states_the_specs_words(monkeypatch):
    """Each number option (``noise_limits``: each value) is refused above its spec's ``high`` with its ``allowed``,
    and a range changed in the table is the one validation applies."""
    assert options_module.NUMBER_RANGES == {s.name: s.number_range for s in OPTIONS if s.number_range}
    assert {"time_budget_s", "timeout_s", "target_ci", "noise_threshold", "memory_limit_gb"} <= set(
        options_module.NUMBER_RANGES)
    for name, rule in options_module.NUMBER_RANGES.items():
        pairs = SPECS[name].cli == "pairs"
        value = {"max_drift": rule.high * 2} if pairs else rule.high * 2
        shown = f"{name}.max_drift" if pairs else name
        with pytest.raises(options_module.OptionsError) as refused:
            dataclasses.replace(DEFAULTS, **{name: value}).validated()
        assert str(refused.value) == f"{shown}: {rule.high * 2!r} is not allowed (allowed: {rule.allowed})"
    narrower = dataclasses.replace(options_module.NUMBER_RANGES["timeout_s"], high=10.0, allowed="at most 10 s")
    monkeypatch.setitem(options_module.NUMBER_RANGES, "timeout_s", narrower)
    refusal = r"^timeout_s: 11\.0 is not allowed \(allowed: at most 10 s\)$"
    with pytest.raises(options_module.OptionsError, match=refusal):
        dataclasses.replace(DEFAULTS, timeout_s=11.0).validated()


def test_an_integer_option_out_of_its_range_is_refused_naming_it():
    for name, (low, high) in options_module.INT_RANGES.items():
        with pytest.raises(options_module.OptionsError, match=f"^{name}: .*from {low} to {high}"):
            dataclasses.replace(DEFAULTS, **{name: high + 1}).validated()
