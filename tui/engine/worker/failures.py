"""Map an exception to one of the protocol's failure kinds, a one-line message and the full text.

Where the exception came from decides as much as its type: the eager side always runs
before anything is compiled, so an error on the first compiled call is the compiler's
(``compile_error``), while an error in eager code is the workload's (``runtime_error``).
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass

from tui.engine.options import OptionsError

__all__ = ["Failure", "RunFailed", "classify", "one_line", "first_meaningful_line", "graph_break_summary"]

#: Where an exception was raised: building, eager, compile (the first compiled call), compiled.
STAGES = ("setup", "building", "eager", "compile", "compiled", "other")

_BOILERPLATE = (
    "set torchdynamo_verbose",
    "for more details about this graph break",
    "for even more developer context",
    "you can suppress this exception",
    "from user code:",
    "traceback (most recent call last)",
    "command:",
    "output:",
    "the above exception was the direct cause",
    "during handling of the above exception",
)
_COMPILER_ERROR_RE = re.compile(r"(?:^|\s|:)(?:fatal )?error:\s", re.IGNORECASE)
_FILE_LINE_RE = re.compile(r'File "([^"]+)", line (\d+), in ([^\s,]+)(?:, code: (.*))?')


@dataclass(frozen=True)
class Failure:
    """A run's end in failure: ``kind`` from protocol.FAILURE_KINDS, one-line message, full detail."""

    kind: str
    message: str
    detail: str


class RunFailed(Exception):
    """Raised inside the worker to end the run with a given failure."""

    def __init__(self, kind: str, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.failure = Failure(kind, one_line(message), detail or message)


def one_line(text: str, limit: int = 400) -> str:
    """Collapse whitespace into one line and cut it at ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def first_meaningful_line(text: str) -> str:
    """The line of a compiler's error text that says what went wrong.

    A C/C++ compiler's ``file:line:col: error: ...`` line wins; otherwise the first line
    that is not torch's boilerplate (``backend='x' raised:``, "Set TORCHDYNAMO_VERBOSE...").
    """
    lines = [line.strip() for line in str(text).splitlines()]
    for line in lines:
        if _COMPILER_ERROR_RE.search(line) and not line.lower().startswith("cppcompileerror"):
            return line
    for line in lines:
        lowered = line.lower()
        if not line or lowered.startswith(_BOILERPLATE):
            continue
        if lowered.startswith("backend=") and lowered.endswith("raised:"):
            continue
        return line.rstrip(":").strip() or line
    return ""


def graph_break_summary(text: str, frame: object | None = None) -> str:
    """``<reason> at file:line in fn (code)`` from a graph-break message or counter key."""
    text = str(text)
    reason = next((line.strip() for line in text.splitlines() if line.strip()), "graph break")
    where = ""
    match = _FILE_LINE_RE.search(text)
    if frame is not None and getattr(frame, "filename", None):
        code = (getattr(frame, "line", "") or "").strip()
        where = f"{_short(frame.filename)}:{getattr(frame, 'lineno', '?')} in {getattr(frame, 'name', '?')}"
        if code:
            where += f" ({code})"
    elif match:
        filename, lineno, func, code = match.groups()
        where = f"{_short(filename)}:{lineno} in {func}"
        if code:
            where += f" ({code.strip()})"
    return f"{reason} at {where}" if where else reason


def _short(filename: str) -> str:
    parts = filename.replace("\\", "/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 1 else filename


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def _is_instance(exc: BaseException, module: str, name: str) -> bool:
    """isinstance against a class looked up defensively (private torch modules move)."""
    try:
        import importlib

        cls = getattr(importlib.import_module(module), name, None)
    except Exception:
        return False
    return isinstance(cls, type) and isinstance(exc, cls)


_OOM_TEXTS = (
    "out of memory",  # CUDA, and torch.OutOfMemoryError's text
    "can't allocate memory",  # torch's DefaultCPUAllocator under an address-space limit
    "cannot allocate memory",  # ENOMEM (errno 12) from the C library
)
#: torch's C++ assertion prefix: ``[enforce fail at alloc_cpu.cpp:127] err == 0. `` (noise in a one-line message).
_ENFORCE_PREFIX_RE = re.compile(r"^\[enforce fail at [^\]]*\]\s*(?:[^.]*\.\s+)?")


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    if _is_instance(exc, "torch", "OutOfMemoryError"):
        return True
    text = str(exc).lower()
    return any(needle in text for needle in _OOM_TEXTS)


def _describe_oom(exc: BaseException) -> str:
    text = _ENFORCE_PREFIX_RE.sub("", one_line(str(exc), 300))
    if isinstance(exc, MemoryError) and not text:
        return "MemoryError (an allocation was refused)"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _is_user_workload_error(exc: BaseException) -> bool:
    return type(exc).__name__ == "UserWorkloadError" and type(exc).__module__.endswith("user_loader")


def _is_unsupported(exc: BaseException) -> bool:
    return _is_instance(exc, "torch._dynamo.exc", "Unsupported")


def _is_compiler_error(exc: BaseException) -> bool:
    for module, name in (
        ("torch._dynamo.exc", "BackendCompilerFailed"),
        ("torch._dynamo.exc", "TorchDynamoException"),
        ("torch._inductor.exc", "InductorError"),
        ("torch._inductor.exc", "CppCompileError"),
        ("torch._inductor.exc", "LoweringException"),
        ("torch._inductor.exc", "InvalidCxxCompiler"),
        ("torch._inductor.exc", "TritonMissing"),
        ("torch._inductor.exc", "GPUTooOldForTriton"),
    ):
        if _is_instance(exc, module, name):
            return True
    return False


def _describe(exc: BaseException) -> str:
    text = one_line(str(exc), 300)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def classify(
    exc: BaseException,
    stage: str = "other",
    backend: str = "",
    fullgraph: bool = False,
    memory_limit_gb: float | None = None,
) -> Failure:
    """The failure for ``exc`` raised at ``stage`` (one of :data:`STAGES`).

    ``memory_limit_gb``: the run's address-space limit, named in an out-of-memory message.
    """
    if isinstance(exc, RunFailed):
        return exc.failure
    detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    chain = _chain(exc)
    if isinstance(exc, OptionsError):
        return Failure("bad_options", one_line(str(exc)), detail)
    if any(_is_oom(e) for e in chain):
        where = {"compile": " while compiling", "eager": " in eager", "compiled": " in compiled code",
                 "building": " while building the workload"}.get(stage, "")
        oom = next(e for e in reversed(chain) if _is_oom(e))
        limit = f" (memory_limit_gb {memory_limit_gb:g})" if memory_limit_gb is not None else ""
        return Failure("out_of_memory", one_line(f"ran out of memory{where}{limit}: {_describe_oom(oom)}"), detail)
    if any(_is_user_workload_error(e) for e in chain):
        user = next(e for e in chain if _is_user_workload_error(e))
        return Failure("workload_error", one_line(str(user)), detail)
    unsupported = next((e for e in chain if _is_unsupported(e)), None)
    if unsupported is not None and stage in ("compile", "compiled"):
        frame = getattr(unsupported, "innermost_user_frame_summary", None)
        real_stack = getattr(unsupported, "real_stack", None)
        if frame is None and real_stack:
            frame = real_stack[-1]
        reason = getattr(unsupported, "gb_type", None) or str(unsupported)
        summary = graph_break_summary(str(reason), frame) if frame is not None else graph_break_summary(str(unsupported))
        if "recompile limit" in summary.lower():
            return Failure("compile_error", one_line(f"hit the recompile limit: {summary}"), detail)
        prefix = "the graph broke under fullgraph=True" if fullgraph else "dynamo refused the code"
        return Failure("graph_break", one_line(f"{prefix}: {summary}"), detail)
    if stage == "compile" or (stage == "compiled" and any(_is_compiler_error(e) for e in chain)):
        line = first_meaningful_line(str(exc)) or _describe(exc)
        if not any(_is_compiler_error(e) for e in chain):
            line = f"{type(exc).__name__}: {line}" if type(exc).__name__ not in line else line
        name = backend or "the compiler"
        return Failure("compile_error", one_line(f"{name} failed to compile: {line}"), detail)
    if stage == "compiled":
        return Failure("runtime_error", one_line(f"the compiled code raised {_describe(exc)}"), detail)
    if stage in ("eager", "building"):
        what = "building the workload" if stage == "building" else "the workload"
        return Failure("runtime_error", one_line(f"{what} raised {_describe(exc)}"), detail)
    return Failure("runtime_error", one_line(f"the worker raised {_describe(exc)}"), detail)
