"""The reproduce command (issue 14 item 10): a run's options as a ``compile-lab run ...`` line, and back.

The line is parsed by the command line's own parser: for every combination hypothesis makes
(odd text included: spaces, quotes, a leading dash) it gives back the same options.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui.cli.parse import configs_from_args, options_from_args
from tui.cli.parser import build_parser
from tui.engine.runner import torch_probe
from tui.engine.store.export import write_json
from tui.engine.options import BACKENDS, DTYPES, MODES, PRECISIONS, RunOptions
from tui.engine.store.reproduce import _FLAGS, reproduce_command
from tui.engine.store.results import RunRecord
from tui.engine.measure.verdict import LIMIT_NAMES


_PARSER = build_parser()
"""One parser for every example: building it costs more than parsing a line, and parsing leaves it as it was."""


def _parsed(line: str) -> RunOptions:
    words = shlex.split(line)
    assert words[:2] == ["compile-lab", "run"]
    return options_from_args(_PARSER.parse_args(words[1:]))


# Text as a user could give it: no surrounding blanks (the parser strips them), any other character.
_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=12) \
    .filter(lambda s: s == s.strip())
_word = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
# A key=value item's value: what parse_key_values reads back as itself (text that reads as a number or
# true/false cannot come from the parser, so it is not made here).
_item_text = _text.filter(lambda s: _reads_as_text(s))
_item = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False), st.booleans(),
                  _item_text)
_positive = st.floats(min_value=1e-6, max_value=1e5, allow_nan=False)


def _reads_as_text(text: str) -> bool:
    from tui.engine.options import parse_key_values

    return parse_key_values([f"k={text}"], "params")["k"] == text


_options = st.builds(
    RunOptions,
    workload=st.one_of(st.sampled_from(["pointwise", "matmul", "cnn"]), _text.map(lambda s: f"/tmp/{s}.py:make")),
    params=st.dictionaries(_word, _item, max_size=3),
    backend=st.sampled_from(BACKENDS + ("my.backend",)),
    mode=st.sampled_from(MODES),
    inductor_options=st.dictionaries(st.sampled_from(["max_autotune_gemm", "cpp.cxx", "triton.cudagraphs"]), _item,
                                     max_size=2),
    fullgraph=st.booleans(),
    dynamic=st.sampled_from([None, True, False]),
    dtype=st.sampled_from(DTYPES),
    precision=st.sampled_from(PRECISIONS),
    device=st.sampled_from(["cpu", "cuda", "cuda:1", "cuda:GPU-8d4f0000-1111"]),
    warmup=st.integers(0, 100_000),
    iters=st.integers(1, 10_000_000),
    block_size=st.integers(1, 100_000),
    time_budget_s=st.one_of(st.none(), _positive),
    target_ci=st.one_of(st.none(), st.floats(min_value=1e-4, max_value=0.5)),
    noise_threshold=st.floats(min_value=1e-4, max_value=0.5),
    noise_limits=st.dictionaries(st.sampled_from(LIMIT_NAMES), _positive, max_size=2),
    l2_flush=st.booleans(),
    cold_compile=st.booleans(),
    timeout_s=_positive,
    memory_limit_gb=st.one_of(st.none(), _positive),
    python=st.one_of(st.none(), _text, st.just("-x"), st.just("/opt/my python/bin/python3")),
    train=st.booleans(),
    compile_optimizer=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
    profile=st.booleans(),
    trace=st.booleans(),
    torch_trace=st.booleans(),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_options)
def test_the_line_parses_back_to_the_same_options(options):
    assert _parsed(reproduce_command(options)) == options


@settings(max_examples=60, deadline=None)
@given(workload=st.sampled_from(["pointwise", "matmul", "cnn", "mlp", "transformer_block"]),
       backend=st.sampled_from(["inductor", "aot_eager"]), mode=st.sampled_from(MODES),
       dynamic=st.sampled_from([None, True, False]), iters=st.integers(1, 500), device=st.sampled_from(["cpu", "cuda"]))
def test_a_validated_run_is_reproduced_by_the_command_line_as_a_user_runs_it(workload, backend, mode, dynamic,
                                                                              iters, device):
    options = RunOptions(workload=workload, backend=backend, mode=mode if backend == "inductor" else "default",
                         dynamic=dynamic, iters=iters, device=device).validated()
    args = _PARSER.parse_args(shlex.split(reproduce_command(options))[1:])
    with mock.patch.object(torch_probe, "cpu_build_here", return_value=None):  # where the run ran: a GPU's torch
        assert configs_from_args(args) == [options]


def test_only_options_that_differ_from_their_defaults_are_written():
    assert reproduce_command(RunOptions()) == "compile-lab run"
    options = RunOptions(workload="cnn", params={"batch": 64}, mode="reduce-overhead", dynamic=True, timeout_s=30.0,
                         memory_limit_gb=2.5, profile=False)
    assert reproduce_command(options) == ("compile-lab run --workload cnn --param batch=64 --mode reduce-overhead "
                                          "--dynamic true --timeout 30 --memory-limit 2.5 --no-profile")
    assert reproduce_command(options, repeat="auto").endswith(" --repeat auto")
    assert reproduce_command(options, repeat=3).endswith(" --repeat 3")


def test_text_is_shell_quoted_and_a_leading_dash_is_joined_to_its_flag():
    line = reproduce_command(RunOptions(workload="/tmp/my model's.py:make", python="-x", params={"name": "a b"}))
    assert line == ("compile-lab run --workload '/tmp/my model'\"'\"'s.py:make' --param 'name=a b' --python=-x")
    assert _parsed(line) == RunOptions(workload="/tmp/my model's.py:make", python="-x", params={"name": "a b"})


def test_every_option_has_its_flag():
    assert list(_FLAGS) == [name for name in _FLAGS if name in {f.name for f in dataclasses.fields(RunOptions)}]
    assert set(_FLAGS) == {f.name for f in dataclasses.fields(RunOptions)}


def test_the_json_export_has_each_runs_command_and_old_records_still_load(tmp_path):
    options = RunOptions(workload="matmul", params={"n": 64}, iters=10, python=sys.executable).validated()
    record = RunRecord.new(options)
    record.fail("crash", "stored by the test")
    path = write_json([record], tmp_path / "runs.json")
    (run,) = json.loads(path.read_text())["runs"]
    assert run["command"] == reproduce_command(options)
    assert _parsed(run["command"]) == options
    loaded, problems = RunRecord.decode(run)  # a record with the field loads
    assert loaded.options == options and not problems
    del run["command"]
    loaded, problems = RunRecord.decode(run)  # and one from before it
    assert loaded.options == options and not problems
