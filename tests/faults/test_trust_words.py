"""Trust, words (issue 24, finding 10): what a workload did is said in its own words.

A workload that calls ``sys.exit`` (or raises SystemExit) or raises KeyboardInterrupt in its factory
or its forward read "crash: worker exited with code 0" (or "worker crashed (signal 2)"); a directory
given as the workload file read "no such file"; a forward that is a generator function read as a
0.07x speedup blamed on "non-deterministic kernels". Each now has its own one-line message: the
classification and the checks in-process, then each case once through a real worker and the
engine's runner (``slow``: the four runs share one runner, so its warm spare saves the imports).
"""

from __future__ import annotations

import asyncio
import os

import pytest

from fault_helpers import write_workload
from tui.engine.options import OptionsError, RunOptions
from tui.engine.store.results import RunRecord
from tui.engine.runner import WorkerRunner
from tui.engine.worker.failures import classify

TINY = dict(backend="eager", warmup=1, iters=4, block_size=2, profile=False)
RUN_LIMIT_S = 180.0

EXIT_IN_FACTORY = """
    import sys


    def make_workload(device, dtype):
        sys.exit(0)
"""

SYSTEM_EXIT_IN_FORWARD = """
    import torch


    def forward(x):
        raise SystemExit(3)


    def make_workload(device, dtype):
        return forward, (torch.ones(4, device=device, dtype=dtype),)
"""

INTERRUPT_IN_FORWARD = """
    import torch


    def forward(x):
        raise KeyboardInterrupt


    def make_workload(device, dtype):
        return forward, (torch.ones(4, device=device, dtype=dtype),)
"""

GENERATOR_FORWARD = """
    import torch


    def doubled(x):
        yield x * 2


    def make_workload(device, dtype):
        return doubled, (torch.ones(4, device=device, dtype=dtype),)
"""


# ----- in-process ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "stage", "message"),
    [
        (SystemExit(0), "building", "the workload called sys.exit(0) while it was being built: SystemExit ends the "
                                    "worker, so a workload returns its result or raises an error instead"),
        (SystemExit(), "eager", "the workload called sys.exit() in its eager call: SystemExit ends the worker, so a "
                                "workload returns its result or raises an error instead"),
        (SystemExit("bye"), "compiled", "the workload called sys.exit('bye') in a compiled call: SystemExit ends the "
                                        "worker, so a workload returns its result or raises an error instead"),
        (KeyboardInterrupt(), "eager", "the workload raised KeyboardInterrupt in its eager call: no Ctrl-C reaches "
                                       "the worker, so the workload's code raised it (or a SIGINT was sent to the "
                                       "worker's process)"),
    ],
    ids=["exit-0-building", "exit-none-eager", "exit-text-compiled", "interrupt-eager"],
)
def test_an_exit_the_workload_asked_for_is_said_in_its_own_words(exc, stage, message):
    failure = classify(exc, stage)
    assert (failure.kind, failure.message) == ("runtime_error", message)
    assert "\n" not in failure.message


def _raised_through(tmp_path, library_code: str, user_code: str) -> BaseException:
    """The exception of ``model.forward`` in a user's file ``model.py`` that calls ``lib/helper.py``."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "helper.py").write_text(library_code)
    (tmp_path / "model.py").write_text(user_code)
    helper: dict = {}
    exec(compile(library_code, str(lib / "helper.py"), "exec"), helper)
    model: dict = {"check": helper["check"]}
    exec(compile(user_code, str(tmp_path / "model.py"), "exec"), model)
    try:
        model["forward"](2)
    except ValueError as exc:
        return exc
    raise AssertionError("forward did not raise")


def test_an_error_in_the_workloads_eager_call_names_its_file_and_line(tmp_path):
    """A forward that raises read 'the workload raised ValueError: ...', with no word of where."""
    from tui.engine.worker.failures import _Libraries, workload_frame

    library = "def check(x):\n    raise ValueError(f'bad width {x}')\n"
    user = "def forward(x):\n    y = x + 1\n    return check(y)\n"
    exc = _raised_through(tmp_path, library, user)
    # the innermost frame is the library's; the one named is the workload's own, which called it
    libraries = _Libraries(packages=(str((tmp_path / "lib").resolve()),), stdlib=(), site=())
    assert workload_frame(exc, libraries) == f"{tmp_path / 'model.py'}:3 in forward"
    failure = classify(exc, "eager")  # the library here is not one compile-lab knows: its frame is named
    assert failure.kind == "runtime_error" and "\n" not in failure.message
    assert failure.message == (f"the workload raised ValueError at {tmp_path / 'lib' / 'helper.py'}:2 in check: "
                               "bad width 3")
    assert classify(exc, "compiled").message == "the compiled code raised ValueError: bad width 3"


def test_an_error_with_no_frame_of_the_workloads_own_says_no_place():
    try:
        int("x")  # raised inside the interpreter, called from this test's file, which is no library
    except ValueError as exc:
        raised = exc
    from tui.engine.worker.failures import _Libraries, workload_frame

    here = os.path.dirname(os.path.realpath(__file__))
    assert workload_frame(raised, _Libraries(packages=(here,), stdlib=(), site=())) == ""
    assert workload_frame(raised, _Libraries(packages=(), stdlib=(), site=())).startswith(f"{__file__}:")


def test_a_bad_option_is_its_one_line_without_compile_labs_own_traceback():
    # run --device cuda on a CPU box: the worker's device check raises OptionsError; the details showed the
    # worker's own stack under the one line that says it all
    try:
        raise OptionsError("device", "cuda is not available: no CUDA (allowed: cpu)")
    except OptionsError as exc:
        failure = classify(exc, stage="other")
    assert (failure.kind, failure.message) == ("bad_options", "device: cuda is not available: no CUDA (allowed: cpu)")
    assert failure.detail == ""


@pytest.mark.torch
def test_a_directory_or_a_pipe_as_the_workload_file_is_said_to_be_one(tmp_path):
    torch = pytest.importorskip("torch")
    from tui.engine.worker.user_loader import UserWorkloadError, load_user_workload

    folder = tmp_path / "model.py"
    folder.mkdir()
    pipe = tmp_path / "pipe.py"
    os.mkfifo(pipe)
    for path, words in ((folder, "is a directory, not a Python file"), (pipe, "is not a regular file"),
                        (tmp_path / "missing.py", "no such file")):
        options = RunOptions(workload=str(path))  # the options refuse it first; the loader, for one gone since
        with pytest.raises(UserWorkloadError) as refused:
            load_user_workload(options, torch.device("cpu"), torch.float32)  # a pipe is never opened: no hang
        assert str(refused.value).startswith(f"{path}: {words} (a user workload is path/to/file.py[:factory]; ")


@pytest.mark.torch
def test_a_generator_or_a_coroutine_returned_by_forward_is_refused_in_one_line():
    pytest.importorskip("torch")
    from tui.engine.worker.failures import RunFailed
    from tui.engine.worker.measure import refuse_lazy_output

    def doubled(x):
        yield x * 2

    async def later(x):
        return x

    async def stream(x):
        yield x

    cases = ((doubled(1), "forward returns a generator: test_a_generator_or_a_coroutine_returned_by_forward_is_refused_"
                          "in_one_line.<locals>.doubled is a generator function (it yields)"),
             (later(1), "forward returns a coroutine: test_a_generator_or_a_coroutine_returned_by_forward_is_refused_"
                        "in_one_line.<locals>.later is an async function"),
             (stream(1), "forward returns a generator: "))
    for output, start in cases:
        with pytest.raises(RunFailed) as refused:
            refuse_lazy_output(output)
        assert refused.value.failure.kind == "workload_error"
        assert refused.value.failure.message.startswith(start), refused.value.failure.message
        assert refused.value.failure.message.endswith("so calling it never runs its body and there is nothing to "
                                                      "time; return the result instead")
    for output in (None, 1.5, (1, 2), [x for x in range(2)], {"a": 1}):
        refuse_lazy_output(output)  # a result, even an odd one, is the accuracy check's business


# ----- through a real worker ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, RunRecord]:
    """Each workload above once, one after another on one runner (its warm spare skips the next import)."""
    directory = tmp_path_factory.mktemp("trust-words")
    workloads = {"exit_in_factory": EXIT_IN_FACTORY, "system_exit_in_forward": SYSTEM_EXIT_IN_FORWARD,
                 "interrupt_in_forward": INTERRUPT_IN_FORWARD, "generator_forward": GENERATOR_FORWARD}

    async def run_all() -> dict[str, RunRecord]:
        records = {}
        async with WorkerRunner(sample_host=False) as runner:
            for name, source in workloads.items():
                path = write_workload(directory, f"{name}.py", source)
                record = RunRecord.new(RunOptions(workload=str(path), **TINY).validated())
                records[name] = await asyncio.wait_for(runner.run(record), RUN_LIMIT_S)
        return records

    return asyncio.run(run_all())


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.parametrize(
    ("name", "kind", "message"),
    [
        ("exit_in_factory", "runtime_error", "the workload called sys.exit(0) while it was being built: "),
        ("system_exit_in_forward", "runtime_error", "the workload called sys.exit(3) in its eager call: "),
        ("interrupt_in_forward", "runtime_error", "the workload raised KeyboardInterrupt in its eager call: "),
        ("generator_forward", "workload_error", "forward returns a generator: doubled is a generator function "),
    ],
)
def test_a_real_worker_says_what_the_workload_did(runs, name, kind, message):
    record = runs[name]
    assert (record.status, record.error_kind) == ("failed", kind), (record.error_message, record.error_detail)
    assert record.error_message.startswith(message), record.error_message
    assert "worker exited with code" not in record.error_message and "non-deterministic" not in record.error_message
    assert not record.samples["compiled"]  # nothing was timed on the compiled side
