"""Option validation: every refusal is one line naming the field and what is allowed."""

from __future__ import annotations

import json

import pytest

from tui.engine.catalog import WORKLOADS, ParamError, get_workload, split_user_workload
from tui.engine.options import (
    BACKENDS,
    DEFAULT_MODE,
    MODES,
    OptionsError,
    RunOptions,
    check_compile_settings,
    inductor_options_apply,
    mode_applies,
    modes_for,
    parse_dynamic,
    parse_key_values,
)


def test_defaults_validate_and_fill_cpu_params():
    options = RunOptions(workload="matmul").validated()
    assert options.params == {"n": 256}


def test_gpu_defaults_are_the_seed_sizes():
    assert RunOptions(workload="matmul", device="cuda").validated().params == {"n": 8192}
    assert RunOptions(workload="cnn", device="cuda:0").validated().params == {"batch": 64}
    assert RunOptions(workload="matmul", device="cuda", params={"n": 16384}).validated().params == {"n": 16384}


@pytest.mark.parametrize(
    ("changes", "field", "fragment"),
    [
        ({"mode": "fast"}, "mode", "allowed: default, reduce-overhead"),
        ({"backend": "aot_eager", "mode": "reduce-overhead"}, "mode", "only applies to the inductor backend"),
        ({"mode": "max-autotune", "inductor_options": {"max_autotune": True}}, "inductor_options", "non-default mode"),
        ({"backend": "eager", "inductor_options": {"x": 1}}, "inductor_options", "only apply to the inductor"),
        ({"dtype": "float64"}, "dtype", "allowed: float32, bfloat16, float16"),
        ({"iters": 0}, "iters", "from 1 to"),
        ({"warmup": -1}, "warmup", "from 0 to"),
        ({"iters": True}, "iters", "integer"),
        ({"device": "gpu"}, "device", "allowed: cpu, cuda"),
        ({"params": {"n": -5}}, "params", "below the minimum"),
        ({"params": {"n": 10**9}}, "params", "above the maximum"),
        ({"params": {"n": "big"}}, "params", "expected int"),
        ({"params": {"size": 3}}, "params", "not a parameter of matmul"),
        ({"workload": "resnet"}, "workload", "unknown 'resnet'"),
        ({"train": True}, "train", "has no training step"),
        ({"compile_optimizer": True}, "compile_optimizer", "only applies with train"),
        ({"timeout_s": 0}, "timeout_s", "> 0"),
        ({"time_budget_s": -1.0}, "time_budget_s", "> 0"),
        ({"backend": "bad name!"}, "backend", "not a backend name"),
        ({"python": "/nonexistent/python3"}, "python", "not an executable"),
        ({"memory_limit_gb": 0}, "memory_limit_gb", "above 0"),
        ({"memory_limit_gb": -2.5}, "memory_limit_gb", "above 0"),
        ({"memory_limit_gb": float("nan")}, "memory_limit_gb", "above 0"),
        ({"memory_limit_gb": "4"}, "memory_limit_gb", "above 0"),
        ({"memory_limit_gb": 4, "device": "cuda"}, "memory_limit_gb", "applies to CPU runs only"),
    ],
)
def test_refusals_name_the_field(changes, field, fragment):
    base = {"workload": "matmul"}
    base.update(changes)
    with pytest.raises(OptionsError) as info:
        RunOptions(**base).validated()
    message = str(info.value)
    assert info.value.field == field
    assert message.startswith(f"{field}: ")
    assert fragment in message
    assert "\n" not in message


def test_transformer_width_must_divide_by_heads():
    with pytest.raises(OptionsError, match="not divisible by heads"):
        RunOptions(workload="transformer_block", params={"width": 100, "heads": 3}).validated()


def test_train_allowed_for_models():
    for name, spec in WORKLOADS.items():
        options = RunOptions(workload=name, train=spec.supports_train)
        assert options.validated().train is spec.supports_train


def test_unknown_backend_name_is_left_to_torch():
    """A well-formed but unknown backend passes here; the worker fails it early."""
    assert RunOptions(backend="my_backend").validated().backend == "my_backend"


def test_round_trip_through_json():
    options = RunOptions(workload="cnn", dynamic=True, tf32=True, inductor_options={"epilogue_fusion": False}).validated()
    again = RunOptions.from_dict(json.loads(json.dumps(options.to_dict())))
    assert again == options


def test_from_dict_refuses_unknown_keys():
    with pytest.raises(OptionsError, match="^colour: unknown option"):
        RunOptions.from_dict({"colour": "red"})


def test_parse_dynamic():
    assert parse_dynamic("auto") is None
    assert parse_dynamic("TRUE") is True
    assert parse_dynamic("false") is False
    with pytest.raises(OptionsError, match="dynamic: 'maybe'"):
        parse_dynamic("maybe")


def test_parse_key_values_types():
    assert parse_key_values(["a=1", "b=true", "c=0.5", "d=x"], "option") == {"a": 1, "b": True, "c": 0.5, "d": "x"}
    assert parse_key_values("a=1,b=2", "param") == {"a": 1, "b": 2}
    with pytest.raises(OptionsError, match="^option: 'nokey' is not key=value"):
        parse_key_values(["nokey"], "option")


def test_user_workload_paths():
    assert split_user_workload("m.py") == ("m.py", "make_workload")
    assert split_user_workload("dir/m.py:build") == ("dir/m.py", "build")
    resolved = RunOptions(workload="assets/m.py:build").validated().workload
    assert resolved.endswith("/assets/m.py:build") and resolved.startswith("/")
    with pytest.raises(OptionsError, match="^workload: factory"):
        RunOptions(workload="m.py:not-a-name").validated()


def test_param_coercion_from_text():
    spec = get_workload("mlp")
    assert spec.resolve({"batch": "32", "depth": 2.0}, "cpu") == {"batch": 32, "width": 256, "depth": 2}
    with pytest.raises(ParamError, match="depth: expected int"):
        spec.resolve({"depth": 2.5}, "cpu")


def test_label_is_short_and_complete():
    label = RunOptions(mode="reduce-overhead", fullgraph=True, dtype="bfloat16", tf32=True).label()
    assert label == "inductor/reduce-overhead fullgraph dyn=auto bf16 tf32"


# ----- the backend / mode / inductor_options rule, asked from one place ----------------

ALL_BACKENDS = (*BACKENDS, "my_backend")  # a registered-elsewhere name follows the same rule


def _refusal(**changes) -> OptionsError | None:
    try:
        RunOptions(**{"workload": "matmul", **changes}).validated()
    except OptionsError as exc:
        return exc
    return None


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_validation_accepts_exactly_the_modes_the_rule_gives(backend):
    assert set(modes_for(backend)) <= set(MODES) and DEFAULT_MODE in modes_for(backend)
    assert (modes_for(backend) == MODES) is mode_applies(backend)
    for mode in MODES:
        refusal = _refusal(backend=backend, mode=mode)
        assert (refusal is None) is (mode in modes_for(backend)), (mode, refusal)
        if refusal is not None:
            assert refusal.field == "mode"


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_validation_accepts_inductor_options_exactly_where_the_rule_lets_them(backend):
    for mode in modes_for(backend):
        refusal = _refusal(backend=backend, mode=mode, inductor_options={"epilogue_fusion": False})
        assert (refusal is None) is inductor_options_apply(backend, mode), (mode, refusal)
        if refusal is not None:
            assert refusal.field == "inductor_options"


def test_the_mode_rule_is_inductor_only():
    assert [b for b in ALL_BACKENDS if mode_applies(b)] == ["inductor"]
    assert [m for m in MODES if inductor_options_apply("inductor", m)] == [DEFAULT_MODE]


def test_check_compile_settings_gives_the_messages_validated_gives():
    for changes in ({"backend": "aot_eager", "mode": "max-autotune"}, {"backend": "eager", "inductor_options": {"x": 1}},
                    {"mode": "reduce-overhead", "inductor_options": {"x": 1}}, {"mode": "fast"}):
        options = RunOptions(**changes)
        with pytest.raises(OptionsError) as direct:
            check_compile_settings(options.backend, options.mode, options.inductor_options)
        assert str(direct.value) == str(_refusal(**changes))


# ----- rules between workload parameters: the workload's spec owns them ---------------


def test_a_parameter_refusal_names_the_parameters_it_concerns():
    assert _refusal(params={"n": 0}).params == ("n",)
    assert _refusal(params={"size": 3}).params == ("size",)
    divisible = RunOptions(workload="transformer_block", params={"width": 100, "heads": 3})
    with pytest.raises(OptionsError) as info:
        divisible.validated()
    assert str(info.value) == "params: width 100 is not divisible by heads 3"
    assert info.value.params == ("width", "heads")
    assert _refusal(workload="resnet").params == ()
