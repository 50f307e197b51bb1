"""An inductor option's value against the type torch's config declares for it (tui.engine.worker.inductor_values)."""

from __future__ import annotations

import typing

import pytest

from tui.engine.worker.inductor_values import ValueRefused, checked_value


@pytest.mark.parametrize(("value", "declared", "taken"), [
    (True, bool, True), (False, bool | None, False), (None, bool | None, None), (8, int | None, 8), (8, int, 8),
    (0.5, float, 0.5), ("ATEN,TRITON", str, "ATEN,TRITON"), (None, typing.Optional[str], None),  # noqa: UP045
    # what the command line reads as another kind, said in the declared one
    (2, float, 2.0),  # torch refuses an int for a float: "got int should be float"
    (90, str | None, "90"), (12.4, str | None, "12.4"), (0, str, "0"),  # cuda.arch=90, cuda.version=12.4
    ("none", int | None, None), ("None", bool | None, None),
    # a type it cannot read: inductor judges
    ("anything", list[str], "anything"), (3, typing.Callable, 3), ("x", None, "x"),
])  # fmt: skip
def test_a_value_of_its_declared_kind_or_one_that_says_it_is_taken_in_that_kind(value, declared, taken):
    got = checked_value("k", value, declared)
    assert got == taken and type(got) is type(taken)


@pytest.mark.parametrize(("value", "declared", "said"), [
    ("maybe", bool, "freezing='maybe' is not allowed: freezing takes true or false"),
    (1, bool, "freezing=1 is not allowed: freezing takes true or false"),  # inductor refuses an int for a bool
    (True, int | None, "freezing=True is not allowed: freezing takes a whole number or none"),
    ("abc", int | None, "freezing='abc' is not allowed: freezing takes a whole number or none"),
    (0.5, int, "freezing=0.5 is not allowed: freezing takes a whole number"),
    (True, str, "freezing=True is not allowed: freezing takes text"),
    ("none", int, "freezing='none' is not allowed: freezing takes a whole number"),
])  # fmt: skip
def test_a_value_of_another_kind_is_refused_in_one_line_naming_what_the_option_takes(value, declared, said):
    with pytest.raises(ValueRefused) as refused:
        checked_value("freezing", value, declared)
    assert str(refused.value) == said


@pytest.mark.torch
def test_the_worker_refuses_a_value_torch_declares_another_type_for_and_converts_one_it_says():
    """``--option freezing=maybe`` failed every tune candidate's compile as a compile error; ``cpp.simdlen=abc`` ran;
    ``cuda.arch=90`` (read as a number) must still reach torch, as text."""
    pytest.importorskip("torch")
    from tui.engine.options import OptionsError
    from tui.engine.worker.setup import check_inductor_options

    config = pytest.importorskip("torch._inductor.config")
    if not hasattr(config._config.get("freezing"), "value_type"):
        pytest.skip("this torch's config declares no types")
    for options, said in (({"freezing": "maybe"}, "freezing='maybe' is not allowed"),
                          ({"cpp.simdlen": "abc"}, "cpp.simdlen='abc' is not allowed")):
        with pytest.raises(OptionsError, match=said) as refused:
            check_inductor_options(options)
        assert refused.value.field == "inductor_options"
    given = {"freezing": True, "cpp.simdlen": 8, "max_autotune_gemm_backends": "ATEN,TRITON", "cuda.arch": 90}
    assert check_inductor_options(given) == {**given, "cuda.arch": "90"}
