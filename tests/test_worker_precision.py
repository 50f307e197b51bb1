"""The precision option in the worker: ``default`` leaves torch's TF32 flags as a fresh process has them,
``ieee`` and ``tf32`` set them; the flags are read back defensively (torch's two APIs) and the accuracy
tolerance follows the flags in effect, not the option.

The worker tests start a real worker on the CPU (the flags exist on the CPU build) with a user
workload that reads the flags itself while it is built, and compare them with a fresh process's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from tui.engine.options import RunOptions
from tui.engine.protocol import Finished, Started, WorkerWarning

torch = pytest.importorskip("torch")

import test_worker_process  # noqa: E402  (after the torch skip)
from tui.engine.worker import precision  # noqa: E402

# The worker fixtures, shared with test_worker_process (pytest finds them as module attributes).
next_worker = test_worker_process.next_worker
worker_factory = test_worker_process.worker_factory

pytestmark = pytest.mark.torch

READ = "[torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.get_float32_matmul_precision()]"

FLAGS_WORKLOAD = textwrap.dedent(
    f'''
    """Writes torch's TF32 flags, as the workload sees them while it is built, to ``out``."""
    import json

    import torch


    def make_workload(device, dtype, out="", set_cudnn=""):
        with open(out, "w") as handle:
            json.dump({READ}, handle)
        if set_cudnn:
            torch.backends.cudnn.allow_tf32 = set_cudnn == "on"
        return (lambda x: x * 2), (torch.ones(4, device=device, dtype=dtype),)
    '''
)


def _fresh_process_flags() -> list:
    """The three flags in a fresh Python that imported torch and set nothing: torch's own defaults."""
    code = f"import json, torch; print(json.dumps({READ}))"
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def _run_reading_flags(worker_factory, tmp_path, precision_option: str, **params) -> tuple[list, list]:
    """Run the flags workload under ``precision_option``: (the flags it read, the worker's events)."""
    workload = tmp_path / "flags.py"
    workload.write_text(FLAGS_WORKLOAD)
    out = tmp_path / "flags.json"
    worker = worker_factory()
    worker.send(RunOptions(workload=str(workload), params={"out": str(out), **params}, backend="eager",
                           precision=precision_option, warmup=0, iters=2, block_size=1, profile=False))
    events = worker.events_until_end()
    assert isinstance(events[-1], Finished), (events[-1], worker.stderr()[-3000:])
    assert worker.finish() == 0
    return json.loads(out.read_text()), events


@pytest.mark.slow
def test_default_leaves_every_flag_as_a_fresh_process_has_it(worker_factory, tmp_path):
    untouched = _fresh_process_flags()
    seen, events = _run_reading_flags(worker_factory, tmp_path, "default")
    assert seen == untouched
    env = next(e for e in events if isinstance(e, Started)).env
    assert [env.tf32_matmul, env.tf32_cudnn, env.float32_matmul_precision] == untouched  # what the row records
    assert not [e for e in events if isinstance(e, WorkerWarning) and "precision flags" in e.message]


@pytest.mark.slow
@pytest.mark.parametrize(("option", "expected"), [("ieee", [False, False, "highest"]), ("tf32", [True, True, "high"])])
def test_ieee_and_tf32_set_both_flags(worker_factory, tmp_path, option, expected):
    seen, events = _run_reading_flags(worker_factory, tmp_path, option)
    assert seen == expected
    env = next(e for e in events if isinstance(e, Started)).env
    assert [env.tf32_matmul, env.tf32_cudnn, env.float32_matmul_precision] == expected


@pytest.mark.slow
def test_a_workload_that_changes_the_flags_is_told(worker_factory, tmp_path):
    _, events = _run_reading_flags(worker_factory, tmp_path, "ieee", set_cudnn="on")
    warnings = [e.message for e in events if isinstance(e, WorkerWarning)]
    assert any("changed torch's precision flags while it was built (tf32_cudnn false -> true)" in w
               for w in warnings), warnings


# ----- reading the flags: each on its own, the new API where an old getter raises ---------------


class _Raising:
    """An old-API flag whose getter raises, as torch's does once a program mixed the two APIs."""

    def __get__(self, obj, owner):
        raise RuntimeError("you have used a mix of the legacy and new APIs")


def _backend(fp32_precision: str, **fields):
    """A backend namespace with ``fp32_precision``; ``allow_tf32`` raises unless given."""
    cls = type("Backend", (), {"allow_tf32": fields.pop("allow_tf32", _Raising())})
    node = cls()
    node.fp32_precision = fp32_precision
    for name, value in fields.items():
        setattr(node, name, value)
    return node


def _fake_torch(matmul: str, cudnn: str, conv: str, top: str = "none", **matmul_fields):
    def no_precision():
        raise RuntimeError("you have used a mix of the legacy and new APIs")

    backends = SimpleNamespace(fp32_precision=top, cuda=SimpleNamespace(matmul=_backend(matmul, **matmul_fields)),
                               cudnn=_backend(cudnn, conv=_backend(conv)),
                               mkldnn=_backend("none", matmul=_backend("bf16"), conv=_backend("none")))
    return SimpleNamespace(backends=backends, get_float32_matmul_precision=no_precision, __version__="9.9")


def test_an_old_flag_that_raises_is_read_from_the_new_api(monkeypatch):
    monkeypatch.setattr(precision, "torch", _fake_torch(matmul="tf32", cudnn="none", conv="ieee"))
    assert precision.read_flags() == {
        "tf32_matmul": True, "tf32_cudnn": False, "float32_matmul_precision": None,
        "fp32_precision_matmul": "tf32", "fp32_precision_cudnn": "none",
        "fp32_precision_mkldnn_matmul": "bf16", "fp32_precision_mkldnn_conv": "none",  # the CPU's, as read
    }  # fmt: skip


def test_the_new_apis_none_inherits_and_unknown_stays_unknown(monkeypatch):
    monkeypatch.setattr(precision, "torch", _fake_torch(matmul="none", cudnn="none", conv="none", top="tf32"))
    assert precision.read_flags()["tf32_matmul"] is True and precision.read_flags()["tf32_cudnn"] is True
    monkeypatch.setattr(precision, "torch", _fake_torch(matmul="none", cudnn="none", conv="none"))
    assert precision.read_flags()["tf32_matmul"] is None and precision.read_flags()["tf32_cudnn"] is None


def test_an_old_flag_that_reads_is_taken_as_it_is(monkeypatch):
    monkeypatch.setattr(precision, "torch", _fake_torch(matmul="ieee", cudnn="none", conv="none", allow_tf32=True))
    assert precision.read_flags()["tf32_matmul"] is True


def test_the_real_flags_read_as_torch_reports_them():
    flags = precision.read_flags()
    assert flags["tf32_matmul"] == torch.backends.cuda.matmul.allow_tf32
    assert flags["tf32_cudnn"] == torch.backends.cudnn.allow_tf32
    assert flags["float32_matmul_precision"] == torch.get_float32_matmul_precision()
    mkldnn = getattr(torch.backends.mkldnn, "matmul", None)  # torch 2.9's new API
    assert flags["fp32_precision_mkldnn_matmul"] == (str(mkldnn.fp32_precision) if mkldnn is not None else None)


def _recording(fake, sets: list) -> None:
    """Make the fake's two old flags record every value set on them (and read back what was set)."""
    for name, node in (("matmul", fake.backends.cuda.matmul), ("cudnn", fake.backends.cudnn)):
        state = {"value": None}

        def setter(self, value, name=name, state=state):
            sets.append((name, value))
            state["value"] = value

        type(node).allow_tf32 = property(lambda self, state=state: state["value"], setter)


@pytest.mark.parametrize(("option", "expected"), [
    ("default", []), ("ieee", [("matmul", False), ("cudnn", False)]), ("tf32", [("matmul", True), ("cudnn", True)]),
])  # fmt: skip
def test_apply_sets_both_flags_or_none(monkeypatch, option, expected):
    fake = _fake_torch(matmul="none", cudnn="none", conv="none")
    sets: list = []
    _recording(fake, sets)
    monkeypatch.setattr(precision, "torch", fake)
    precision.apply(option)
    assert sets == expected


def test_a_precision_torch_does_not_take_fails_the_run(monkeypatch):
    """Old setters that no longer set what they name: the run fails rather than measure another precision."""
    fake = _fake_torch(matmul="ieee", cudnn="none", conv="ieee")
    monkeypatch.setattr(precision, "torch", fake)
    type(fake.backends.cuda.matmul).allow_tf32 = property(lambda self: False, lambda self, value: None)
    type(fake.backends.cudnn).allow_tf32 = property(lambda self: False, lambda self, value: None)
    with pytest.raises(precision.OptionsError) as info:
        precision.apply("tf32")
    assert str(info.value) == ("precision: tf32 did not take in torch 9.9: tf32_matmul, tf32_cudnn read false "
                               "after setting it")


def test_tf32_is_in_effect_on_cuda_only_and_for_either_flag():
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    torch_defaults = {"tf32_matmul": False, "tf32_cudnn": True}  # a fresh process: cuDNN TF32 on
    assert precision.tf32_in_effect(torch_defaults, cuda) is True  # so a CNN under default gets TF32's tolerance
    assert precision.tf32_in_effect({"tf32_matmul": True, "tf32_cudnn": False}, cuda) is True
    assert precision.tf32_in_effect({"tf32_matmul": False, "tf32_cudnn": False}, cuda) is False
    assert precision.tf32_in_effect({"tf32_matmul": None, "tf32_cudnn": None}, cuda) is False
    assert precision.tf32_in_effect(torch_defaults, cpu) is False
