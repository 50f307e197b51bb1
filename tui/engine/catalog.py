"""The built-in workloads as plain data: names, descriptions and typed parameters.

This module never imports torch: the app and the CLI read it to build pickers and
validate input. The code that builds the tensors and models lives in
``tui.engine.worker.workloads`` and runs only inside the worker process.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "echo",
    "ECHO_CHARS",
    "PATH_ECHO_CHARS",
    "ParamSpec",
    "ParamRule",
    "WorkloadSpec",
    "WORKLOADS",
    "get_workload",
    "train_workloads",
    "is_user_workload",
    "split_user_workload",
    "user_file_problem",
    "DEFAULT_FACTORY",
    "ParamError",
]


#: How many characters of a user's value a message repeats; the rest is counted, not shown.
ECHO_CHARS = 40
#: The same for a path (an interpreter, a workload file), whose useful part is often past 40 characters.
PATH_ECHO_CHARS = 200
_WHOLE_NUMBER_RE = re.compile(r"^[+-]?\d+$")


def echo(value: Any, *, plain: bool = False, limit: int = ECHO_CHARS) -> str:
    """``value`` as a refusal repeats it: its repr (``plain``: as text), cut after ``limit`` characters.

    A string keeps its quotes around what is shown, and its length is the string's own:
    ``'1111…'… (10000 characters)``. Every message that repeats what a user typed, pasted or
    saved goes through here (options, workload parameters, the picker), so a pasted 10,000-digit
    number does not fill the screen. A path gets ``limit=PATH_ECHO_CHARS``.
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return value if plain else repr(value)
        head = value[:limit]
        return f"{head if plain else repr(head)}… ({len(value)} characters)"
    try:
        text = str(value) if plain else repr(value)
    except ValueError:  # an int beyond Python's limit on digits for str()
        if isinstance(value, int):
            return f"an integer of {int(math.log10(abs(value))) + 1} digits"
        return f"a {type(value).__name__} that cannot be shown"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


class ParamError(ValueError):
    """A workload parameter was refused; the message names the parameter and what is allowed.

    ``params`` names the parameters the refusal concerns (the first is the one to correct),
    so a front end can mark them without reading the message; empty for an unknown workload.
    """

    def __init__(self, message: str, params: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.params = params


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = value.strip().lower() if isinstance(value, str) else None
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError(value)


def _to_int(value: Any) -> int:
    # int() would quietly truncate 2.5 and accept True.
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(value)
    return int(value.strip()) if isinstance(value, str) else int(value)


_CONVERTERS: dict[type, Callable[[Any], Any]] = {bool: _to_bool, int: _to_int, float: float}


def _limit(value: float) -> str:
    """A parameter's limit as a user types it: ``1048576``, not ``1.04858e+06``; ``0.5``."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True)
class ParamSpec:
    """One typed workload parameter with its defaults and limits.

    ``default`` is used on the CPU (small enough to finish in seconds),
    ``gpu_default`` on CUDA (the seed article's sizes) when given.
    """

    name: str
    kind: type
    default: Any
    help: str
    gpu_default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Any, ...] | None = None

    def default_for(self, device: str) -> Any:
        """The default value for a device string ("cpu", "cuda", "cuda:1")."""
        if device.startswith("cuda") and self.gpu_default is not None:
            return self.gpu_default
        return self.default

    def coerce(self, value: Any) -> Any:
        """Return ``value`` converted to this parameter's type, or raise ParamError."""
        try:
            converted = _CONVERTERS.get(self.kind, str)(value)
        except (TypeError, ValueError):
            raise self._error(self._unconvertible(value)) from None
        if self.choices is not None and converted not in self.choices:
            allowed = ", ".join(str(c) for c in self.choices)
            raise self._error(f"{echo(converted)} is not one of {allowed}")
        if self.minimum is not None and converted < self.minimum:
            raise self._error(f"{echo(converted, plain=True)} is below the minimum {_limit(self.minimum)}")
        if self.maximum is not None and converted > self.maximum:
            raise self._error(f"{echo(converted, plain=True)} is above the maximum {_limit(self.maximum)}")
        return converted

    def _unconvertible(self, value: Any) -> str:
        """Why ``value`` did not convert: a whole number too long for ``int()`` is out of range."""
        text = value.strip() if isinstance(value, str) else None
        if self.kind is int and text is not None and _WHOLE_NUMBER_RE.match(text):
            if text.startswith("-") and self.minimum is not None:
                return f"{echo(text, plain=True)} is below the minimum {_limit(self.minimum)}"
            if not text.startswith("-") and self.maximum is not None:
                return f"{echo(text, plain=True)} is above the maximum {_limit(self.maximum)}"
        # a list where one value goes (run --param batch=4,8): a sweep takes it
        listed = " (one value here; a sweep takes a list)" if text is not None and "," in text else ""
        return f"expected {self._allowed()}, got {echo(value)}{listed}"

    def _allowed(self) -> str:
        """What a value may be: ``int from 1 to 65536``, ``bool``, ``one of a, b``."""
        if self.choices is not None:
            return "one of " + ", ".join(str(c) for c in self.choices)
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            return f"{self.kind.__name__} from {_limit(low)} to {_limit(high)}"
        if low is not None:
            return f"{self.kind.__name__} of at least {_limit(low)}"
        if high is not None:
            return f"{self.kind.__name__} of at most {_limit(high)}"
        return self.kind.__name__

    def _error(self, problem: str) -> ParamError:
        return ParamError(f"{self.name}: {problem}", (self.name,))


@dataclass(frozen=True)
class ParamRule:
    """A rule between parameters of one workload, checked after each has passed its own limits.

    ``params`` names the parameters involved, the one to correct first; ``problem`` gets every
    resolved value and returns what is wrong in one line, or None when the values agree.
    """

    params: tuple[str, ...]
    problem: Callable[[Mapping[str, Any]], str | None]

    def check(self, values: Mapping[str, Any]) -> None:
        """Raise ParamError (naming this rule's parameters) when ``values`` break the rule."""
        problem = self.problem(values)
        if problem is not None:
            raise ParamError(problem, self.params)


@dataclass(frozen=True)
class WorkloadSpec:
    """A built-in workload: what it computes and which parameters it takes."""

    name: str
    description: str
    params: tuple[ParamSpec, ...] = field(default_factory=tuple)
    supports_train: bool = False
    rules: tuple[ParamRule, ...] = ()
    """Rules between parameters (each parameter's own limits are in its ParamSpec)."""

    def param(self, name: str) -> ParamSpec:
        """The parameter called ``name``, or ParamError naming the allowed ones."""
        for spec in self.params:
            if spec.name == name:
                return spec
        allowed = ", ".join(p.name for p in self.params) or "none"
        raise ParamError(f"{echo(name, plain=True)}: not a parameter of {self.name} (allowed: {allowed})", (name,))

    def resolve(self, given: dict[str, Any], device: str) -> dict[str, Any]:
        """Every parameter's value: given ones validated, the rest from the device's defaults.

        Raises ParamError for the first parameter refused alone, then for the first rule broken.
        """
        for name in given:
            self.param(name)
        values = {
            spec.name: spec.coerce(given[spec.name]) if spec.name in given else spec.default_for(device)
            for spec in self.params
        }
        self.check(values)
        return values

    def check(self, values: Mapping[str, Any]) -> None:
        """Raise ParamError for the first of :attr:`rules` that the resolved ``values`` break."""
        for rule in self.rules:
            rule.check(values)


def _width_divides_by_heads(values: Mapping[str, Any]) -> str | None:
    if values["width"] % values["heads"]:
        return f"width {values['width']} is not divisible by heads {values['heads']}"
    return None


def _size(name: str, cpu: int, gpu: int, help: str, maximum: int = 65536) -> ParamSpec:
    return ParamSpec(name, int, cpu, help, gpu_default=gpu, minimum=1, maximum=maximum)


WORKLOADS: dict[str, WorkloadSpec] = {
    spec.name: spec
    for spec in (
        WorkloadSpec(
            "matmul",
            "x @ x.T on a square N x N matrix (one GEMM in eager and compiled alike)",
            (_size("n", 256, 8192, "matrix size N (the seed used 8192 and 16384)"),),
        ),
        WorkloadSpec(
            "pointwise",
            "x * x + torch.sin(x) on an N x N tensor (the seed's function; fusible)",
            (_size("n", 512, 4096, "tensor size N (N x N elements)"),),
        ),
        WorkloadSpec(
            "cnn",
            "the seed's small CNN (2 convs, 2 max-pools, linear fixed to 64x6x6) on 3x32x32 images",
            (_size("batch", 64, 64, "batch size (the seed used 64)", maximum=1 << 20),),
            supports_train=True,
        ),
        WorkloadSpec(
            "mlp",
            "a stack of Linear + GELU layers",
            (
                _size("batch", 64, 256, "batch size", maximum=1 << 20),
                _size("width", 256, 4096, "hidden width"),
                ParamSpec("depth", int, 3, "number of hidden layers", gpu_default=4, minimum=1, maximum=64),
            ),
            supports_train=True,
        ),
        WorkloadSpec(
            "transformer_block",
            "pre-norm transformer block: scaled_dot_product_attention + MLP + layer norms",
            (
                _size("batch", 2, 8, "batch size", maximum=4096),
                _size("seq", 64, 1024, "sequence length", maximum=1 << 17),
                _size("width", 128, 1024, "model width (divisible by heads)"),
                ParamSpec("heads", int, 4, "attention heads", gpu_default=16, minimum=1, maximum=256),
            ),
            supports_train=True,
            rules=(ParamRule(("width", "heads"), _width_divides_by_heads),),
        ),
        WorkloadSpec(
            "graph_break",
            "a forward with a data-dependent Python branch (fullgraph=True must fail on it)",
            (_size("n", 256, 4096, "tensor size N (N x N elements)"),),
        ),
        WorkloadSpec(
            "dynamic_shapes",
            "an MLP called with a cycling batch size: recompiles and `dynamic` become visible",
            (
                ParamSpec(
                    "shapes", int, 4,
                    "distinct batch sizes cycled through (with dynamic=false, over 8 hit the recompile limit)",
                    minimum=1, maximum=64,
                ),
                _size("batch", 16, 256, "smallest batch size; the others are multiples of it", maximum=1 << 16),
                _size("width", 128, 2048, "feature width"),
            ),
        ),
    )
}

USER_WORKLOAD_HELP = "a Python file: path/to/file.py or path/to/file.py:factory"
#: The factory a user's file is asked for when its path names none.
DEFAULT_FACTORY = "make_workload"


def is_user_workload(name: str) -> bool:
    """True when ``name`` points at a user's Python file rather than a built-in."""
    path = name.rsplit(":", 1)[0] if ":" in name else name
    return path.endswith(".py")


def split_user_workload(name: str) -> tuple[str, str]:
    """Split ``file.py[:factory]`` into (path, factory name); the factory defaults to ``make_workload``."""
    if ":" in name and not name.endswith(".py"):
        path, factory = name.rsplit(":", 1)
        return path, factory or DEFAULT_FACTORY
    return name, DEFAULT_FACTORY


def user_file_problem(path: str) -> str | None:
    """What keeps ``path`` (a user workload's file; ``~`` expanded) from being run, or None for a regular file this
    user can read: ``no such file``, ``is a directory, not a Python file``, ``is not a regular file`` (a pipe, a
    device), ``cannot be read (...)``. Asked when the options are checked and again by the worker's loader."""
    target = os.path.expanduser(path)
    try:
        mode = os.stat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "no such file"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    except ValueError:  # a NUL byte in the path
        return "no such file"
    if stat.S_ISDIR(mode):
        return "is a directory, not a Python file"
    if not stat.S_ISREG(mode):
        return "is not a regular file"
    if not os.access(target, os.R_OK):
        return "cannot be read (permission denied)"
    return None


def train_workloads() -> tuple[str, ...]:
    """The built-in workloads that have a training step."""
    return tuple(name for name, spec in WORKLOADS.items() if spec.supports_train)


def get_workload(name: str) -> WorkloadSpec:
    """The built-in workload called ``name``, or ParamError listing the allowed names."""
    try:
        return WORKLOADS[name]
    except KeyError:
        allowed = ", ".join(WORKLOADS)
        raise ParamError(f"workload: {_not_a_workload(name)} (allowed: {allowed}, or {USER_WORKLOAD_HELP})") from None


def _not_a_workload(name: str) -> str:
    """Why ``name`` (neither a built-in nor a ``.py`` path) is no workload: a folder or a file that is there says
    so (a user who meant their model's folder or file reads why), anything else is unknown."""
    target = os.path.expanduser(name)  # isdir and isfile read a NUL byte's path as none there
    if os.path.isdir(target):
        return f"{echo(name, limit=PATH_ECHO_CHARS)} is a directory, not a Python file"
    if os.path.isfile(target):
        return f"{echo(name, limit=PATH_ECHO_CHARS)} is not a .py file"
    return f"unknown {echo(name)}"
