"""The sweep dialog's text fields read as the CLI reads its lists: an empty item is refused, not dropped."""

from __future__ import annotations

import pytest

from tui.app.components.sweep_dialog import choice_to_expand_kwargs, parse_sizes
from tui.engine.options import OptionsError


@pytest.mark.parametrize("text", ["n=256,512", "n=256, 512", "n=256 512", " n = 256 ,512 "])
def test_sizes_are_apart_by_commas_or_spaces(text):
    assert parse_sizes(text) == {"n": ["256", "512"]}


def test_sizes_of_several_parameters_and_lines():
    assert parse_sizes("batch=8,16; n=64\nwidth=32") == {"batch": ["8", "16"], "n": ["64"], "width": ["32"]}


@pytest.mark.parametrize("text", ["n=8,,16", "n=8,", "n=,8", "n=8 , ,16"])
def test_an_empty_size_is_refused_naming_the_field_and_the_parameter(text):
    with pytest.raises(OptionsError) as info:
        parse_sizes(text)
    assert info.value.field == "sizes" and f"{text.strip()!r} has an empty value" in str(info.value)  # as typed


@pytest.mark.parametrize("text", ["n", "n=", "=8", "2n=8", "2n=8,,16", "n = "])
def test_a_size_that_is_not_name_equals_values_is_refused(text):
    with pytest.raises(ValueError, match="is not name=v1,v2"):
        parse_sizes(text)


def test_pythons_are_a_comma_list_and_an_empty_one_is_refused():
    assert choice_to_expand_kwargs({"pythons": ["/a/python, /b/python"]})["pythons"] == ["/a/python", "/b/python"]
    assert "pythons" not in choice_to_expand_kwargs({"pythons": ["  "]})
    with pytest.raises(OptionsError, match="has an empty item"):
        choice_to_expand_kwargs({"pythons": ["/a/python,,/b/python"]})


def test_the_first_sweep_on_the_cpu_offers_no_mode_that_only_adds_cuda_graphs():
    """A new user's first CPU sweep ran reduce-overhead, which warned that its CUDA graphs were skipped: a run
    spent on the default compile again."""
    from tui.app.components.sweep_dialog import DEFAULT_SWEEP, first_sweep

    assert first_sweep("cpu")["modes"] == ["default", "max-autotune-no-cudagraphs"]
    assert first_sweep("cuda:0") == DEFAULT_SWEEP and "reduce-overhead" in first_sweep("cuda")["modes"]
    assert {key: value for key, value in first_sweep("cpu").items() if key != "modes"} == \
        {key: value for key, value in DEFAULT_SWEEP.items() if key != "modes"}
