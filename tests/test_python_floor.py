"""The Python floor in pyproject.toml is true: nothing in tui/ or tests/ needs a newer Python.

vermin (in the test extra) knows which version each standard-library name and each piece of
syntax needs. It cannot know the type of an object, so it misses methods such as
``task.uncancel()`` (3.11); a short syntax-tree scan covers those by name. A line that must use
a newer API behind a version check can say so with vermin's own ``# novm`` comment.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ("tui", "tests")

#: Methods vermin cannot attribute to a type, and the Python that added them.
NEWER_METHODS = {
    "uncancel": (3, 11),  # asyncio.Task
    "cancelling": (3, 11),  # asyncio.Task
    "add_note": (3, 11),  # BaseException
}


def python_floor() -> tuple[int, int]:
    """(major, minor) of ``requires-python = ">=X.Y"`` in pyproject.toml (tomllib is 3.11+: a regex)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'^requires-python\s*=\s*"\s*>=\s*(\d+)\.(\d+)\s*"', text, re.MULTILINE)
    assert match, 'pyproject.toml: requires-python is not of the form ">=X.Y"'
    return int(match[1]), int(match[2])


def vermin(paths: list[str], floor: tuple[int, int]) -> subprocess.CompletedProcess[str]:
    """vermin over ``paths``, reporting only what needs a Python newer than ``floor``."""
    pytest.importorskip("vermin", reason="vermin is in the test extra: pip install -e '.[test]'")
    return subprocess.run(
        [sys.executable, "-c", "import sys, vermin; sys.exit(vermin.main())",
         "--no-config-file", "--no-tips", "--violations", "--no-make-paths-absolute",
         # `X | Y` outside annotations needs 3.10 (checked, should the floor go lower); annotations
         # are not evaluated: the modules that have them start with `from __future__ import annotations`.
         "--feature", "union-types", "--no-eval-annotations",
         f"--target={floor[0]}.{floor[1]}-", *paths],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )


def method_findings(source: str, filename: str, floor: tuple[int, int]) -> list[str]:
    """``file:line: .name() needs X.Y`` for every call of a :data:`NEWER_METHODS` method above ``floor``."""
    lines = source.splitlines()
    findings = []
    for node in ast.walk(ast.parse(source, filename)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        needs = NEWER_METHODS.get(node.func.attr)
        if needs is None or needs <= floor:
            continue
        line = lines[node.lineno - 1]
        if re.search(r"#\s*novm(ermin)?\b", line):
            continue
        findings.append(f"{filename}:{node.lineno}: .{node.func.attr}() needs Python {needs[0]}.{needs[1]}")
    return findings


def test_the_floor_is_read_from_pyproject():
    assert python_floor() >= (3, 10)


@pytest.mark.slow  # vermin over the whole tree: seconds (the method scan below stays in the inner loop)
def test_vermin_finds_nothing_newer_than_the_floor():
    floor = python_floor()
    result = vermin(list(CHECKED), floor)
    assert result.returncode == 0, (
        f"code that needs a Python newer than {floor[0]}.{floor[1]} (requires-python):\n{result.stdout}{result.stderr}")


def test_no_method_newer_than_the_floor():
    floor = python_floor()
    findings = []
    for top in CHECKED:
        for path in sorted((ROOT / top).rglob("*.py")):
            findings += method_findings(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)), floor)
    assert findings == []


def test_both_checks_can_fail(tmp_path):
    """A 3.11 call is reported by each check when the floor is 3.10 (the scan: not when it is 3.11)."""
    sample = tmp_path / "newer.py"
    sample.write_text(
        "import asyncio\n"
        "async def main(task):\n"
        "    async with asyncio.timeout(1):\n"
        "        task.uncancel()\n"
        "    task.cancelling()  # novm\n",
        encoding="utf-8",
    )
    result = vermin([str(sample)], (3, 10))
    assert result.returncode != 0 and "asyncio.timeout" in result.stdout
    source = sample.read_text(encoding="utf-8")
    assert method_findings(source, "newer.py", (3, 10)) == ["newer.py:4: .uncancel() needs Python 3.11"]
    assert method_findings(source, "newer.py", (3, 11)) == []
