"""The import graph, read from the source: the front ends never import each other.

Every ``import`` statement of every module under ``tui/`` counts, those inside functions too (a lazy
import is still a dependency). ``tui.cli`` never imports ``tui.app``, ``tui.app`` never imports
``tui.cli``, ``tui.report`` imports neither, and what they share lives in ``tui.present``, which
imports none of them (nor textual or torch). ``tui.launch``, the entry point, is the one module that
knows both front ends. The checker is itself tested on a synthetic tree, so a forbidden edge is seen.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping, Set as AbstractSet
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN = (
    ("tui.cli", "tui.app"),
    ("tui.app", "tui.cli"),
    ("tui.report", "tui.app"),
    ("tui.report", "tui.cli"),
    ("tui.present", "tui.app"),
    ("tui.present", "tui.cli"),
    ("tui.present", "tui.report"),
    ("tui.present", "textual"),
    ("tui.present", "torch"),
)
"""(importer's package, imported package): no module under the first imports anything under the second."""


def module_name(path: Path, root: Path) -> str:
    """``tui/app/app.py`` -> ``tui.app.app``; a package's ``__init__.py`` is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path) -> set[str]:
    """The modules ``path`` imports (relative imports resolved; ``from a import b`` gives ``a`` and ``a.b``)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return found


def import_graph(root: Path, package: str = "tui") -> dict[str, set[str]]:
    """Every module under ``root/package`` -> the modules it imports."""
    return {module_name(path, root): imports_of(path, root) for path in sorted((root / package).rglob("*.py"))}


@functools.cache
def tui_graph() -> dict[str, frozenset[str]]:
    """The package's own import graph, read once per test process (every test here only reads it)."""
    return {module: frozenset(imported) for module, imported in import_graph(ROOT).items()}


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def forbidden_edges(graph: Mapping[str, AbstractSet[str]], rules=FORBIDDEN) -> list[str]:
    """``importer -> imported`` for each import that breaks a rule."""
    return sorted(
        f"{importer} -> {imported}"
        for importer, imported_set in graph.items()
        for imported in imported_set
        for source, target in rules
        if _under(importer, source) and _under(imported, target)
    )


def test_the_front_ends_never_import_each_other():
    assert forbidden_edges(tui_graph()) == []


def test_the_entry_point_knows_both_front_ends():
    """``tui.launch`` hands the app's opener to the command line (so the rules above leave it out)."""
    imported = tui_graph()["tui.launch"]
    assert any(_under(name, "tui.app") for name in imported)
    assert any(_under(name, "tui.cli") for name in imported)


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_checker_sees_a_forbidden_edge_however_it_is_written(tmp_path):
    """Absolute, relative, ``from tui import app`` and lazy imports inside a function are all edges."""
    for package in ("tui", "tui/cli", "tui/app", "tui/report", "tui/present"):
        _write(tmp_path, f"{package}/__init__.py", "")
    _write(tmp_path, "tui/present/format.py", "import json\n")
    _write(tmp_path, "tui/cli/run.py", "from tui.present.format import x\n")
    assert forbidden_edges(import_graph(tmp_path)) == []

    _write(tmp_path, "tui/cli/run.py", "def f():\n    from tui.app.app import run_app\n")
    _write(tmp_path, "tui/app/queue.py", "from ..cli import parse\n")
    _write(tmp_path, "tui/report/page.py", "from tui import app\n")
    _write(tmp_path, "tui/present/chart.py", "import textual.widgets\n")
    assert forbidden_edges(import_graph(tmp_path)) == [
        "tui.app.queue -> tui.cli",
        "tui.app.queue -> tui.cli.parse",
        "tui.cli.run -> tui.app.app",
        "tui.cli.run -> tui.app.app.run_app",
        "tui.present.chart -> textual.widgets",
        "tui.report.page -> tui.app",
    ]


def test_the_command_line_opens_the_app_through_the_opener_it_is_given(monkeypatch, capsys):
    """With no subcommand, ``tui.cli.main`` calls its ``open_app``; ``tui.launch.main`` gives it the app's."""
    import tui.cli
    import tui.launch

    opened = []

    def fake_open(**kwargs):
        opened.append(kwargs)
        return 0

    assert tui.cli.main(["--no-mouse", "--theme", "textual-ansi"], open_app=fake_open) == 0
    assert opened == [{"no_mouse": True, "theme": "textual-ansi", "cluster": None}]
    monkeypatch.setattr(tui.launch, "open_app", fake_open)
    assert tui.launch.main(["--cluster", "10.0.0.1:6379", "--cluster-cpus", "2"]) == 0
    assert opened[-1]["cluster"].address == "10.0.0.1:6379" and opened[-1]["cluster"].cpus == 2.0
    assert tui.cli.main([]) == 0  # no opener: one line, no app
    assert "no app here" in capsys.readouterr().out


def import_cycles(graph: Mapping[str, AbstractSet[str]], package: str) -> list[list[str]]:
    """The import circles among the modules under ``package`` (each a strongly connected set of two or more,
    sorted). Every import counts: at the top, inside a function, under ``TYPE_CHECKING``."""
    modules = sorted(name for name in graph if _under(name, package))
    edges = {name: sorted(t for t in graph[name] if t in graph and _under(t, package) and t != name)
             for name in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative (no recursion limit)
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    cycles.append(sorted(members))

    for name in modules:
        if name not in index:
            visit(name)
    return sorted(cycles)


def test_no_import_circle_inside_the_app():
    """No module of ``tui.app`` imports one that imports it back (the App's parts type against the controller)."""
    assert import_cycles(tui_graph(), "tui.app") == []


def test_the_cycle_finder_sees_a_circle_however_it_is_written(tmp_path):
    for package in ("tui", "tui/app", "tui/app/components"):
        _write(tmp_path, f"{package}/__init__.py", "")
    _write(tmp_path, "tui/app/app.py", "from tui.app.queueing import Queue\nfrom tui.app import model\n")
    _write(tmp_path, "tui/app/model.py", "import json\n")
    _write(tmp_path, "tui/app/queueing.py", "from tui.app.model import Model\n")
    assert import_cycles(import_graph(tmp_path), "tui.app") == []

    _write(tmp_path, "tui/app/queueing.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                            "    from tui.app.app import CompileLabApp\n")
    _write(tmp_path, "tui/app/components/pane.py", "def f():\n    from ..model import x\n")
    _write(tmp_path, "tui/app/model.py", "from tui.app.components.pane import Pane\n")
    assert import_cycles(import_graph(tmp_path), "tui.app") == [
        ["tui.app.app", "tui.app.queueing"],
        ["tui.app.components.pane", "tui.app.model"],
    ]


ENGINE_VOCABULARY = {"atomic", "catalog", "cpu_list", "input_file", "option_table", "options", "payloads", "prctl",
                     "protocol", "status", "thresholds"}
"""The modules at the top of ``tui/engine/``: the words every part shares, the worker included."""
ENGINE_PARTS = ("explain", "measure", "store", "compare", "run", "runner", "cluster", "tune", "worker")
"""The engine's subpackages; each may import the vocabulary and the parts before it, never one after it
(``worker`` stands apart: see the test of its imports)."""


def engine_part(module: str) -> str | None:
    """``tui.engine.store.results`` -> ``tui.engine.store``; a top-level module is its own part."""
    parts = module.split(".")
    return ".".join(parts[:3]) if parts[:2] == ["tui", "engine"] and len(parts) > 2 else None


def part_graph(graph: Mapping[str, AbstractSet[str]]) -> dict[str, set[str]]:
    """The import graph of the engine's parts (a subpackage or a top-level module), lazy imports included."""
    parts: dict[str, set[str]] = {}
    for importer, imported_set in graph.items():
        source = engine_part(importer)
        if source is None:
            continue
        targets = {engine_part(name) for name in imported_set if name in graph or name.rpartition(".")[0] in graph}
        parts.setdefault(source, set()).update(t for t in targets if t is not None and t != source)
    return parts


def test_the_engines_top_level_is_its_vocabulary_and_each_part_says_its_job():
    engine = ROOT / "tui" / "engine"
    assert {p.stem for p in engine.glob("*.py")} - {"__init__"} == ENGINE_VOCABULARY
    assert {p.name for p in engine.iterdir() if (p / "__init__.py").exists()} == set(ENGINE_PARTS)
    for part in ENGINE_PARTS:
        doc = ast.get_docstring(ast.parse((engine / part / "__init__.py").read_text(encoding="utf-8")))
        assert doc and doc.strip(), f"tui/engine/{part}/__init__.py has no docstring"


def test_the_engines_parts_import_one_way():
    """The vocabulary imports no part but ``explain`` (events carry a Profile and GraphCode); a part imports
    only the vocabulary and the parts listed before it; so no two parts import each other, even lazily."""
    graph = part_graph(tui_graph())
    assert import_cycles(graph | {t: set() for ts in graph.values() for t in ts if t not in graph}, "tui.engine") == []
    for name in ENGINE_VOCABULARY:
        parts = {t for t in graph.get(f"tui.engine.{name}", set()) if t.rpartition(".")[2] in ENGINE_PARTS}
        assert parts <= {"tui.engine.explain"}, f"tui.engine.{name} imports {sorted(parts)}"
    order = [p for p in ENGINE_PARTS if p != "worker"]
    for index, part in enumerate(order):
        later = {f"tui.engine.{p}" for p in [*order[index + 1:], "worker"]}
        assert not graph.get(f"tui.engine.{part}", set()) & later, f"tui.engine.{part} imports a later part"


def test_no_import_circle_inside_the_engine():
    """No module of ``tui.engine`` imports one that imports it back, however: at the top, inside a function (lazy)
    or under ``TYPE_CHECKING`` (the cycle finder counts them all: see its test above)."""
    assert import_cycles(tui_graph(), "tui.engine") == []


def test_no_import_circle_anywhere_in_the_package():
    """Nor anywhere else in ``tui``: the command line's parser sits above its subcommands, which read the
    parsed flags from ``tui.cli.parse`` below them."""
    assert import_cycles(tui_graph(), "tui") == []


def test_the_worker_imports_only_the_vocabulary_measure_and_explain():
    """The worker process loads what it needs of the parent's side: the shared words, the statistics of its
    block plan (``measure``) and the profile's parsing (``explain``); never the store, the session or a runner."""
    graph = tui_graph()
    imported = {name for module, names in graph.items() if _under(module, "tui.engine.worker") for name in names
                if _under(name, "tui") and name != "tui" and not _under(name, "tui.engine.worker")
                and (name in graph or name.rpartition(".")[0] in graph)}
    modules = {name if name in graph else name.rpartition(".")[0] for name in imported}
    assert modules == {
        "tui.engine.catalog", "tui.engine.cpu_list", "tui.engine.options", "tui.engine.payloads", "tui.engine.prctl",
        "tui.engine.protocol", "tui.engine.thresholds", "tui.engine.measure.clocks", "tui.engine.measure.stats",
        "tui.engine.explain.artifacts", "tui.engine.explain.chrome_trace", "tui.engine.explain.host_time",
        "tui.engine.explain.kernels", "tui.engine.explain.profile_types", "tui.logs", "tui.paths",
        "tui.telemetry.model",
    }


def test_the_part_graph_sees_a_circle_between_parts(tmp_path):
    for package in ("tui", "tui/engine", "tui/engine/store", "tui/engine/run"):
        _write(tmp_path, f"{package}/__init__.py", "")
    _write(tmp_path, "tui/engine/options.py", "import json\n")
    _write(tmp_path, "tui/engine/store/results.py", "from tui.engine.options import RunOptions\n")
    _write(tmp_path, "tui/engine/run/session.py", "from tui.engine.store.results import RunRecord\n")
    graph = part_graph(import_graph(tmp_path))
    assert graph["tui.engine.run"] == {"tui.engine.store"}
    assert import_cycles(graph, "tui.engine") == []

    _write(tmp_path, "tui/engine/store/history.py", "def f():\n    from ..run import session\n")
    assert import_cycles(part_graph(import_graph(tmp_path)), "tui.engine") == [["tui.engine.run", "tui.engine.store"]]
