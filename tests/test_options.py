"""Option validation: every refusal is one line naming the field and what is allowed."""

from __future__ import annotations

import json
import os

import pytest

from tui.engine.catalog import PATH_ECHO_CHARS, WORKLOADS, ParamError, echo, get_workload, split_user_workload
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
    parse_int_option,
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
        ({"dtype": "float64"}, "dtype", "allowed: float32 (fp32), bfloat16 (bf16), float16 (fp16)"),
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
        ({"timeout_s": 0}, "timeout_s", "above 0 and at most 604800 (7 days)"),
        ({"time_budget_s": -1.0}, "time_budget_s", "above 0 and at most 86400 (1 day)"),
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
    options = RunOptions(
        workload="cnn", dynamic=True, precision="tf32", inductor_options={"epilogue_fusion": False}
    ).validated()
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
    assert parse_key_values("   ", "params") == {}  # a blank field: no parameters, as an empty one
    with pytest.raises(OptionsError, match=r"^params: 'a=1,,b=2' has an empty item"):
        parse_key_values("a=1,,b=2", "params")  # dropped without a word before
    with pytest.raises(OptionsError, match="^option: 'nokey' is not key=value"):
        parse_key_values(["nokey"], "option")
    with pytest.raises(OptionsError, match=r"^inductor_options: 'freezing' is not key=value \(allowed: key=value, "
                                           r"e\.g\. freezing=true\)$"):
        parse_key_values(["freezing"], "inductor_options")


def test_user_workload_paths(tmp_path, monkeypatch):
    assert split_user_workload("m.py") == ("m.py", "make_workload")
    assert split_user_workload("dir/m.py:build") == ("dir/m.py", "build")
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "m.py").write_text("")
    monkeypatch.chdir(tmp_path)
    resolved = RunOptions(workload="assets/m.py:build").validated().workload
    assert resolved == f"{tmp_path}/assets/m.py:build"
    with pytest.raises(OptionsError, match="^workload: factory"):
        RunOptions(workload="m.py:not-a-name").validated()


def test_a_user_file_that_cannot_run_is_refused_with_the_options(tmp_path):
    """A missing file started a worker (2 s) only for it to fail the run; a directory, a pipe or an unreadable
    file did the same. Each is refused with the options now, naming the field and what is allowed."""
    folder = tmp_path / "folder.py"
    folder.mkdir()
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "gone.py").symlink_to(tmp_path / "nowhere.py")
    (tmp_path / "file").write_text("")
    allowed = "(allowed: a readable Python file, path/to/file.py[:factory])"
    cases = [(tmp_path / "missing.py", "no such file"), (tmp_path / "no" / "dir" / "m.py", "no such file"),
             (tmp_path / "file" / "m.py", "no such file"), (tmp_path / "gone.py", "no such file"),
             (folder, "is a directory, not a Python file"), (tmp_path / "pipe.py", "is not a regular file")]
    for path, problem in cases:
        for workload in (str(path), f"{path}:build"):
            with pytest.raises(OptionsError) as refused:
                RunOptions(workload=workload).validated()
            assert refused.value.field == "workload"
            assert str(refused.value) == f"workload: {path}: {problem} {allowed}"
    (tmp_path / "ok.py").write_text("")
    assert RunOptions(workload=str(tmp_path / "ok.py")).validated().workload == f"{tmp_path}/ok.py:make_workload"


def test_a_user_file_this_user_cannot_read_is_refused_with_the_options(tmp_path, monkeypatch):
    secret = tmp_path / "secret.py"
    secret.write_text("")
    readable = os.access
    # The file system's answer for a user without read permission (root, as in CI, reads every file).
    monkeypatch.setattr(os, "access", lambda path, mode: False if str(path) == str(secret) else readable(path, mode))
    with pytest.raises(OptionsError, match=r"^workload: .*secret.py: cannot be read \(permission denied\)"):
        RunOptions(workload=str(secret)).validated()


def test_param_coercion_from_text():
    spec = get_workload("mlp")
    assert spec.resolve({"batch": "32", "depth": 2.0}, "cpu") == {"batch": 32, "width": 256, "depth": 2}
    with pytest.raises(ParamError, match="depth: expected int"):
        spec.resolve({"depth": 2.5}, "cpu")


def test_label_is_short_and_complete():
    label = RunOptions(mode="reduce-overhead", fullgraph=True, dtype="bfloat16", precision="tf32").label()
    assert label == "inductor/reduce-overhead fullgraph dyn=auto bf16 tf32"
    assert RunOptions(precision="ieee").label() == "inductor dyn=auto fp32 ieee"
    assert RunOptions().label() == "inductor dyn=auto fp32"  # default precision: unsaid


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
    for changes in (
        {"backend": "aot_eager", "mode": "max-autotune"},
        {"backend": "eager", "inductor_options": {"x": 1}},
        {"mode": "reduce-overhead", "inductor_options": {"x": 1}},
        {"mode": "fast"},
    ):
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


# ----- numeric limits: every refusal states the real range ------------------------------------

TIMEOUT_RANGE = "(allowed: a number of seconds above 0 and at most 604800 (7 days))"
BUDGET_RANGE = "(allowed: a number of seconds above 0 and at most 86400 (1 day), or unset for no budget)"
MEMORY_RANGE = "(allowed: a number of GB above 0 and at most 1000000, or unset for no limit)"


@pytest.mark.parametrize(
    ("field", "value", "shown", "allowed"),
    [
        ("timeout_s", float("inf"), "inf", TIMEOUT_RANGE),
        ("timeout_s", float("-inf"), "-inf", TIMEOUT_RANGE),
        ("timeout_s", float("nan"), "nan", TIMEOUT_RANGE),
        ("timeout_s", 0, "0", TIMEOUT_RANGE),
        ("timeout_s", -1.5, "-1.5", TIMEOUT_RANGE),
        ("timeout_s", 7 * 86_400 + 0.5, "604800.5", TIMEOUT_RANGE),
        ("timeout_s", "nan", "'nan'", TIMEOUT_RANGE),
        ("timeout_s", "abc", "'abc'", TIMEOUT_RANGE),
        ("timeout_s", True, "True", TIMEOUT_RANGE),
        ("timeout_s", None, "None", TIMEOUT_RANGE),
        ("time_budget_s", float("inf"), "inf", BUDGET_RANGE),
        ("time_budget_s", float("nan"), "nan", BUDGET_RANGE),
        ("time_budget_s", 0.0, "0.0", BUDGET_RANGE),
        ("time_budget_s", 86_401, "86401", BUDGET_RANGE),
        ("memory_limit_gb", float("inf"), "inf", MEMORY_RANGE),
        ("memory_limit_gb", float("nan"), "nan", MEMORY_RANGE),
        ("memory_limit_gb", 1_000_001, "1000001", MEMORY_RANGE),
    ],
)
def test_a_number_out_of_range_is_refused_with_the_real_range(field, value, shown, allowed):
    with pytest.raises(OptionsError) as info:
        RunOptions(**{field: value}).validated()
    assert str(info.value) == f"{field}: {shown} is not allowed {allowed}"


@pytest.mark.parametrize(
    ("field", "value"),
    [("timeout_s", 7 * 86_400), ("timeout_s", 1e-3), ("timeout_s", 5), ("time_budget_s", 86_400),
     ("time_budget_s", None), ("memory_limit_gb", 1_000_000), ("memory_limit_gb", None)],
)
def test_the_ends_of_each_range_are_allowed(field, value):
    assert getattr(RunOptions(**{field: value}).validated(), field) == value


# ----- messages that repeat a user's value shorten it ------------------------------------------

LONG = "x" * 10_000
DIGITS = "1" * 10_000


def test_echo_keeps_40_characters_and_counts_the_rest():
    assert echo("a" * 40) == repr("a" * 40)
    assert echo("a" * 41) == f"{'a' * 40!r}… (41 characters)"
    assert echo(DIGITS, plain=True) == f"{'1' * 40}… (10000 characters)"
    assert echo("short", plain=True) == "short" and echo(5) == "5" and echo(float("inf")) == "inf"
    assert echo(list(range(100))) == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1… (390 characters)"
    assert echo(10**5000) == "an integer of 5001 digits"  # beyond Python's limit on digits for str()
    assert echo("p" * 150, plain=True, limit=PATH_ECHO_CHARS) == "p" * 150


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"params": {"n": DIGITS}}, "params"),
        ({"params": {"n": LONG}}, "params"),
        ({"params": {LONG: 1}}, "params"),
        ({"workload": LONG}, "workload"),
        ({"workload": f"/tmp/a.py:{LONG}-"}, "workload"),
        ({"device": LONG}, "device"),
        ({"mode": LONG}, "mode"),
        ({"backend": LONG + "!"}, "backend"),
        ({"backend": "b" * 10_000, "mode": "max-autotune"}, "mode"),
        ({"backend": "b" * 10_000, "inductor_options": {"x": 1}}, "inductor_options"),
        ({"inductor_options": {LONG + "!": 1}}, "inductor_options"),
        ({"dtype": LONG}, "dtype"),
        ({"dynamic": LONG}, "dynamic"),
        ({"iters": 10**5000}, "iters"),
        ({"seed": 10**200}, "seed"),
        ({"timeout_s": LONG}, "timeout_s"),
        ({"memory_limit_gb": LONG}, "memory_limit_gb"),
        ({"python": "/" + LONG}, "python"),
    ],
)
def test_every_refusal_that_repeats_a_value_shortens_it(changes, field):
    base = {"workload": "matmul"}
    base.update(changes)
    with pytest.raises(OptionsError) as info:
        RunOptions(**base).validated()
    message = str(info.value)
    assert info.value.field == field and message.startswith(f"{field}: ")
    assert len(message) < 450, message
    assert "characters)" in message or "digits" in message, message


def test_parsers_shorten_what_they_repeat():
    with pytest.raises(OptionsError) as info:
        parse_key_values([LONG], "params")
    assert str(info.value) == (f"params: {'x' * 40!r}… (10000 characters) is not key=value (allowed: key=value, "
                               "e.g. n=512)")
    with pytest.raises(OptionsError) as info:
        parse_dynamic(LONG)
    assert str(info.value) == f"dynamic: {'x' * 40!r}… (10000 characters) is not allowed (allowed: auto, true, false)"
    with pytest.raises(OptionsError) as info:
        RunOptions.from_dict({LONG: 1})
    assert str(info.value).startswith(f"{'x' * 40}… (10000 characters): unknown option")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (DIGITS, f"iters: {'1' * 40}… (10000 characters) is not allowed (allowed: an integer from 1 to 10000000)"),
        (
            "-" + DIGITS,
            f"iters: -{'1' * 39}… (10001 characters) is not allowed (allowed: an integer from 1 to 10000000)",
        ),
        ("x" * 41, f"iters: {'x' * 40!r}… (41 characters) is not an integer (allowed: an integer from 1 to 10000000)"),
        ("4.5", "iters: '4.5' is not an integer (allowed: an integer from 1 to 10000000)"),
    ],
    ids=["10000-digits", "minus-10000-digits", "41-characters", "a-float"],
)
def test_an_integer_option_typed_as_text(text, message):
    with pytest.raises(OptionsError) as info:
        parse_int_option("iters", text)
    assert str(info.value) == message


def test_an_integer_option_typed_as_text_that_fits():
    assert parse_int_option("iters", " 40 ") == 40
    # in range for int() and out of range for the option: validated() states the range
    with pytest.raises(OptionsError, match=r"^iters: 1{40}… \(41 characters\) is not allowed \(allowed: an integer"):
        RunOptions(iters=parse_int_option("iters", "1" * 41)).validated()


def test_a_key_value_with_too_many_digits_stays_a_number_too_big_not_inf():
    assert parse_key_values([f"n={DIGITS}"], "params") == {"n": DIGITS}  # float() would have made it inf
    assert parse_key_values(["n=12", "x=1e400"], "params") == {"n": 12, "x": float("inf")}
    with pytest.raises(OptionsError) as info:
        RunOptions(workload="matmul", params=parse_key_values([f"n={DIGITS}"], "params")).validated()
    assert str(info.value) == f"params: n: {'1' * 40}… (10000 characters) is above the maximum 65536"


@pytest.mark.parametrize("short, dtype", [("fp32", "float32"), ("bf16", "bfloat16"), ("fp16", "float16")])
def test_a_dtype_may_be_given_by_the_short_name_the_tables_show(short, dtype):
    # Every title reads "inductor dyn=auto fp32 cpu", yet --dtype fp32 was refused.
    options = RunOptions(workload="pointwise", dtype=short).validated()
    assert options.dtype == dtype and short in options.label()
