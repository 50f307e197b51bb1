"""One validated, serialisable object that describes a benchmark run.

Validation happens here, before any process starts: every refusal is an
``OptionsError`` whose message is one line naming the field and what is allowed.
What only torch can judge (an unknown backend name, a dtype the device cannot run)
is left to the worker, which fails the run early with the same kind of message.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tui.engine.catalog import (
    PATH_ECHO_CHARS,
    ParamError,
    echo,
    get_workload,
    is_user_workload,
    split_user_workload,
    train_workloads,
    user_file_problem,
)
from tui.engine.option_table import (
    INT_RANGES,
    MEMORY_LIMIT_MAX_GB,
    NOISE_THRESHOLD_MAX,
    NUMBER_RANGES,
    PAIRS,
    SPECS,
    TARGET_CI_MAX,
    TIME_BUDGET_MAX_S,
    TIMEOUT_MAX_S,
)

__all__ = [
    "OptionsError",
    "RunOptions",
    "BACKENDS",
    "MODES",
    "DTYPES",
    "SHORT_DTYPES",
    "DTYPE_WORDS",
    "full_dtype",
    "PRECISIONS",
    "DEFAULT_PRECISION",
    "check_precision",
    "key_value_words",
    "comma_items",
    "DYNAMIC_CHOICES",
    "DEFAULT_MODE",
    "mode_applies",
    "modes_for",
    "inductor_options_apply",
    "check_mode",
    "check_compile_settings",
    "parse_dynamic",
    "parse_key_values",
    "TIMEOUT_MAX_S",
    "TIME_BUDGET_MAX_S",
    "MEMORY_LIMIT_MAX_GB",
    "INT_RANGES",
    "NUMBER_RANGES",
    "TARGET_CI_MAX",
    "NOISE_THRESHOLD_MAX",
    "check_range",
    "parse_int_option",
    "parse_number_option",
]

BACKENDS = ("inductor", "aot_eager", "cudagraphs", "eager")
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
DTYPES = ("float32", "bfloat16", "float16")
SHORT_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
"""Each dtype's short name: what labels, tables and titles show, and so a spelling the options accept too."""
_DTYPE_OF_SHORT = {short: name for name, short in SHORT_DTYPES.items()}
DTYPE_WORDS = ", ".join(f"{name} ({SHORT_DTYPES[name]})" for name in DTYPES)
"""The dtypes as a refusal and a flag's help list them: ``float32 (fp32), bfloat16 (bf16), float16 (fp16)``."""
PRECISIONS = ("default", "ieee", "tf32")
"""How fp32 matmuls and cuDNN convolutions may round, on both sides: ``default`` leaves torch's flags as
a fresh process has them (cuDNN TF32 on, matmul TF32 off), ``ieee`` turns TF32 off for both, ``tf32``
turns it on for both."""
DEFAULT_PRECISION = "default"
DYNAMIC_CHOICES = ("auto", "true", "false")
_DEVICE_RE = re.compile(r"^(cpu|cuda|cuda:\d+|cuda:GPU-[0-9a-fA-F-]+)$")
_BACKEND_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_OPTION_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_WHOLE_NUMBER_RE = re.compile(r"^[+-]?\d+$")


class OptionsError(ValueError):
    """An option or combination of options was refused: ``field: what is wrong (allowed: ...)``.

    ``field`` is the RunOptions field; for ``params``, ``params`` names the workload parameters
    the refusal concerns (the first is the one to correct), as the workload's spec reported them.
    """

    def __init__(self, field_name: str, message: str, *, params: tuple[str, ...] = ()) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.message = message
        """What is wrong, without the field (a front end names the field its own way: the command line's flag)."""
        self.params = params


# ----- the backend / mode / inductor_options rule ----------------------------------------
# Asked by RunOptions.validated, the sweep and the picker, so they cannot disagree.

DEFAULT_MODE = "default"


def full_dtype(dtype: Any) -> Any:
    """A dtype's full name for its short one (``bf16`` -> ``bfloat16``); anything else as it is."""
    return _DTYPE_OF_SHORT.get(dtype, dtype) if isinstance(dtype, str) else dtype


def mode_applies(backend: str) -> bool:
    """Whether ``backend`` reads ``mode`` and inductor options; only inductor does, others ignore both."""
    return backend == "inductor"


def modes_for(backend: str) -> tuple[str, ...]:
    """The modes that change what ``backend`` runs: all of MODES for inductor, else only the default."""
    return MODES if mode_applies(backend) else (DEFAULT_MODE,)


def inductor_options_apply(backend: str, mode: str) -> bool:
    """Whether inductor options may go with ``backend`` and ``mode``: inductor in its default mode.

    torch.compile refuses ``options`` together with a ``mode`` other than the default.
    """
    return mode_applies(backend) and mode == DEFAULT_MODE


def check_mode(mode: str) -> None:
    """OptionsError unless ``mode`` is one of MODES."""
    if mode not in MODES:
        raise OptionsError("mode", f"{echo(mode)} is not allowed (allowed: {', '.join(MODES)})")


def check_precision(precision: Any) -> None:
    """OptionsError unless ``precision`` is one of PRECISIONS."""
    if precision not in PRECISIONS:
        raise OptionsError("precision", f"{echo(precision)} is not allowed (allowed: {', '.join(PRECISIONS)})")


def check_compile_settings(backend: str, mode: str, inductor_options: dict[str, Any]) -> None:
    """OptionsError for a malformed backend name, an unknown mode, or a mode or inductor options it ignores."""
    if not _BACKEND_RE.match(backend or ""):
        raise OptionsError("backend", f"{echo(backend)} is not a backend name (e.g. {', '.join(BACKENDS)})")
    check_mode(mode)
    if mode not in modes_for(backend):
        ignored_by = echo(backend, plain=True)
        raise OptionsError("mode", f"{mode} only applies to the inductor backend ({ignored_by} ignores it)")
    if not inductor_options:
        return
    if not mode_applies(backend):
        raise OptionsError("inductor_options", f"inductor options only apply to the inductor backend, not "
                                               f"{echo(backend, plain=True)}")
    if not inductor_options_apply(backend, mode):
        raise OptionsError("inductor_options", "cannot be combined with a non-default mode (torch refuses both)")
    for key in inductor_options:
        if not _OPTION_KEY_RE.match(key):
            raise OptionsError("inductor_options", f"{echo(key)} is not an option name")


def parse_dynamic(value: Any) -> bool | None:
    """Map auto/None, true, false (any case, or a bool) to torch.compile's ``dynamic``."""
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"auto", "none", ""}:
        return None
    if text in {"true", "1", "yes"}:
        return True
    if text in {"false", "0", "no"}:
        return False
    raise OptionsError("dynamic", f"{echo(value)} is not allowed (allowed: auto, true, false)")


def _parse_scalar(text: str) -> Any:
    lowered = text.lower()
    if lowered in {"true", "false"}:
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            if kind is int and _WHOLE_NUMBER_RE.match(text):
                return text  # too many digits for int(): left as text (float() would make it inf)
    return text


def key_value_words(settings: Mapping[str, Any]) -> str:
    """``cpp_wrapper=True freezing=True``: settings (inductor options) as ``key=value`` words, by key; the one way
    a run's inductor options read in its label, wherever it is drawn."""
    return " ".join(f"{key}={value}" for key, value in sorted(settings.items()))


def comma_items(text: str, field_name: str, *, about: str = "") -> list[str]:
    """The items of a comma list, stripped; none for a blank text (the caller says whether a list may be empty). An
    empty item (``8,,16``, a comma at either end) is an OptionsError (``field_name``; ``about`` before the text,
    e.g. the parameter's name) rather than an item that drops out without a word."""
    if not text.strip():
        return []
    items = [part.strip() for part in text.split(",")]
    if not all(items):
        raise OptionsError(field_name, f"{about}{echo(text)} has an empty item (allowed: values separated by "
                                       "single commas, none at either end)")
    return items


def parse_key_values(items: list[str] | str | None, field_name: str) -> dict[str, Any]:
    """Parse ``key=value`` pairs (a list, or one comma-separated string) with typed values."""
    if not items:
        return {}
    if isinstance(items, str):
        items = comma_items(items, field_name)
    result: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            example = {"inductor_options": ", e.g. freezing=true", "params": ", e.g. n=512"}.get(field_name, "")
            raise OptionsError(field_name, f"{echo(item)} is not key=value (allowed: key=value{example})")
        result[key] = _parse_scalar(value.strip())
    return result


@dataclass(frozen=True)
class RunOptions:
    """Everything that defines one benchmark configuration.

    Construct it freely, then call :meth:`validated` (which fills in the
    workload's defaults for the device and checks every field and combination).
    ``to_dict``/``from_dict`` round-trip through JSON.
    """

    workload: str = "pointwise"
    params: dict[str, Any] = field(default_factory=dict)
    backend: str = "inductor"
    mode: str = DEFAULT_MODE
    inductor_options: dict[str, Any] = field(default_factory=dict)
    fullgraph: bool = False
    dynamic: bool | None = None
    dtype: str = "float32"
    precision: str = DEFAULT_PRECISION
    """One of PRECISIONS: the TF32 flags the worker sets before anything is built (``default``: none)."""
    device: str = "cpu"
    warmup: int = 5
    iters: int = 50
    block_size: int = 10
    time_budget_s: float | None = None
    target_ci: float | None = None
    """Measure on (within ``time_budget_s``) until the speedup's 95% interval is at most this wide,
    relative to the speedup (0.02: hi/lo - 1 <= 2%); None: measure ``iters`` and stop."""
    noise_threshold: float = 0.02
    """The verdict's threshold t (tui.engine.measure.verdict): faster when the interval's low end > 1 + t."""
    noise_limits: dict[str, float] = field(default_factory=dict)
    """The verdict's other limits that differ from their defaults (tui.engine.measure.verdict.VerdictPolicy)."""
    l2_flush: bool = False
    cold_compile: bool = False
    timeout_s: float = 600.0
    memory_limit_gb: float | None = None
    """CPU runs: the worker's address-space limit in GB (``RLIMIT_AS``); None: no limit."""
    python: str | None = None
    train: bool = False
    compile_optimizer: bool = False
    seed: int = 0
    profile: bool = True
    """A profile pass after measuring (tui.engine.explain.kernels: kernels per call, the kernel diff); never in the
    timings."""
    trace: bool = False
    """The profile pass also written as a Chrome/Perfetto trace, ``trace.json`` in the run's data folder."""
    torch_trace: bool = False
    """A ``TORCH_TRACE`` directory in the run's data folder (for tlparse): the run gets a fresh worker, never
    the warm spare, and its compile time includes torch's structured logging."""

    # ----- validation -------------------------------------------------

    def validated(self) -> RunOptions:
        """A copy with the workload's parameters resolved; OptionsError on the first problem."""
        device = _checked_device(self.device)
        workload, params = self._resolved_workload(device)
        check_compile_settings(self.backend, self.mode, self.inductor_options)
        dtype = full_dtype(self.dtype)
        if dtype not in DTYPES:
            raise OptionsError("dtype", f"{echo(self.dtype)} is not allowed (allowed: {DTYPE_WORDS})")
        check_precision(self.precision)
        if self.dynamic not in (None, True, False):
            raise OptionsError("dynamic", f"{echo(self.dynamic)} is not allowed (allowed: auto, true, false)")
        self._check_measurement(device)
        if self.compile_optimizer and not self.train:
            raise OptionsError("compile_optimizer", "only applies with train")
        for name in ("profile", "trace", "torch_trace"):
            if not isinstance(getattr(self, name), bool):
                raise OptionsError(name, f"{echo(getattr(self, name))} is not allowed (allowed: true, false)")
        if self.trace and not self.profile:
            raise OptionsError("trace", "records the profile pass, which --no-profile (profile=false) turns off "
                                        "(allowed: trace with the profile pass on)")
        _check_python(self.python)
        return dataclasses.replace(self, workload=workload, device=device, params=params, dtype=dtype)

    def _resolved_workload(self, device: str) -> tuple[str, dict[str, Any]]:
        """The workload name to record and its parameters (a built-in's resolved by its spec)."""
        workload = self.workload.strip()
        if is_user_workload(workload):
            return self._user_workload(workload), dict(self.params)
        try:
            spec = get_workload(workload)
            params = spec.resolve(dict(self.params), device)
        except ParamError as exc:
            if not exc.params:  # the workload itself is unknown
                raise OptionsError("workload", str(exc).removeprefix("workload: ")) from None
            raise OptionsError("params", str(exc), params=exc.params) from None
        if self.train and not spec.supports_train:
            allowed = ", ".join(train_workloads())
            raise OptionsError("train", f"{self.workload} has no training step (allowed: {allowed})")
        return workload, params

    def _user_workload(self, workload: str) -> str:
        path, factory = split_user_workload(workload)
        if not factory.isidentifier():
            shown = echo(path, plain=True, limit=PATH_ECHO_CHARS)
            raise OptionsError("workload", f"factory {echo(factory)} is not a Python name ({shown}:factory)")
        problem = user_file_problem(path)
        if problem is not None:  # refused here, before a worker starts only to say so
            shown = echo(path, plain=True, limit=PATH_ECHO_CHARS)
            raise OptionsError("workload", f"{shown}: {problem} (allowed: a readable Python file, "
                                           "path/to/file.py[:factory])")
        if self.train:
            allowed = ", ".join(train_workloads())
            raise OptionsError("train", f"a user workload defines its own step; train applies to {allowed}")
        # Absolute, so the history says which file ran whatever the reader's directory.
        return f"{os.path.abspath(os.path.expanduser(path))}:{factory}"

    def _check_measurement(self, device: str) -> None:
        """Iteration counts, the seed, the time limits and the memory limit: each in its range in the option table."""
        for name in (*INT_RANGES, *NUMBER_RANGES):
            if SPECS[name].cli != PAIRS:
                check_range(name, getattr(self, name))
        _check_noise_limits(self.noise_limits)
        _check_memory_limit(self.memory_limit_gb, device)

    # ----- serialisation ----------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunOptions:
        """Build from a dict (unknown keys refused); values are not validated here."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise OptionsError(echo(unknown[0], plain=True), f"unknown option (allowed: {', '.join(sorted(known))})")
        data = dict(data)
        if "dynamic" in data:
            data["dynamic"] = parse_dynamic(data["dynamic"])
        return cls(**data)

    # ----- presentation -----------------------------------------------

    @property
    def dynamic_label(self) -> str:
        """``auto``, ``true`` or ``false``."""
        return "auto" if self.dynamic is None else str(self.dynamic).lower()

    def label(self) -> str:
        """A short human label: ``inductor/reduce-overhead fg dyn=auto bf16``."""
        parts = [self.backend if self.mode == DEFAULT_MODE else f"{self.backend}/{self.mode}"]
        if self.fullgraph:
            parts.append("fullgraph")
        parts.append(f"dyn={self.dynamic_label}")
        parts.append(SHORT_DTYPES.get(self.dtype, self.dtype))
        if self.precision != DEFAULT_PRECISION:
            parts.append(str(self.precision))
        if self.train:
            parts.append("train")
        return " ".join(parts)


def _checked_device(text: str) -> str:
    device = text.strip()
    if not _DEVICE_RE.match(device):
        raise OptionsError("device", f"{echo(text)} is not allowed (allowed: cpu, cuda, cuda:N, cuda:GPU-<uuid>)")
    return device


def _check_python(python: str | None) -> None:
    if python is None:
        return
    if not python.strip():
        raise OptionsError("python", "is empty (give an interpreter path or leave it unset)")
    if os.sep in python and not os.access(python, os.X_OK):
        raise OptionsError("python", f"{echo(python, plain=True, limit=PATH_ECHO_CHARS)} is not an executable file")


def _integer_allowed(name: str) -> str:
    """What an integer option of :data:`INT_RANGES` allows, as a refusal says it: ``an integer from 1 to 100000``."""
    low, high = INT_RANGES[name]
    return f"an integer from {low} to {high}"


def parse_int_option(name: str, text: str) -> int:
    """An integer option (one of INT_RANGES) typed as text; OptionsError when it is none.

    A whole number too long for ``int()`` (Python limits the digits it converts) is out of
    range, not "not an integer": the refusal then states the range.
    """
    try:
        return int(text)
    except ValueError:
        if _WHOLE_NUMBER_RE.match(text.strip()) and name in INT_RANGES:
            raise OptionsError(name, f"{echo(text.strip(), plain=True)} is not allowed "
                                     f"(allowed: {_integer_allowed(name)})") from None
        allowed = f" (allowed: {_integer_allowed(name)})" if name in INT_RANGES else ""
        raise OptionsError(name, f"{echo(text)} is not an integer{allowed}") from None


def parse_number_option(name: str, text: str) -> float:
    """A number option (``timeout_s``, ``time_budget_s``, ``memory_limit_gb``, a verdict threshold: the option
    table's ``float`` options) typed as text, in the picker or on the command line.

    OptionsError when the text is no number, naming what is allowed where the option has a range. Its range
    is :meth:`RunOptions.validated`'s to judge (NaN and inf come through to be refused there).
    """
    try:
        return float(text)
    except ValueError:
        allowed = f" (allowed: {NUMBER_RANGES[name].allowed})" if name in NUMBER_RANGES else ""
        raise OptionsError(name, f"{echo(text.strip())} is not a number{allowed}") from None


_UNSET_BY_DEFAULT = frozenset(f.name for f in dataclasses.fields(RunOptions) if f.default is None)
"""The options that may be left unset (None): those whose default is unset."""


def check_range(name: str, value: Any, field_name: str | None = None) -> None:
    """``value`` of the option ``name`` in its range in the option table (:data:`INT_RANGES`, an integer's;
    :data:`NUMBER_RANGES`, a number's: above 0, NaN, inf and text refused alike), else OptionsError naming
    ``field_name`` (default: ``name``) and what is allowed. An option whose default is None (unset: no limit,
    or the library's own choice) may be None."""
    if value is None and name in _UNSET_BY_DEFAULT:
        return
    shown = field_name or name
    if name in INT_RANGES:
        low, high = INT_RANGES[name]
        if isinstance(value, bool) or not isinstance(value, int) or not (low <= value <= high):
            raise OptionsError(shown, f"{echo(value)} is not allowed (allowed: {_integer_allowed(name)})")
        return
    rule = NUMBER_RANGES[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value <= rule.high):
        raise OptionsError(shown, f"{echo(value)} is not allowed (allowed: {rule.allowed})")


def _check_noise_limits(limits: Any) -> None:
    """``noise_limits``: names of the verdict's limits, each a positive number (at most 1000)."""
    from tui.engine.thresholds import LIMIT_NAMES

    if not isinstance(limits, dict):
        raise OptionsError(
            "noise_limits", f"{echo(limits)} is not NAME=VALUE pairs (allowed: {', '.join(LIMIT_NAMES)})"
        )
    for name, value in limits.items():
        if name not in LIMIT_NAMES:
            raise OptionsError("noise_limits", f"{echo(name)} is not a limit (allowed: {', '.join(LIMIT_NAMES)})")
        check_range("noise_limits", value, f"noise_limits.{name}")


def _check_memory_limit(value: Any, device: str) -> None:
    """``memory_limit_gb`` (its range checked with the others): only for CPU runs.

    CUDA reserves far more virtual address space than it uses, so an address-space limit
    would break a CUDA run long before it ran out of memory: a CUDA run is refused.
    """
    if value is not None and device != "cpu":
        raise OptionsError(
            "memory_limit_gb", "applies to CPU runs only (CUDA reserves far more address space than it uses)"
        )
