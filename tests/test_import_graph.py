"""The import graph, read from the source: the front ends never import each other.

Every ``import`` statement of every module under ``tui/`` counts, those inside functions too (a lazy
import is still a dependency). ``tui.cli`` never imports ``tui.app``, ``tui.app`` never imports
``tui.cli``, ``tui.report`` imports neither, and what they share lives in ``tui.present``, which
imports none of them (nor textual or torch). ``tui.launch``, the entry point, is the one module that
knows both front ends. The checker is itself tested on a synthetic tree, so a forbidden edge is seen.
"""

from __future__ import annotations

import ast
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


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def forbidden_edges(graph: dict[str, set[str]], rules=FORBIDDEN) -> list[str]:
    """``importer -> imported`` for each import that breaks a rule."""
    return sorted(
        f"{importer} -> {imported}"
        for importer, imported_set in graph.items()
        for imported in imported_set
        for source, target in rules
        if _under(importer, source) and _under(imported, target)
    )


def test_the_front_ends_never_import_each_other():
    assert forbidden_edges(import_graph(ROOT)) == []


def test_the_entry_point_knows_both_front_ends():
    """``tui.launch`` hands the app's opener to the command line (so the rules above leave it out)."""
    imported = import_graph(ROOT)["tui.launch"]
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
