"""Load a user's workload from a Python file (worker only: the file runs nowhere else).

The contract
------------
``--workload path/to/file.py`` (or ``path/to/file.py:factory``) names a Python file that
defines a factory, by default ``make_workload``::

    def make_workload(device: torch.device, dtype: torch.dtype, **params):
        model = MyModel().to(device=device, dtype=dtype)
        x = torch.randn(64, 128, device=device, dtype=dtype)
        return model, (x,)

* It is called as ``make_workload(device, dtype, **params)`` after
  ``torch.manual_seed(seed)``. ``params`` are the run's ``--param key=value`` pairs,
  passed as keyword arguments; convert them yourself (``int(width)``), since they may
  arrive as strings. Build everything on ``device`` in ``dtype``: compile-lab casts
  nothing in a user workload.
* It returns ``(callable, inputs)``: ``callable`` is an ``nn.Module`` or a function, and
  ``inputs`` a tuple of positional arguments (a lone tensor counts as a 1-tuple). Or it
  returns a dict ``{"model" or "fn": callable, "inputs": tuple, "label": str}`` where
  ``label`` is optional and names the input set in per-shape statistics.
* Eager calls ``callable(*inputs)``; compiled calls ``torch.compile(callable, ...)(*inputs)``,
  the same object on both sides, exactly as returned. For inference, freeze parameters
  (``model.requires_grad_(False)``) or wrap your own ``torch.no_grad()``; a function that
  changes state (e.g. an optimizer step) changes it on both sides. One extra eager call
  counts FLOPs.
* The file's folder is put on ``sys.path``, so it may import modules next to it.

Anything that goes wrong raises :class:`UserWorkloadError` with one line naming the file
(and the line where known): a missing file (or a directory in its place), a syntax error, an exception while importing
it, no such factory, an exception inside the factory, or a return value of the wrong shape.
"""

from __future__ import annotations

import inspect
import sys
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from tui.engine.catalog import split_user_workload, user_file_problem
from tui.engine.worker.failures import one_line
from tui.engine.worker.built import BuiltWorkload, inference_workload

__all__ = ["UserWorkloadError", "load_user_workload", "CONTRACT"]

RETURNS = ("returning (callable, inputs_tuple) or {'model' or 'fn': callable, 'inputs': tuple, 'label': str "
           "(optional)}")
"""What a factory returns, as a refusal of a factory the user named (``file.py:build``) says it."""
CONTRACT = f"expected make_workload(device, dtype, **params) {RETURNS}"


class UserWorkloadError(Exception):
    """A user workload file could not be loaded; the message is one line naming the file."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


def _describe_exception(exc: BaseException) -> str:
    message = one_line(str(exc), 200)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _line_in(exc: BaseException, filename: str) -> int | None:
    """The line of the innermost traceback frame that lies in ``filename``."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    return line


def _describe_value(value: Any) -> str:
    """What a factory returned, in words: ``a tuple of 3 (Linear, Tensor, int)``, ``an int``."""
    if isinstance(value, (tuple, list)):
        inner = ", ".join(type(v).__name__ for v in value[:4])
        more = ", ..." if len(value) > 4 else ""
        return f"a {type(value).__name__} of {len(value)} ({inner}{more})"
    if isinstance(value, dict):
        return f"a dict with keys {sorted(map(str, value))}"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _execute(path: Path, shown: str) -> types.ModuleType:
    """Run the file as a fresh module; syntax and import errors become UserWorkloadError."""
    filename = str(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserWorkloadError(f"{shown}: cannot read it ({_describe_exception(exc)})") from exc
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as exc:
        raise UserWorkloadError(f"{shown}:{exc.lineno}: syntax error: {exc.msg}") from exc
    name = f"compile_lab_user_{abs(hash(filename)):x}"
    module = types.ModuleType(name)
    module.__file__ = filename
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    # registered before running, so dataclasses and pickling inside the file can find it
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except Exception as exc:
        del sys.modules[name]
        line = _line_in(exc, filename)
        where = f"{shown}:{line}" if line else shown
        raise UserWorkloadError(f"{where}: importing it raised {_describe_exception(exc)}") from exc
    return module


def _unpack(result: Any, shown: str, factory: str) -> tuple[Callable, tuple, str | None]:
    """Check the factory's return value: (callable, inputs, label) or UserWorkloadError."""
    target = inputs = label = None
    if isinstance(result, dict):
        target = result.get("model", result.get("fn"))
        inputs, label = result.get("inputs"), result.get("label")
    elif isinstance(result, (tuple, list)) and len(result) == 2:
        target, inputs = result
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    elif isinstance(inputs, list):
        inputs = tuple(inputs)
    if not callable(target) or not isinstance(inputs, tuple) or not isinstance(label, (str, type(None))):
        raise UserWorkloadError(f"{shown}: {factory} returned {_describe_value(result)}; {CONTRACT}")
    return target, inputs, label


def _functions_note(module: Any, shown: str) -> str:
    """``; its functions: build, helper (name one after a colon: model.py:build)``: the public functions the file
    defines (a misspelt factory's name is among them) and how to name one, or nothing."""
    names = [name for name, value in vars(module).items() if inspect.isfunction(value)
             and getattr(value, "__module__", None) == module.__name__ and not name.startswith("_")]
    if not names:
        return ""
    listed = f"{', '.join(names[:6])}{', ...' if len(names) > 6 else ''}"
    return f"; its functions: {listed} (name one after a colon: {shown}:{names[0]})"


def _check_params(make: Callable, shown: str, factory: str, params: dict[str, Any]) -> None:
    """A ``--param`` the factory cannot take: one line naming it and the factory's own parameters.

    Called with it, the factory raised Python's ``got an unexpected keyword argument``, which names neither
    the flag nor what would do. A factory with ``**params`` takes every name, and one whose signature cannot be
    read is called as it is.
    """
    try:
        signature = inspect.signature(make)
    except (TypeError, ValueError):
        return
    parameters = list(signature.parameters.values())
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    try:
        taken = signature.bind_partial(None, None).arguments  # what device and dtype fill (*args too)
    except TypeError:  # it cannot take the two: the call says so
        return
    named = [p.name for p in parameters if p.name not in taken
             and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    unknown = [key for key in params if key not in named]
    if unknown:
        allowed = ", ".join(named) if named else "none: it takes (device, dtype) alone"
        raise UserWorkloadError(f"{shown}: --param {unknown[0]}: {factory} has no parameter {unknown[0]!r} "
                                f"(allowed: {allowed})")


def load_user_workload(options: Any, device: torch.device, dtype: torch.dtype) -> BuiltWorkload:
    """Import the file ``options.workload`` names, call its factory, wrap the result.

    Raises :class:`UserWorkloadError` (one line, naming the file) on any problem with
    the file or what its factory returns.
    """
    shown, factory = split_user_workload(options.workload)
    path = Path(shown).expanduser().resolve()
    problem = user_file_problem(str(path))  # checked with the options too; a file may go in between
    if problem is not None:
        raise UserWorkloadError(f"{shown}: {problem} (a user workload is path/to/file.py[:factory]; "
                                f"{CONTRACT})")
    module = _execute(path, shown)
    make = getattr(module, factory, None)
    if not callable(make):
        raise UserWorkloadError(f"{shown} has no function {factory}(device, dtype, **params) {RETURNS}"
                                f"{_functions_note(module, shown)}")
    _check_params(make, shown, factory, dict(options.params))
    torch.manual_seed(options.seed)
    try:
        result = make(device, dtype, **dict(options.params))
    except Exception as exc:
        line = _line_in(exc, str(path))
        where = f"{shown}:{line}" if line else shown
        raise UserWorkloadError(
            f"{where}: {factory}(device, dtype, **params) raised {_describe_exception(exc)}"
        ) from exc
    target, inputs, label = _unpack(result, shown, factory)
    # outputs are unknown until the workload runs, so bytes_per_call is not guessed
    return inference_workload(target, [inputs], None, labels=[label] if label else None)
