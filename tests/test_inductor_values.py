"""An inductor option's value against the type torch's config declares for it (tui.engine.worker.inductor_values)."""

from __future__ import annotations

import typing

import pytest

from tui.engine.worker.inductor_values import value_refusal


@pytest.mark.parametrize(("value", "declared"), [
    (True, bool), (False, bool | None), (None, bool | None), (8, int | None), (8, int), (8, float), (0.5, float),
    ("ATEN,TRITON", str), (None, typing.Optional[str]),  # noqa: UP045 - the typing.Union form torch may declare
    ("anything", list[str]), (3, typing.Callable), ("x", None),  # a type it cannot read: inductor judges
])  # fmt: skip
def test_a_value_of_its_declared_kind_or_of_a_type_it_cannot_read_passes(value, declared):
    assert value_refusal("k", value, declared) is None


@pytest.mark.parametrize(("value", "declared", "said"), [
    ("maybe", bool, "freezing='maybe' is not allowed: freezing takes true or false"),
    (1, bool, "freezing=1 is not allowed: freezing takes true or false"),  # inductor refuses an int for a bool
    (True, int | None, "freezing=True is not allowed: freezing takes a whole number or none"),
    ("abc", int | None, "freezing='abc' is not allowed: freezing takes a whole number or none"),
    (0.5, int, "freezing=0.5 is not allowed: freezing takes a whole number"),
    (5, str, "freezing=5 is not allowed: freezing takes text"),
])  # fmt: skip
def test_a_value_of_another_kind_is_refused_in_one_line_naming_what_the_option_takes(value, declared, said):
    assert value_refusal("freezing", value, declared) == said


@pytest.mark.torch
def test_the_worker_refuses_a_value_torch_declares_another_type_for_before_compiling():
    """``--option freezing=maybe`` failed every tune candidate's compile as a compile error; ``cpp.simdlen=abc`` ran."""
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
    check_inductor_options({"freezing": True, "cpp.simdlen": 8, "max_autotune_gemm_backends": "ATEN,TRITON"})
