"""The project explains itself: its documents link only to files it has, and nothing cites a file
that is not in the repository (the method is in docs/METHOD.md)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: A notes file that once lived outside the repository; spelt in two parts so this file is no finding.
GONE = "ANCHORS" + ".md"

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def tracked_files() -> list[Path]:
    """The files git tracks (every file under the root, minus .git, without git)."""
    if shutil.which("git") and (ROOT / ".git").exists():
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        return [ROOT / name for name in out.decode().split("\0") if name]
    return [p for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts]


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def links(text: str) -> list[str]:
    """Link targets of a markdown text, outside code blocks and code spans."""
    prose = _CODE_SPAN.sub("", _FENCE.sub("", text))
    return _LINK.findall(prose)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return {slug(h) for h in _HEADING.findall(text)}


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """``file: target (why)`` for each relative link of ``path`` that leads nowhere (or out of ``root``)."""
    problems = []
    for target in links(path.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, https:, mailto:
            continue
        file_part, _, fragment = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(root)}: {target}"
        if not linked.exists():
            problems.append(f"{where} (no such file)")
        elif root not in linked.parents and linked != root:
            problems.append(f"{where} (outside the repository)")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
            problems.append(f"{where} (no such heading)")
    return problems


def test_no_tracked_file_cites_a_file_outside_the_repository():
    citing = []
    for path in tracked_files():
        try:
            if GONE.encode() in path.read_bytes():
                citing.append(str(path.relative_to(ROOT)))
        except OSError:  # tracked but deleted in this working tree
            continue
    assert citing == [], f"these files cite {GONE}, which is not in the repository: docs/METHOD.md has the method"


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file_that_exists(path):
    assert broken_links(path) == []


def test_the_link_check_can_fail(tmp_path):
    """A missing file, a missing heading and a link out of the repository are each reported."""
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "A.md").write_text("# Title: one `thing`\n", encoding="utf-8")
    (tmp_path / "elsewhere.md").write_text("x", encoding="utf-8")
    page = root / "README.md"
    page.write_text(
        "[ok](docs/A.md) [ok too](docs/A.md#title-one-thing) [web](https://example.org/x.md)\n"
        "[gone](docs/B.md) [no heading](docs/A.md#nope) [out](../elsewhere.md)\n"
        "`[in code](docs/C.md)`\n```\n[in a block](docs/D.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(page, root) == [
        "README.md: docs/B.md (no such file)",
        "README.md: docs/A.md#nope (no such heading)",
        "README.md: ../elsewhere.md (outside the repository)",
    ]


def _undocumented_flags(readme: str) -> list[str]:
    """Each command's options (``--help`` aside) of which the README names no long spelling: a new option's flag
    is written down where a user reads the commands, not only in ``--help``."""
    from tui.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    missing = []
    for name, command in commands.items():
        for action in command._actions:
            spellings = [flag for flag in action.option_strings if flag.startswith("--") and flag != "--help"]
            if spellings and not any(re.search(re.escape(flag) + r"(?![\w-])", readme) for flag in spellings):
                missing.append(f"{name} {spellings[0]}")
    return missing


def test_the_readme_names_every_flag_of_every_command():
    assert _undocumented_flags((ROOT / "README.md").read_text()) == []


def test_the_flag_check_can_fail():
    readme = (ROOT / "README.md").read_text().replace("--noise-limit", "--n-limit")
    assert {"run --noise-limit", "sweep --noise-limit"} <= set(_undocumented_flags(readme))


def _unnamed_scripts(readme: str) -> list[str]:
    """The scripts (and folders) of ``benchmarks/`` the README's development section does not name."""
    entries = [p.name + ("/" if p.is_dir() else "") for p in sorted((ROOT / "benchmarks").iterdir())
               if p.suffix in (".py", ".sh") or (p.is_dir() and not p.name.startswith((".", "__")))]
    return [name for name in entries if f"`{name}`" not in readme and f"`{name.rstrip('/')}`" not in readme]


def test_the_readme_names_every_benchmark_script():
    assert _unnamed_scripts((ROOT / "README.md").read_text()) == []
    assert _unnamed_scripts((ROOT / "README.md").read_text().replace("`wall_parts.py`", "")) == ["wall_parts.py"]


def test_the_readmes_graph_break_example_names_the_line_the_workload_breaks_at():
    """The table of what a user sees quoted ``worker/workloads.py:157`` after the file had moved on to 140."""
    source = (ROOT / "tui" / "engine" / "worker" / "workloads.py").read_text().splitlines()
    line = next(n for n, text in enumerate(source, 1) if text.strip() == "if y.sum() > 0:")
    quoted = re.search(r"Data-dependent branching at worker/workloads\.py:(\d+) in graph_break_fn",
                       (ROOT / "README.md").read_text())
    assert quoted and int(quoted.group(1)) == line
