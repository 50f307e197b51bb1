"""tui.engine.run.sweep.expand: every meaningful combination, each once, validated, in a fixed order."""

from __future__ import annotations

import pytest

from tui.engine.options import BACKENDS, MODES, OptionsError, RunOptions, inductor_options_apply, modes_for
from tui.engine.run.sweep import expand

BASE = RunOptions(workload="matmul", params={"n": 64})


def _keys(options: list[RunOptions]) -> list[tuple]:
    return [(o.params.get("n"), o.backend, o.mode, o.fullgraph, o.dynamic, o.dtype) for o in options]


def test_no_axes_is_the_base_validated():
    assert expand(BASE) == [BASE.validated()]


def test_modes_times_fullgraph_times_dynamic():
    result = expand(BASE, modes=["default", "reduce-overhead"], fullgraphs=[False, True], dynamics=["auto", "false"])
    assert len(result) == 8
    assert _keys(result)[:3] == [
        (64, "inductor", "default", False, None, "float32"),
        (64, "inductor", "default", False, False, "float32"),
        (64, "inductor", "default", True, None, "float32"),
    ]
    assert len(set(_keys(result))) == 8


def test_other_backends_ignore_mode():
    result = expand(BASE, backends=["inductor", "aot_eager", "eager"], modes=["default", "max-autotune"])
    assert [(o.backend, o.mode) for o in result] == [
        ("inductor", "default"),
        ("inductor", "max-autotune"),
        ("aot_eager", "default"),
        ("eager", "default"),
    ]


def test_params_grid_varies_slowest_and_is_validated():
    result = expand(BASE, params_grid={"n": [32, "128"]}, dtypes=["float32", "bfloat16"])
    assert _keys(result) == [
        (32, "inductor", "default", False, None, "float32"),
        (32, "inductor", "default", False, None, "bfloat16"),
        (128, "inductor", "default", False, None, "float32"),
        (128, "inductor", "default", False, None, "bfloat16"),
    ]
    assert isinstance(result[2].params["n"], int)  # coerced by validation


def test_values_that_mean_the_same_run_once():
    result = expand(BASE, params_grid={"n": [64, "64"]}, dynamics=["auto", None, "AUTO"], fullgraphs=["true", True])
    assert len(result) == 1 and result[0].fullgraph is True and result[0].dynamic is None


def test_deterministic():
    axes = dict(modes=["max-autotune", "default"], backends=["aot_eager", "inductor"], params_grid={"n": [8, 16]})
    assert expand(BASE, **axes) == expand(BASE, **axes)


def test_inductor_options_only_go_with_inductor():
    base = RunOptions(workload="matmul", inductor_options={"max_autotune": True})
    result = expand(base, backends=["inductor", "aot_eager"])
    assert [(o.backend, o.inductor_options) for o in result] == [
        ("inductor", {"max_autotune": True}),
        ("aot_eager", {}),
    ]


@pytest.mark.parametrize(
    "axes, field",
    [
        (dict(modes=["default", "turbo"]), "mode"),
        (dict(dtypes=["float32", "float8"]), "dtype"),
        (dict(dynamics=["maybe"]), "dynamic"),
        (dict(fullgraphs=["perhaps"]), "fullgraph"),
        (dict(params_grid={"n": [64, 0]}), "params"),
        (dict(params_grid={"size": [1]}), "params"),
        (dict(backends=["not a backend!"]), "backend"),
        (dict(modes=[]), "mode"),
        (dict(precisions=["default", "fast"]), "precision"),
        (dict(precisions=[]), "precision"),
    ],
)
def test_invalid_values_are_refused(axes, field):
    with pytest.raises(OptionsError) as info:
        expand(BASE, **axes)
    assert info.value.field == field


def test_precision_is_an_axis_next_to_dtype():
    result = expand(BASE, dtypes=["float32", "bfloat16"], precisions=["default", "ieee", "tf32", "ieee"])
    assert [(o.dtype, o.precision) for o in result] == [
        ("float32", "default"), ("float32", "ieee"), ("float32", "tf32"),
        ("bfloat16", "default"), ("bfloat16", "ieee"), ("bfloat16", "tf32"),
    ]  # fmt: skip
    assert [o.precision for o in expand(RunOptions(precision="tf32"))] == ["tf32"]  # no axis: the base's


def test_invalid_combination_is_refused():
    base = RunOptions(workload="matmul", inductor_options={"max_autotune": True})
    with pytest.raises(OptionsError, match="inductor_options"):
        expand(base, modes=["default", "reduce-overhead"])


@pytest.mark.parametrize("backend", [*BACKENDS, "my_backend"])
def test_the_sweep_runs_the_modes_the_rule_gives_each_backend(backend):
    """The sweep asks options' rule: every mode where it applies, the default alone elsewhere."""
    result = expand(BASE, backends=[backend], modes=list(MODES))
    assert tuple(o.mode for o in result) == modes_for(backend)
    with_options = RunOptions(workload="matmul", inductor_options={"max_autotune": True})
    (only,) = expand(with_options, backends=[backend])
    assert bool(only.inductor_options) is inductor_options_apply(backend, only.mode)


def test_a_row_added_to_the_axes_table_is_an_axis_of_expand_and_of_both_commands(monkeypatch):
    """A new axis is a row of SWEEP_AXES (and ``sweep=True`` in its option spec): expand, ``run``'s and
    ``sweep``'s flags and their reading all come from the table, with no code of its own."""
    import dataclasses

    from tui.cli import parse, parser, run_flags
    from tui.engine import option_table
    from tui.engine.run import sweep

    row = sweep.SweepAxis("l2_flush", {"action": "store_true", "default": None, "help": "flush L2"},
                          {"metavar": "WHICH", "help": "both, true or false"},
                          value=lambda item: sweep._parse_bool("l2_flush", item),
                          words={"both": (False, True), "true": (True,), "false": (False,)}, group="timing")
    spec = dataclasses.replace(option_table.SPECS["l2_flush"], cli=option_table.CUSTOM, sweep=True)
    axes = (*sweep.SWEEP_AXES, row)
    by_field = {axis.field: axis for axis in axes}
    for module in (sweep, parse):
        monkeypatch.setattr(module, "SWEEP_AXES", axes)
    for module in (run_flags, parse):
        monkeypatch.setattr(module, "AXES_BY_FIELD", by_field)
    for module in (run_flags, parse):
        monkeypatch.setitem(module.SPECS, "l2_flush", spec)
    monkeypatch.setattr(run_flags, "OPTIONS", tuple(spec if s.name == "l2_flush" else s for s in run_flags.OPTIONS))

    assert [o.l2_flush for o in expand(BASE, l2_flushs=["true", False, "false"])] == [True, False]
    argv = ["sweep", "--l2-flush", "both", "--mode", "default,reduce-overhead"]
    configs = parse.configs_from_args(parser.build_parser().parse_args(argv))
    assert [(o.mode, o.l2_flush) for o in configs] == [
        ("default", False), ("default", True), ("reduce-overhead", False), ("reduce-overhead", True)]
    (one,) = parse.configs_from_args(parser.build_parser().parse_args(["run", "--l2-flush"]))
    assert one.l2_flush is True
    with pytest.raises(OptionsError, match=r"^l2_flush: 'often' is not allowed \(allowed: both, true, false\)$"):
        parse.configs_from_args(parser.build_parser().parse_args(["sweep", "--l2-flush", "often"]))
