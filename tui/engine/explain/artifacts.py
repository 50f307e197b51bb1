"""A run's files beside its history line: inductor's generated code, the traces, where they live.

Every run that keeps files has a data folder of its own under the runs directory
(``paths.runs_dir()``, or a :class:`~tui.engine.store.history.History`'s ``runs_dir``)::

    <run_id>.json                   per-iteration samples (History.append; older runs have only this)
    <run_id>/code/graph-<i>.py      inductor's output code of compiled graph i (History.append)
    <run_id>/trace.json             the profile pass as a Chrome/Perfetto trace (RunOptions.trace; the worker)
    <run_id>/torch_trace/           TORCH_TRACE's structured logs (RunOptions.torch_trace; torch in the worker)
    <run_id>/tlparse/index.html     tlparse's report of them (``compile-lab run --tlparse``, or the app)
    <run_id>/pruned.json            left by ``compile-lab prune``: what it deleted and when

The history line names none of these paths: they follow from the run id, so a data dir that moved
keeps its runs. :func:`load_code` (the app's Code tab, off the UI thread) and :func:`artifact_paths`
(the trace's path) read them back; a run whose files were pruned or deleted loads all the same, its
files reported gone. The caps below bound what one run stores; ``compile-lab prune`` and
:data:`DATA_CAP_ENV` bound the whole runs directory (:mod:`tui.engine.store.prune`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from tui import paths
from tui.engine.input_file import JSONError, load_json, read_regular
from tui.typed import JsonRecord
from tui.engine.status import RunStatus

__all__ = [
    "GraphCode", "RunArtifacts", "CodeListing", "ArtifactPaths", "PruneNote",
    "CODE_MAX_BYTES_PER_GRAPH", "CODE_MAX_BYTES_PER_RUN", "TRACE_MAX_BYTES", "TRACE_FILE", "TORCH_TRACE_DIR",
    "TLPARSE_DIR", "PRUNED_FILE", "kernel_names", "aot_id_of", "capped_code", "safe_name", "run_folder",
    "code_file", "store_code", "load_code", "artifact_paths", "read_pruned", "format_bytes",
]  # fmt: skip

CODE_MAX_BYTES_PER_GRAPH = 4 * 2**20
"""A graph's code kept whole up to this many UTF-8 bytes; a longer one is cut here (``truncated``)."""
CODE_MAX_BYTES_PER_RUN = 16 * 2**20
"""A run's code kept up to this total; the graphs past it are listed without code (``truncated``)."""
TRACE_MAX_BYTES = 256 * 2**20
"""A Chrome trace larger than this is not kept (the run warns); TORCH_TRACE's own logs are not capped."""

TRACE_FILE = "trace.json"
TORCH_TRACE_DIR = "torch_trace"
TLPARSE_DIR = "tlparse"
PRUNED_FILE = "pruned.json"
_NOTE_MAX_BYTES = 1 << 16
_CODE_DIR = "code"

_KERNEL_RE = re.compile(r"^(\w+) = async_compile\.\w+\(", re.MULTILINE)
_AOT_ID_RE = re.compile(r"^# AOT ID: \['([^'\]]*)'\]", re.MULTILINE)


def kernel_names(code: str) -> tuple[str, ...]:
    """The kernels a piece of inductor output code defines (``cpp_fused_add_mul_sin_0``, ``triton_poi_...``)."""
    return tuple(_KERNEL_RE.findall(code))


def aot_id_of(code: str) -> str:
    """The ``# AOT ID`` inductor writes at the top of a graph's code (``0_inference``, ``1_forward``), or ''."""
    found = _AOT_ID_RE.search(code[:2000])
    return found.group(1) if found else ""


@dataclass(frozen=True)
class GraphCode(JsonRecord):
    """Inductor's output code of one compiled graph, as the worker captured it during the measured run.

    ``index``: the order it was compiled in (0 first); ``compile_id``: dynamo's ``frame/compile`` id
    (``0/0``; ``1/0`` for the graph after a break, ``0/1`` for a recompile), '' when unknown;
    ``aot_id``: inductor's id of the graph (``0_inference``, ``0_forward``, ``0_backward``);
    ``size_bytes``: UTF-8 bytes of the whole code as generated; ``kernel_count``: kernels it defines;
    ``truncated``: the code kept is shorter than generated (the caps above); ``code``: the text, or
    None when it is stored apart and not loaded (a history line never holds it) or was never kept.
    """

    index: int = 0
    compile_id: str = ""
    aot_id: str = ""
    size_bytes: int = 0
    kernel_count: int = 0
    truncated: bool = False
    code: str | None = None

    @property
    def name(self) -> str:
        """``graph 0 (0/0, 0_inference)``: how a reader tells the graphs apart."""
        parts = [part for part in (self.compile_id, self.aot_id) if part]
        return f"graph {self.index}" + (f" ({', '.join(parts)})" if parts else "")

    @cached_property
    def kernels(self) -> tuple[str, ...]:
        """The kernel names the code defines (empty while the code is not loaded)."""
        return kernel_names(self.code or "")

    def without_code(self) -> GraphCode:
        """This graph as a history line keeps it: everything but the text."""
        return dataclasses.replace(self, code=None) if self.code is not None else self


def capped_code(index: int, compile_id: str, code: str, budget: int) -> GraphCode:
    """A :class:`GraphCode` of ``code`` cut to the per-graph cap and to ``budget`` bytes left for the run."""
    raw = code.encode("utf-8", errors="replace")
    limit = max(0, min(CODE_MAX_BYTES_PER_GRAPH, budget))
    kept = raw if len(raw) <= limit else raw[:limit]
    text = kept.decode("utf-8", errors="ignore") if kept else None
    return GraphCode(index=index, compile_id=compile_id, aot_id=aot_id_of(code), size_bytes=len(raw),
                     kernel_count=len(kernel_names(code)), truncated=len(kept) < len(raw), code=text)


@dataclass(frozen=True)
class RunArtifacts(JsonRecord):
    """What a run keeps beside its history line (the files live in its data folder, module docstring).

    ``graphs``: the generated code of each compiled graph (the text in memory until the run is stored,
    and in the JSON export); ``trace_file``: the Chrome trace's name in the folder, when one was
    written; ``torch_trace_dir``: the TORCH_TRACE directory's name in the folder, when asked for.
    """

    graphs: tuple[GraphCode, ...] = ()
    trace_file: str | None = None
    torch_trace_dir: str | None = None

    def without_code(self) -> RunArtifacts:
        """These artifacts as a history line keeps them (no code text)."""
        if all(graph.code is None for graph in self.graphs):
            return self
        return dataclasses.replace(self, graphs=tuple(graph.without_code() for graph in self.graphs))

    def added(self, graph: GraphCode) -> RunArtifacts:
        """With ``graph`` (one of the same index replaced)."""
        kept = tuple(g for g in self.graphs if g.index != graph.index)
        return dataclasses.replace(self, graphs=tuple(sorted((*kept, graph), key=lambda g: g.index)))


@dataclass(frozen=True)
class PruneNote(JsonRecord):
    """What ``compile-lab prune`` deleted of one run (``<run_id>/pruned.json``)."""

    pruned_at: str = ""
    bytes_freed: int = 0
    removed: tuple[str, ...] = ()


@dataclass(frozen=True)
class CodeListing:
    """A run's generated code as the app shows it: every graph (with its text where it could be read).

    ``why``: why some or all code is missing (None when every graph's code is here); ``folder``: the
    run's code folder (None for a run that never stored one).
    """

    graphs: tuple[GraphCode, ...] = ()
    why: str | None = None
    folder: str | None = None


@dataclass(frozen=True)
class ArtifactPaths:
    """Absolute paths of a run's files that exist now (None: not there); ``gone`` names what the record
    kept but the disk no longer has, ``pruned`` what prune said when it deleted them."""

    folder: str
    trace: str | None = None
    torch_trace: str | None = None
    tlparse_report: str | None = None
    code: str | None = None
    gone: tuple[str, ...] = ()
    pruned: PruneNote | None = None


def safe_name(name: str) -> str:
    """A file name taken from a run id or a history line, never pointing outside its directory."""
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(name).name)
    return cleaned.lstrip(".") or "run"


def run_folder(run_id: str, runs_dir: str | os.PathLike[str] | None = None) -> Path:
    """The data folder of run ``run_id`` (created by whoever writes into it)."""
    return Path(runs_dir if runs_dir is not None else paths.runs_dir()) / safe_name(run_id)


def code_file(folder: str | os.PathLike[str], index: int) -> Path:
    """Where graph ``index``'s code is stored in a run's folder."""
    return Path(folder) / _CODE_DIR / f"graph-{index}.py"


def store_code(folder: str | os.PathLike[str], graphs: tuple[GraphCode, ...]) -> int:
    """Write each graph's code to its file in ``folder`` (atomically); the bytes written.

    ExportError (one line, path and cause) when one cannot be written.
    """
    from tui.engine.atomic import atomic_writer

    written = 0
    for graph in graphs:
        if graph.code is None:
            continue
        target = code_file(folder, graph.index)
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_writer(target, newline="") as stream:
            stream.write(graph.code)
        written += len(graph.code.encode("utf-8"))
    return written


def read_pruned(folder: str | os.PathLike[str]) -> PruneNote | None:
    """What prune left in a run's folder, or None (never pruned, or unreadable)."""
    try:
        data = load_json(read_regular(Path(folder) / PRUNED_FILE, _NOTE_MAX_BYTES))
    except (OSError, JSONError):
        return None
    return PruneNote.from_json(data) if isinstance(data, dict) else None


def _source(record: Any) -> Any:
    """The record whose files a row shows: a group's (:class:`~tui.engine.store.repeats.GroupRecord`) first
    member that kept any (the one that ran the profile pass), else the record itself."""
    for member in getattr(record, "members", None) or ():
        artifacts = member.artifacts
        if artifacts.graphs or artifacts.trace_file or artifacts.torch_trace_dir:
            return member
    return record


def _folder_of(record: Any) -> Path:
    folder = getattr(record, "data_dir", None)
    return Path(folder) if folder is not None else run_folder(record.run_id)


def _gone_why(folder: Path, what: str) -> str:
    note = read_pruned(folder)
    if note is not None:
        return f"{what} pruned on {note.pruned_at or 'an earlier day'} (compile-lab prune)"
    return f"{what} gone from {folder} (deleted, or the data dir moved)"


def load_code(record: Any) -> CodeListing:
    """A run's graphs with their code, read from its folder where the record does not hold it.

    For the app's Code tab; it reads files, so call it off the UI thread. Never raises: what cannot be
    read is a graph without code and a ``why``. ``record`` is a RunRecord or a group's row.
    """
    source = _source(record)
    graphs, folder = source.artifacts.graphs, _folder_of(source)
    if not graphs:
        return CodeListing(why=_no_code_why(source))
    loaded, missing = [], 0
    for graph in graphs:
        if graph.code is None:
            try:
                code = read_regular(code_file(folder, graph.index), CODE_MAX_BYTES_PER_GRAPH).decode("utf-8")
                graph = dataclasses.replace(graph, code=code)
            except (OSError, UnicodeDecodeError):
                missing += 1
        loaded.append(graph)
    why = None
    if missing:
        why = _gone_why(folder, f"the code of {missing} of {len(graphs)} graph(s)")
    elif any(graph.truncated for graph in loaded):
        why = (f"some code was cut at compile-lab's caps ({format_bytes(CODE_MAX_BYTES_PER_GRAPH)} a graph, "
               f"{format_bytes(CODE_MAX_BYTES_PER_RUN)} a run)")
    return CodeListing(graphs=tuple(loaded), why=why, folder=str(folder / _CODE_DIR))


def _no_code_why(record: Any) -> str:
    options = record.options
    if options.backend != "inductor":
        return f"the {options.backend} backend generates no code (inductor does)"
    if record.status != RunStatus.DONE and record.compile_s is None:
        return "the run ended before anything was compiled"
    return "no generated code was kept (a run from before compile-lab kept it, or inductor compiled no graph)"


def artifact_paths(record: Any) -> ArtifactPaths:
    """The paths of a run's files as they are on disk now (checks existence: off the UI thread for many runs).

    ``trace`` is the Chrome trace of the profile pass (``--trace``; open it in ui.perfetto.dev),
    ``torch_trace`` the TORCH_TRACE directory, ``tlparse_report`` tlparse's index.html once made.
    """
    source = _source(record)
    artifacts, folder = source.artifacts, _folder_of(source)
    gone: list[str] = []

    def existing(name: str | None, what: str) -> str | None:
        if not name:
            return None
        target = folder / safe_name(name)
        if target.exists():
            return str(target)
        gone.append(what)
        return None

    trace = existing(artifacts.trace_file, "trace")
    torch_trace = existing(artifacts.torch_trace_dir, "torch_trace")
    report = folder / TLPARSE_DIR / "index.html"
    code = folder / _CODE_DIR
    has_code = code.is_dir()
    if artifacts.graphs and any(g.code is None for g in artifacts.graphs) and not has_code:
        gone.append("code")
    return ArtifactPaths(folder=str(folder), trace=trace, torch_trace=torch_trace,
                         tlparse_report=str(report) if report.is_file() else None,
                         code=str(code) if has_code else None, gone=tuple(gone),
                         pruned=read_pruned(folder) if gone or not folder.exists() else None)


def format_bytes(size: float) -> str:
    """``1.2 GB``, ``340 MB``, ``12 kB``, ``0 B`` (decimal units, as ``du -h --si`` and disk sizes)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            value = size / scale
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{int(size)} B"

