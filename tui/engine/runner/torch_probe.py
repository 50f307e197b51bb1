"""Which inductor options a worker interpreter's torch has: asked in a subprocess, never imported here.

The question and its reading are one code for every place torch is asked: :func:`run_probe` runs
``python -m tui.engine.worker.tune_probe KEY...`` (:func:`probe_argv`) in an interpreter and keeps
what it left (:class:`ProbeOutput`), and :func:`read_output` turns that into a :class:`TorchOptions`.

* On this machine (:func:`probe_torch`): in the interpreter the runs will use (``--python`` or this one).
* On a Ray cluster's node (:func:`tui.engine.cluster.node.probe_on_node`): the same :func:`run_probe`
  in the node's worker interpreter; its :class:`ProbeOutput` comes back and is read here with the
  same :func:`read_output` (:mod:`tui.engine.cluster.torch_probe`).

Where to ask is the tuner's choice (:func:`tui.engine.tune.probe.ask_torch`). A probe that cannot
run to its end (no torch there, a timeout) is :attr:`TorchOptions.problem`, one line.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.metadata
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tui.typed import JsonRecord

__all__ = ["TorchOptions", "ProbeOutput", "probe_argv", "run_probe", "read_output", "read_report",
           "probe_torch", "stop_probes", "probing", "PROBE_TIMEOUT_S", "PROBE_MODULE", "THIS_MACHINE", "STDERR_KEPT",
           "no_cuda", "cpu_build_here"]

log = logging.getLogger(__name__)

T = TypeVar("T")

PROBE_TIMEOUT_S = 300
"""Importing torch on a busy machine can take a minute; a probe that takes longer than this is given up."""
PROBE_MODULE = "tui.engine.worker.tune_probe"
THIS_MACHINE = "this machine's torch"
""":attr:`TorchOptions.asked` of the probe run here."""
STOP_POLL_S = 0.05
"""How often a cancelled :func:`probing` kills the probes again while its thread has not ended (one may be
starting)."""
STDERR_KEPT = 2000
"""The characters of the probe's stderr kept (its end): a failed probe's last line is its reason."""


def no_cuda(device: str, torch: str | None, asked: str = THIS_MACHINE) -> str:
    """The refusal of a ``cuda`` ``device`` whose torch cannot use CUDA, in one line that a front end puts after
    the device's field (``--device: ...``): the same words wherever it is found out."""
    return f"{device} is not allowed: {asked} ({torch or 'torch'}) cannot use CUDA (allowed: cpu)"


def cpu_build_here() -> str | None:
    """This interpreter's torch version where the version itself says the build has no CUDA (the ``+cpu`` local
    label of PyTorch's CPU wheels), read from the installed package's metadata, torch not imported; None where no
    torch is installed or the build may have CUDA (a run's worker then finds out, as it does on another
    interpreter)."""
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None
    except Exception:  # metadata that cannot be read (a damaged install): the worker finds out
        log.warning("torch's package metadata could not be read", exc_info=True)
        return None
    if not isinstance(version, str):  # a dist-info folder without its METADATA file reads as None
        return None
    label = version.partition("+")[2]
    return version if label.split(".")[0] == "cpu" else None


@dataclass(frozen=True)
class TorchOptions:
    """What the worker's torch said: its version, each option's default, the options it lacks, its modes."""

    torch: str | None = None
    defaults: dict[str, Any] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    modes: dict[str, dict[str, Any]] = field(default_factory=dict)
    problem: str | None = None
    """Why torch could not be asked (None when it was)."""
    asked: str = THIS_MACHINE
    """Whose torch was asked, in words: ``this machine's torch``, ``node gpu-03's torch``."""
    fallback: str | None = None
    """Why the torch asked is this machine's though the runs run on a cluster (one line), else None."""
    cuda: bool | None = None
    """Whether that torch can use a CUDA device (``torch.cuda.is_available()``); None when it did not say."""


@dataclass(frozen=True)
class ProbeOutput(JsonRecord):
    """What the probe's process left: its exit code, its stdout, its stderr's end; or why it never ended."""

    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    problem: str | None = None
    """Why the probe did not run to its end (a timeout, an interpreter that does not start), else None."""


def probe_argv(keys: Sequence[str], python: str | None = None) -> list[str]:
    """The question: the probe's command line in ``python`` (default: this interpreter)."""
    return [python or sys.executable, "-m", PROBE_MODULE, *keys]


def run_probe(keys: Sequence[str], python: str | None = None, timeout: float = PROBE_TIMEOUT_S,
              env: Mapping[str, str] | None = None) -> ProbeOutput:
    """Ask ``python``'s torch about ``keys`` (a subprocess, blocking); ``env``: variables set besides this process's."""
    from tui.engine.runner.launch import make_package_importable

    argv = probe_argv(keys, python)
    run_env = {**os.environ, **(env or {})}
    make_package_importable(argv[0], run_env)
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, env=run_env, start_new_session=True)
    except OSError as exc:
        return ProbeOutput(problem=f"{argv[0]} could not be started: {exc}")
    _running.add(process)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        process.communicate()
        return ProbeOutput(problem=f"torch's options could not be read within {timeout:g} s")
    finally:
        _running.discard(process)
    return ProbeOutput(returncode=process.returncode, stdout=stdout, stderr=stderr[-STDERR_KEPT:])


_running: set[subprocess.Popen[str]] = set()
"""The probes running on this machine (each in a thread of its own, waiting on its process)."""


def stop_probes() -> None:
    """Kill every probe running here (its process group): the caller gave up waiting (Ctrl-C, the app closing), and
    the thread that waits on it then ends at once instead of when torch's import does."""
    for process in list(_running):
        _kill(process)


async def probing(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` in a thread, as :func:`asyncio.to_thread`, for a call that runs probes. Cancelled (Ctrl-C, the
    app closing), it kills them (:func:`stop_probes`) until the thread ends, one started after the cancel too,
    whatever cancels it again meanwhile, and re-raises: an exit then does not wait for torch's import, which the
    loop's shutdown would (it joins the thread)."""
    future = asyncio.ensure_future(asyncio.to_thread(call, *args))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        while not future.done():
            stop_probes()
            try:
                await asyncio.wait({future}, timeout=STOP_POLL_S)
            except asyncio.CancelledError:  # a second Ctrl-C, or the loop's own cancelling at its end: kill on
                continue
        raise


def _kill(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError) as exc:  # it has ended (and its group with it)
        log.debug("the probe %d had ended: %s", process.pid, exc)


def read_output(output: ProbeOutput, asked: str = THIS_MACHINE) -> TorchOptions:
    """The probe's output as :class:`TorchOptions` (``asked``: whose torch it was), a failed probe as its problem."""
    if output.problem is not None:
        return TorchOptions(problem=output.problem, asked=asked)
    if output.returncode != 0:
        tail = [line for line in output.stderr.splitlines() if line.strip()]
        log.warning("the tune probe (%s) failed: %s", asked, output.stderr)
        return TorchOptions(problem=f"torch's options could not be read (exit code {output.returncode}: "
                                    f"{tail[-1] if tail else 'no output'})", asked=asked)
    return dataclasses.replace(read_report(output.stdout), asked=asked)


def read_report(text: str) -> TorchOptions:
    """The probe's last stdout line as :class:`TorchOptions` (a field of the wrong type is left empty)."""
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        data = json.loads(lines[-1]) if lines else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return TorchOptions(problem="the probe printed no report")
    options = data.get("options")
    defaults: dict[str, Any] = dict(options) if isinstance(options, dict) else {}
    missing = tuple(str(k) for k in data.get("missing") or () if isinstance(k, str))
    modes = {str(k): dict(v) for k, v in (data.get("modes") or {}).items() if isinstance(v, dict)} \
        if isinstance(data.get("modes"), dict) else {}
    torch = data.get("torch") if isinstance(data.get("torch"), str) else None
    cuda = data.get("cuda") if isinstance(data.get("cuda"), bool) else None
    return TorchOptions(torch=torch, defaults=defaults, missing=missing, modes=modes, cuda=cuda)


def probe_torch(keys: Sequence[str], python: str | None = None, timeout: float = PROBE_TIMEOUT_S) -> TorchOptions:
    """Ask the worker's torch on this machine about ``keys`` (a subprocess; see the module docstring)."""
    return read_output(run_probe(keys, python, timeout))
