"""Which of the catalog's inductor options the worker's torch has: asked in a subprocess, never imported here.

:func:`probe_torch` runs ``python -m tui.engine.worker.tune_probe KEY...`` in the interpreter the
runs will use (``--python`` or this one) and reads its JSON line into a :class:`TorchOptions`.
When it cannot (no torch there, a timeout), the tuner goes on with the catalog as it is and a
note: a run whose option torch lacks then fails, and is listed with its reason.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TorchOptions", "probe_torch", "read_report", "PROBE_TIMEOUT_S"]

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 300
"""Importing torch on a busy machine can take a minute; a probe that takes longer than this is given up."""


@dataclass(frozen=True)
class TorchOptions:
    """What the worker's torch said: its version, each option's default, the options it lacks, its modes."""

    torch: str | None = None
    defaults: dict[str, Any] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    modes: dict[str, dict[str, Any]] = field(default_factory=dict)
    problem: str | None = None
    """Why torch could not be asked (None when it was)."""


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
    return TorchOptions(torch=torch, defaults=defaults, missing=missing, modes=modes)


def probe_torch(keys: Sequence[str], python: str | None = None, timeout: float = PROBE_TIMEOUT_S) -> TorchOptions:
    """Ask the worker's torch about ``keys`` (a subprocess; see the module docstring)."""
    from tui.engine.runner.launch import make_package_importable

    argv = [python or sys.executable, "-m", "tui.engine.worker.tune_probe", *keys]
    env = dict(os.environ)
    make_package_importable(argv[0], env)
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                              timeout=timeout, start_new_session=True, check=False)
    except subprocess.TimeoutExpired:
        return TorchOptions(problem=f"torch's options could not be read within {timeout:g} s")
    except OSError as exc:
        return TorchOptions(problem=f"{argv[0]} could not be started: {exc}")
    if done.returncode != 0:
        tail = [line for line in done.stderr.splitlines() if line.strip()]
        log.warning("the tune probe failed: %s", done.stderr[-2000:])
        return TorchOptions(problem=f"torch's options could not be read (exit code {done.returncode}: "
                                    f"{tail[-1] if tail else 'no output'})")
    return read_report(done.stdout)
