"""The codebase keeps its shape: no module in tui/ over 500 lines, no function over cyclomatic complexity 20.

Both limits come from docs/ARCHITECTURE.md ("where a change goes"): a module near 500 lines
holds two jobs, a function over 20 branches is one a reader cannot hold in their head.
"""

from __future__ import annotations

from pathlib import Path

import radon.complexity as radon_complexity  # in the test extras

PACKAGE = Path(__file__).resolve().parents[1] / "tui"
MAX_LINES = 500
MAX_COMPLEXITY = 20


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_package_is_where_the_limits_look():
    assert len(_modules()) > 20 and (PACKAGE / "engine" / "store" / "results.py").exists()


def test_no_module_is_over_500_lines():
    too_long = {str(p.relative_to(PACKAGE.parent)): n for p in _modules()
                if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not too_long, f"split these by responsibility: {too_long}"


def test_no_function_is_over_complexity_20():
    too_complex = {}
    for path in _modules():
        for block in radon_complexity.cc_visit(path.read_text()):
            if block.complexity > MAX_COMPLEXITY:
                too_complex[f"{path.relative_to(PACKAGE.parent)}:{block.lineno} {block.fullname}"] = block.complexity
    assert not too_complex, f"break these up: {too_complex}"


def test_the_complexity_check_sees_a_complex_function():
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(MAX_COMPLEXITY + 1))
    [block] = radon_complexity.cc_visit(f"def f(x):\n{branches}\n    return -1\n")
    assert block.complexity > MAX_COMPLEXITY
