"""What the worker keeps beside the timings: inductor's generated code, and the profile pass as a trace.

**Code.** :class:`CodeCapture` sets inductor's ``GraphLowering.save_output_code`` hook, which it
calls with each graph's output code when it compiles the graph and also on an FX-graph cache hit
(the normal case: ``config.trace.enabled`` / ``TORCH_COMPILE_DEBUG`` skip cached graphs). It is set
from the measured compile to the end of measuring, so a recompile while warming up or measuring is
kept too, and removed before the profile pass (whose compile adds provenance and, on the CPU, kernel
profiling calls: not the code that was measured). The hook costs a list append per compiled graph
(2 us, measured on the CPU with torch 2.13); a handler on the structured trace's ``output_code``
artifact would also work on cache hits, but with a handler attached every structured artifact is
built, which cost 20-40 ms of one compile of an 8-block MLP: it would be inside ``compile_s``.

**Trace.** :class:`ChromeTraceWriter` is the profile pass's ``on_trace``: each side's profiler is
exported to a part file in the run's data folder, and :meth:`ChromeTraceWriter.finish` merges the
two into ``trace.json`` (:func:`tui.engine.explain.chrome_trace.merge_traces`), the parts removed. Its
cost is inside the profile pass's ``profile_s``, never in the timings.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from tui.engine.explain.artifacts import (
    CODE_MAX_BYTES_PER_RUN,
    TRACE_FILE,
    TRACE_MAX_BYTES,
    GraphCode,
    capped_code,
    format_bytes,
)
from tui.engine.explain.chrome_trace import merge_traces
from tui.engine.worker.failures import one_line

__all__ = ["CodeCapture", "ChromeTraceWriter"]

log = logging.getLogger(__name__)


def _graph_lowering() -> Any:
    from torch._inductor.graph import GraphLowering

    return GraphLowering


def _compile_id() -> str:
    """Dynamo's id of the graph being compiled now (``0/0``), '' when torch does not say."""
    try:
        trace_id = torch._guards.CompileContext.current_trace_id()
    except Exception:  # a private API: a torch without it names no graph
        log.debug("dynamo's compile id was not read", exc_info=True)
        return ""
    return "" if trace_id is None else str(trace_id.compile_id)


class CodeCapture:
    """Keeps the output code of every graph inductor compiles (or loads from its cache) while installed.

    ``why``: set when this torch has no hook to capture it with (then nothing is kept).
    """

    def __init__(self) -> None:
        self.captured: list[tuple[str, str]] = []
        self.why: str | None = None
        self._previous: Callable[[str], None] | None = None
        self._installed = False

    def install(self) -> CodeCapture:
        """Set the hook (chained to one already set, e.g. a test's ``run_and_get_code``)."""
        try:
            lowering = _graph_lowering()
            self._previous = lowering.save_output_code
        except (ImportError, AttributeError) as exc:
            self.why = f"torch {torch.__version__} has no inductor output-code hook ({type(exc).__name__})"
            return self
        lowering.save_output_code = self._keep
        self._installed = True
        return self

    def remove(self) -> None:
        """Put back what was there before (safe to call twice)."""
        if self._installed:
            _graph_lowering().save_output_code = self._previous
            self._installed = False

    def _keep(self, code: str) -> None:
        self.captured.append((_compile_id(), code))
        if self._previous is not None:
            self._previous(code)

    def graphs(self) -> list[GraphCode]:
        """The graphs kept so far, in compile order, within :data:`CODE_MAX_BYTES_PER_RUN` (caps in
        :mod:`tui.engine.explain.artifacts`; a graph past it is listed without its code)."""
        budget, result = CODE_MAX_BYTES_PER_RUN, []
        for index, (compile_id, code) in enumerate(self.captured):
            graph = capped_code(index, compile_id, code, budget)
            budget -= len((graph.code or "").encode("utf-8"))
            result.append(graph)
        return result


class ChromeTraceWriter:
    """The profile pass's ``on_trace``: both sides' profilers as one Chrome trace in ``folder``.

    ``written``: the trace's size in bytes once :meth:`finish` wrote it; ``why``: why it did not.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.parts: dict[str, Path] = {}
        self.written: int | None = None
        self.why: str | None = None

    def __call__(self, side: str, prof: Any) -> None:
        """Export one side's finished profiler (called by :func:`tui.engine.worker.profile.run_profile`)."""
        part = self.folder / f".trace-{side}.part.json"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            prof.export_chrome_trace(str(part))
        except Exception as exc:  # the run goes on without a trace
            log.info("the %s side's trace was not exported", side, exc_info=True)
            self.why = f"the {side} side's trace could not be exported: {one_line(str(exc), 200)}"
            return
        self.parts[side] = part

    def finish(self) -> str | None:
        """Merge the parts into ``trace.json``; its name, or None (``why`` says why). The parts are removed."""
        try:
            if self.why is None and set(self.parts) != {"eager", "compiled"}:
                self.why = "the profile pass ended before both sides were profiled"
            if self.why is not None:
                return None
            traces = {side: json.loads(self.parts[side].read_text(encoding="utf-8")) for side in ("eager", "compiled")}
            return self._write(merge_traces(traces))
        except (OSError, ValueError) as exc:
            self.why = f"the trace could not be written: {one_line(str(exc), 200)}"
            return None
        finally:
            for part in self.parts.values():
                part.unlink(missing_ok=True)

    def _write(self, merged: dict[str, Any]) -> str | None:
        target = self.folder / TRACE_FILE
        temporary = self.folder / f".{TRACE_FILE}.tmp"
        with temporary.open("w", encoding="utf-8") as stream:
            json.dump(merged, stream, separators=(",", ":"))
        size = temporary.stat().st_size
        if size > TRACE_MAX_BYTES:
            temporary.unlink()
            self.why = f"the trace was {format_bytes(size)}, over the cap of {format_bytes(TRACE_MAX_BYTES)}: not kept"
            return None
        os.replace(temporary, target)
        self.written = size
        return TRACE_FILE
