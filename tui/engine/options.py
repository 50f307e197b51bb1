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
from dataclasses import dataclass, field
from typing import Any

from tui.engine.catalog import ParamError, get_workload, is_user_workload, split_user_workload

__all__ = [
    "OptionsError",
    "RunOptions",
    "BACKENDS",
    "MODES",
    "DTYPES",
    "DYNAMIC_CHOICES",
    "parse_dynamic",
    "parse_key_values",
]

BACKENDS = ("inductor", "aot_eager", "cudagraphs", "eager")
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
DTYPES = ("float32", "bfloat16", "float16")
DYNAMIC_CHOICES = ("auto", "true", "false")
_DEVICE_RE = re.compile(r"^(cpu|cuda|cuda:\d+|cuda:GPU-[0-9a-fA-F-]+)$")
_BACKEND_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_OPTION_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


class OptionsError(ValueError):
    """An option or combination of options was refused: ``field: what is wrong (allowed: ...)``."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name


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
    raise OptionsError("dynamic", f"{value!r} is not allowed (allowed: auto, true, false)")


def _parse_scalar(text: str) -> Any:
    lowered = text.lower()
    if lowered in {"true", "false"}:
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_key_values(items: list[str] | str | None, field_name: str) -> dict[str, Any]:
    """Parse ``key=value`` pairs (a list, or one comma-separated string) with typed values."""
    if not items:
        return {}
    if isinstance(items, str):
        items = [part for part in items.split(",") if part.strip()]
    result: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise OptionsError(field_name, f"{item!r} is not key=value")
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
    mode: str = "default"
    inductor_options: dict[str, Any] = field(default_factory=dict)
    fullgraph: bool = False
    dynamic: bool | None = None
    dtype: str = "float32"
    tf32: bool = False
    device: str = "cpu"
    warmup: int = 5
    iters: int = 50
    block_size: int = 10
    time_budget_s: float | None = None
    l2_flush: bool = False
    cold_compile: bool = False
    timeout_s: float = 600.0
    memory_limit_gb: float | None = None
    """CPU runs: the worker's address-space limit in GB (``RLIMIT_AS``); None: no limit."""
    python: str | None = None
    train: bool = False
    compile_optimizer: bool = False
    seed: int = 0

    # ----- validation -------------------------------------------------

    def validated(self) -> "RunOptions":
        """A copy with the workload's parameters resolved; OptionsError on the first problem."""
        device = self.device.strip()
        if not _DEVICE_RE.match(device):
            raise OptionsError("device", f"{self.device!r} is not allowed (allowed: cpu, cuda, cuda:N, cuda:GPU-<uuid>)")
        params = dict(self.params)
        workload = self.workload.strip()
        if is_user_workload(workload):
            path, factory = split_user_workload(workload)
            if not factory.isidentifier():
                raise OptionsError("workload", f"factory {factory!r} is not a Python name ({path}:factory)")
            # Absolute, so the history says which file ran whatever the reader's directory.
            workload = f"{os.path.abspath(os.path.expanduser(path))}:{factory}"
            if self.train:
                raise OptionsError("train", "a user workload defines its own step; train applies to cnn, mlp, transformer_block")
        else:
            try:
                spec = get_workload(workload)
                params = spec.resolve(params, device)
            except ParamError as exc:
                field_name = "workload" if str(exc).startswith("workload:") else "params"
                raise OptionsError(field_name, str(exc).removeprefix("workload: ")) from None
            if self.train and not spec.supports_train:
                allowed = ", ".join(n for n, s in _train_capable().items() if s)
                raise OptionsError("train", f"{self.workload} has no training step (allowed: {allowed})")
            if self.workload == "transformer_block" and params["width"] % params["heads"]:
                raise OptionsError("params", f"width {params['width']} is not divisible by heads {params['heads']}")
        if not _BACKEND_RE.match(self.backend or ""):
            raise OptionsError("backend", f"{self.backend!r} is not a backend name (e.g. {', '.join(BACKENDS)})")
        if self.mode not in MODES:
            raise OptionsError("mode", f"{self.mode!r} is not allowed (allowed: {', '.join(MODES)})")
        if self.mode != "default" and self.backend != "inductor":
            raise OptionsError("mode", f"{self.mode} only applies to the inductor backend ({self.backend} ignores it)")
        if self.inductor_options:
            if self.backend != "inductor":
                raise OptionsError("inductor_options", f"only apply to the inductor backend, not {self.backend}")
            if self.mode != "default":
                raise OptionsError("inductor_options", "cannot be combined with a non-default mode (torch refuses both)")
            for key in self.inductor_options:
                if not _OPTION_KEY_RE.match(key):
                    raise OptionsError("inductor_options", f"{key!r} is not an option name")
        if self.dtype not in DTYPES:
            raise OptionsError("dtype", f"{self.dtype!r} is not allowed (allowed: {', '.join(DTYPES)})")
        if self.dynamic not in (None, True, False):
            raise OptionsError("dynamic", f"{self.dynamic!r} is not allowed (allowed: auto, true, false)")
        _check_int("warmup", self.warmup, 0, 100_000)
        _check_int("iters", self.iters, 1, 10_000_000)
        _check_int("block_size", self.block_size, 1, 100_000)
        _check_int("seed", self.seed, 0, 2**31 - 1)
        if self.time_budget_s is not None and not (0 < float(self.time_budget_s) <= 86_400):
            raise OptionsError("time_budget_s", f"{self.time_budget_s} is not allowed (allowed: > 0 and <= 86400 seconds)")
        if not (0 < float(self.timeout_s) <= 7 * 86_400):
            raise OptionsError("timeout_s", f"{self.timeout_s} is not allowed (allowed: > 0 seconds)")
        _check_memory_limit(self.memory_limit_gb, device)
        if self.compile_optimizer and not self.train:
            raise OptionsError("compile_optimizer", "only applies with train")
        if self.python is not None:
            if not self.python.strip():
                raise OptionsError("python", "is empty (give an interpreter path or leave it unset)")
            if os.sep in self.python and not os.access(self.python, os.X_OK):
                raise OptionsError("python", f"{self.python} is not an executable file")
        return dataclasses.replace(self, workload=workload, device=device, params=params)

    # ----- serialisation ----------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunOptions":
        """Build from a dict (unknown keys refused); values are not validated here."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise OptionsError(unknown[0], f"unknown option (allowed: {', '.join(sorted(known))})")
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
        parts = [self.backend if self.mode == "default" else f"{self.backend}/{self.mode}"]
        if self.fullgraph:
            parts.append("fullgraph")
        parts.append(f"dyn={self.dynamic_label}")
        parts.append({"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(self.dtype, self.dtype))
        if self.tf32:
            parts.append("tf32")
        if self.train:
            parts.append("train")
        return " ".join(parts)


def _check_int(name: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not (low <= value <= high):
        raise OptionsError(name, f"{value!r} is not allowed (allowed: an integer from {low} to {high})")


def _check_memory_limit(value: Any, device: str) -> None:
    """``memory_limit_gb``: unset, or a number of GB above zero, and only for CPU runs.

    CUDA reserves far more virtual address space than it uses, so an address-space limit
    would break a CUDA run long before it ran out of memory: a CUDA run is refused.
    """
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value <= 1_000_000):
        raise OptionsError("memory_limit_gb", f"{value!r} is not allowed (allowed: a number of GB above 0, or unset for no limit)")
    if device != "cpu":
        raise OptionsError("memory_limit_gb", "applies to CPU runs only (CUDA reserves far more address space than it uses)")


def _train_capable() -> dict[str, bool]:
    from tui.engine.catalog import WORKLOADS

    return {name: spec.supports_train for name, spec in WORKLOADS.items()}
