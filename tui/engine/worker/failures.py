"""Map an exception to one of the protocol's failure kinds, a one-line message and the full text.

Where the exception came from decides as much as its type: the eager side always runs
before anything is compiled, so an error on the first compiled call is the compiler's
(``compile_error``), while an error in eager code is the workload's (``runtime_error``).
"""

from __future__ import annotations

import os
import re
import sys
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
    frame_file = getattr(frame, "filename", None)  # a traceback.FrameSummary, or a frame-like object
    if frame_file:
        code = (getattr(frame, "line", "") or "").strip()
        where = f"{_short(frame_file)}:{getattr(frame, 'lineno', '?')} in {getattr(frame, 'name', '?')}"
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
    link: BaseException | None = exc
    while link is not None and link not in seen:
        seen.append(link)
        link = link.__cause__ or link.__context__
    return seen


def _is_instance(exc: BaseException, module: str, name: str) -> bool:
    """isinstance against a class looked up defensively (private torch modules move).

    Only among the modules already imported: an exception of that class exists only once its module was,
    so importing one here (``torch._inductor`` costs seconds) could never make the answer true.
    """
    cls = getattr(sys.modules.get(module), name, None)
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


def _is_data_dependent_guard(exc: BaseException) -> bool:
    """A branch on a tensor's value that the graph cannot hold (``if x.sum().item() > 0``): under fullgraph dynamo
    raises it (inside a UserError) where it would otherwise break the graph."""
    return _is_instance(exc, "torch.fx.experimental.symbolic_shapes", "GuardOnDataDependentSymNode")


_BACKEND_ERRORS = (("torch._dynamo.exc", "BackendCompilerFailed"), ("torch._inductor.exc", "InductorError"))
"""What the compiler backend raises around its own failures (inductor's lowering, a C++ compile)."""


def _broke_on_data(chain: list[BaseException], where: _Where) -> bool:
    """Dynamo's fullgraph capture stopped at a data-dependent guard: not the backend's (inductor raises the same
    guard from its own lowering, a compile error)."""
    backend = any(_is_instance(e, module, name) for e in chain for module, name in _BACKEND_ERRORS)
    return where.fullgraph and not backend and any(_is_data_dependent_guard(e) for e in chain)


def _is_compiler_error(exc: BaseException) -> bool:
    for module, name in (
        *_BACKEND_ERRORS,
        ("torch._dynamo.exc", "TorchDynamoException"),
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


@dataclass(frozen=True)
class _Where:
    """Where an exception was raised, and what of the run's options bears on its kind."""

    stage: str
    backend: str
    fullgraph: bool
    memory_limit_gb: float | None


#: (kind, one-line message) of a failure, before its detail is attached.
_Verdict = tuple[str, str] | None


def _bad_options(exc: BaseException, chain: list[BaseException], where: _Where) -> _Verdict:
    return ("bad_options", str(exc)) if isinstance(exc, OptionsError) else None


def _out_of_memory(exc: BaseException, chain: list[BaseException], where: _Where) -> _Verdict:
    oom = next((e for e in reversed(chain) if _is_oom(e)), None)
    if oom is None:
        return None
    place = {"compile": " while compiling", "eager": " in eager", "compiled": " in compiled code",
             "building": " while building the workload"}.get(where.stage, "")
    limit = f" (memory_limit_gb {where.memory_limit_gb:g})" if where.memory_limit_gb is not None else ""
    return "out_of_memory", f"ran out of memory{place}{limit}: {_describe_oom(oom)}"


def _user_workload(exc: BaseException, chain: list[BaseException], where: _Where) -> _Verdict:
    user = next((e for e in chain if _is_user_workload_error(e)), None)
    return ("workload_error", str(user)) if user is not None else None


def _graph_break(exc: BaseException, chain: list[BaseException], where: _Where) -> _Verdict:
    unsupported = next((e for e in chain if _is_unsupported(e)), None)
    data_dependent = unsupported is None and _broke_on_data(chain, where)
    if data_dependent:  # the frame is on the dynamo error that carries the guard's
        unsupported = next((e for e in chain if getattr(e, "real_stack", None)), chain[-1])
    if unsupported is None or where.stage not in ("compile", "compiled"):
        return None
    frame = getattr(unsupported, "innermost_user_frame_summary", None)
    real_stack = getattr(unsupported, "real_stack", None)
    if frame is None and real_stack:
        frame = real_stack[-1]
    reason = "Data-dependent branching" if data_dependent else getattr(unsupported, "gb_type", None) or str(unsupported)
    summary = graph_break_summary(str(reason), frame) if frame is not None else graph_break_summary(str(unsupported))
    if "recompile limit" in summary.lower():
        return "compile_error", f"hit the recompile limit: {summary}"
    prefix = "the graph broke under fullgraph=True" if where.fullgraph else "dynamo refused the code"
    return "graph_break", f"{prefix}: {summary}"


def _compile_error(exc: BaseException, chain: list[BaseException], where: _Where) -> _Verdict:
    compiler_raised = any(_is_compiler_error(e) for e in chain)
    if not (where.stage == "compile" or (where.stage == "compiled" and compiler_raised)):
        return None
    line = first_meaningful_line(str(exc)) or _describe(exc)
    if not compiler_raised and type(exc).__name__ not in line:
        line = f"{type(exc).__name__}: {line}"
    return "compile_error", f"{where.backend or 'the compiler'} failed to compile: {line}"


#: Where a workload's own code was running, by stage, for the messages of an exit it asked for.
_WORKLOAD_PLACE = {"building": "while it was being built", "eager": "in its eager call",
                   "compile": "in its first compiled call", "compiled": "in a compiled call"}


def _exit_requested(exc: BaseException, chain: list[BaseException], where: _Where) -> _Verdict:
    """sys.exit / SystemExit and KeyboardInterrupt: the workload's code ended the worker, said in its own words.

    The worker runs in a session of its own, so no Ctrl-C of the terminal reaches it: a
    KeyboardInterrupt comes from the workload's code (or a SIGINT someone sent the worker).
    """
    place = _WORKLOAD_PLACE.get(where.stage, "during the run")
    if isinstance(exc, SystemExit):
        code = "" if exc.code is None else repr(exc.code)
        return "runtime_error", (f"the workload called sys.exit({code}) {place}: SystemExit ends the worker, so a "
                                 "workload returns its result or raises an error instead")
    if isinstance(exc, KeyboardInterrupt):
        return "runtime_error", (f"the workload raised KeyboardInterrupt {place}: no Ctrl-C reaches the worker, so "
                                 "the workload's code raised it (or a SIGINT was sent to the worker's process)")
    return None


@dataclass(frozen=True)
class _Libraries:
    """Folders whose frames are not the workload's own code: compile-lab's and torch's packages, and the standard
    library's apart from its site-packages (a model from an installed package is the workload's code)."""

    packages: tuple[str, ...]
    stdlib: tuple[str, ...]
    site: tuple[str, ...]

    @classmethod
    def here(cls) -> _Libraries:
        """This interpreter's folders (torch's when it is imported)."""
        import sys
        import sysconfig

        packages = [os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))]  # tui/
        torch_file = getattr(sys.modules.get("torch"), "__file__", None)
        if torch_file:
            packages.append(os.path.dirname(os.path.realpath(torch_file)))
        paths = sysconfig.get_paths()
        found = {key: os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib")
                 if paths.get(key)}
        stdlib = tuple(found[key] for key in ("stdlib", "platstdlib") if key in found)
        site = tuple(found[key] for key in ("purelib", "platlib") if key in found)
        return cls(tuple(packages), stdlib, site)

    def owns(self, path: str) -> bool:
        """Whether the file at ``path`` (resolved) belongs to compile-lab, torch or the standard library."""
        if any(_under(path, folder) for folder in self.packages):
            return True
        return any(_under(path, folder) for folder in self.stdlib) and not any(_under(path, f) for f in self.site)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def workload_frame(exc: BaseException, libraries: _Libraries | None = None) -> str:
    """``path:line in function`` of the innermost frame of the workload's own code that ``exc`` came through;
    empty where every frame is compile-lab's, torch's or the standard library's (a built-in workload)."""
    libraries = libraries or _Libraries.here()
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename.startswith("<") or libraries.owns(os.path.realpath(frame.filename)):
            continue  # <string>, <frozen ...>: no file to name
        return f"{frame.filename}:{frame.lineno} in {frame.name}"
    return ""


def _runtime_error(exc: BaseException, where: _Where) -> tuple[str, str]:
    """What every exception no rule claims is: the code that was running raised it; in eager, where in the
    workload's own code (its file and line), since its message alone rarely says."""
    what = {"compiled": "the compiled code", "eager": "the workload", "building": "building the workload"}
    frame = workload_frame(exc) if where.stage == "eager" else ""
    if frame:
        text = one_line(str(exc), 300)
        return "runtime_error", f"the workload raised {type(exc).__name__} at {frame}" + (f": {text}" if text else "")
    return "runtime_error", f"{what.get(where.stage, 'the worker')} raised {_describe(exc)}"


#: Tried in this order; the first that claims the exception decides its kind.
_RULES = (_exit_requested, _bad_options, _out_of_memory, _user_workload, _graph_break, _compile_error)


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
    where = _Where(stage, backend, fullgraph, memory_limit_gb)
    verdict = next((v for rule in _RULES if (v := rule(exc, chain, where)) is not None), None)
    kind, message = verdict or _runtime_error(exc, where)
    if kind == "bad_options":  # the user's input, said in one line: compile-lab's own stack is no help to them
        detail = ""
    return Failure(kind, one_line(message), detail)
