"""The workload catalog: typed parameters, rules between them, and the names a refusal carries."""

from __future__ import annotations

import pytest

from tui.engine.catalog import WORKLOADS, ParamError, ParamRule, ParamSpec, WorkloadSpec, get_workload, train_workloads


@pytest.mark.parametrize(
    ("kind", "given", "expected"),
    [
        (bool, "Yes", True), (bool, " off ", False), (bool, True, True),
        (int, " 12 ", 12), (int, 3.0, 3), (int, 7, 7),
        (float, "0.5", 0.5), (float, 2, 2.0),
        (str, 5, "5"),
    ],
)
def test_coerce_converts_to_the_kind(kind, given, expected):
    assert ParamSpec("p", kind, None, "help").coerce(given) == expected


@pytest.mark.parametrize(
    ("kind", "given"),
    [(bool, "maybe"), (bool, 1), (int, True), (int, 2.5), (int, "2.5"), (int, None), (float, "fast")],
)
def test_coerce_refuses_what_is_not_the_kind(kind, given):
    with pytest.raises(ParamError) as info:
        ParamSpec("p", kind, None, "help").coerce(given)
    assert str(info.value) == f"p: expected {kind.__name__}, got {given!r}"
    assert info.value.params == ("p",)


def test_coerce_checks_choices_and_limits():
    spec = ParamSpec("p", int, 1, "help", minimum=1, maximum=8, choices=(1, 2, 4, 16))
    assert spec.coerce("4") == 4
    with pytest.raises(ParamError, match="^p: 3 is not one of 1, 2, 4, 16$"):
        spec.coerce(3)
    with pytest.raises(ParamError, match="^p: 16 is above the maximum 8$"):
        spec.coerce(16)


def test_the_transformer_rule_belongs_to_its_spec():
    spec = get_workload("transformer_block")
    (rule,) = spec.rules
    assert rule.params == ("width", "heads")
    assert rule.problem({"width": 128, "heads": 4}) is None
    with pytest.raises(ParamError) as info:
        spec.resolve({"width": 100, "heads": 3}, "cpu")
    assert str(info.value) == "width 100 is not divisible by heads 3"
    assert info.value.params == ("width", "heads")
    assert spec.resolve({"width": 96, "heads": 3}, "cpu")["width"] == 96


def test_rules_run_after_each_parameter_passed_its_own_limits():
    seen: list[dict] = []

    def b_not_below_a(values):
        seen.append(dict(values))
        return "b below a" if values["b"] < values["a"] else None

    params = (ParamSpec("a", int, 1, "a", minimum=1), ParamSpec("b", int, 2, "b"))
    spec = WorkloadSpec("w", "test", params, rules=(ParamRule(("b", "a"), b_not_below_a),))
    with pytest.raises(ParamError, match="^a: 0 is below the minimum 1$"):
        spec.resolve({"a": 0}, "cpu")
    assert seen == []
    with pytest.raises(ParamError) as info:
        spec.resolve({"a": "3"}, "cpu")
    assert seen == [{"a": 3, "b": 2}] and info.value.params == ("b", "a")


def test_every_rule_names_parameters_of_its_workload():
    for spec in WORKLOADS.values():
        names = {p.name for p in spec.params}
        for rule in spec.rules:
            assert rule.params and set(rule.params) <= names, spec.name
        spec.check({p.name: p.default for p in spec.params})  # the CPU defaults keep every rule
        spec.check({p.name: p.default_for("cuda") for p in spec.params})  # and so do the GPU ones


def test_unknown_names_carry_what_they_concern():
    with pytest.raises(ParamError) as info:
        get_workload("matmul").param("size")
    assert info.value.params == ("size",)
    with pytest.raises(ParamError) as info:
        get_workload("resnet")
    assert info.value.params == ()


def test_train_workloads_are_those_with_a_training_step():
    assert train_workloads() == ("cnn", "mlp", "transformer_block")


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("1" * 10_000, f"n: {'1' * 40}… (10000 characters) is above the maximum 65536"),  # beyond int()'s digits
        ("-" + "1" * 10_000, f"n: -{'1' * 39}… (10001 characters) is below the minimum 1"),
        ("1" * 41, f"n: {'1' * 40}… (41 characters) is above the maximum 65536"),
        ("1" * 40, f"n: {'1' * 40} is above the maximum 65536"),  # 40 characters: whole
        ("x" * 41, f"n: expected int from 1 to 65536, got {'x' * 40!r}… (41 characters)"),
        ("x" * 40, f"n: expected int from 1 to 65536, got {'x' * 40!r}"),
    ],
    ids=["10000-digits", "minus-10000-digits", "41-digits", "40-digits", "41-characters", "40-characters"],
)
def test_a_refused_parameter_repeats_at_most_40_characters_of_it(given, message):
    with pytest.raises(ParamError) as info:
        get_workload("matmul").param("n").coerce(given)
    assert str(info.value) == message and info.value.params == ("n",)


def test_unknown_names_are_shortened_too():
    with pytest.raises(ParamError) as info:
        get_workload("w" * 5000)
    assert str(info.value).startswith(f"workload: unknown {'w' * 40!r}… (5000 characters) (allowed: matmul")
    with pytest.raises(ParamError) as info:
        get_workload("matmul").param("p" * 5000)
    assert str(info.value) == f"{'p' * 40}… (5000 characters): not a parameter of matmul (allowed: n)"
    choices = ParamSpec("p", str, "a", "help", choices=("a", "b"))
    with pytest.raises(ParamError, match=r"^p: 'zzzz.*'… \(300 characters\) is not one of a, b$"):
        choices.coerce("z" * 300)


def test_a_folder_or_a_file_that_is_not_python_is_said_as_such_not_unknown(tmp_path):
    (tmp_path / "model.txt").write_text("not python")
    for given, said in ((str(tmp_path), "is a directory, not a Python file"),
                        (str(tmp_path / "model.txt"), "is not a .py file"), (str(tmp_path / "gone"), None)):
        with pytest.raises(ParamError) as info:
            get_workload(given)
        expected = f"workload: {given!r} {said} (allowed: matmul" if said else "workload: unknown '/"
        assert str(info.value).startswith(expected), str(info.value)
