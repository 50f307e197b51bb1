"""Security: no shell and no string-built command anywhere in tui/; a user's file runs only in the worker.

The source check reads every module of the package as a syntax tree (a comment or a string
that mentions ``shell=True`` is no finding; an alias is): a ``shell=`` argument other than
``False``, ``os.system``/``os.popen``/``create_subprocess_shell`` and their relatives, and a
process started from one string (literal, f-string, ``%``/``+``/``.format``) are findings.
"""

from __future__ import annotations

import ast
import os
import sys

import pytest

from fault_helpers import REPO, write_workload
from tui import cli

SHELL_CALLS = {"system", "popen", "create_subprocess_shell", "getoutput", "getstatusoutput", "spawnlp", "spawnvp"}
"""Calls that hand a command line to a shell (by their last name: ``os.system``, ``os.popen``...)."""

PROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output"}
"""``subprocess`` calls whose first argument is the command: it must be a list, never one string."""


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _string_built(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
        return _string_built(node.left) or _string_built(node.right)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("format", "join")


def shell_findings(source: str, filename: str) -> list[str]:
    """``file:line: what`` for every shell use or string-built command in ``source``."""
    findings = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.ImportFrom) and node.module in ("os", "subprocess", "asyncio", "commands"):
            for alias in node.names:
                if alias.name in SHELL_CALLS:
                    findings.append(f"{filename}:{node.lineno}: imports {node.module}.{alias.name}")
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        last = name.rpartition(".")[2]
        for keyword in node.keywords:
            if keyword.arg == "shell" and not (
                isinstance(keyword.value, ast.Constant) and keyword.value.value is False
            ):
                findings.append(f"{filename}:{node.lineno}: {name}(shell=...)")
        if last in SHELL_CALLS:
            findings.append(f"{filename}:{node.lineno}: {name}()")
        if name.startswith("subprocess.") and last in PROCESS_CALLS and node.args and _string_built(node.args[0]):
            findings.append(f"{filename}:{node.lineno}: {name}() with a command built as one string")
    return findings


def test_the_source_check_finds_what_it_looks_for():
    """The check itself can fail: each kind of finding in a sample is reported, a safe call is not."""
    sample = (
        "import os, subprocess\nfrom os import system\n"
        "subprocess.run('ls -l', shell=True)\n"
        "os.system('rm -rf x')\n"
        "os.popen(cmd)\n"
        "subprocess.check_output(f'g++ {path}')\n"
        "subprocess.run(['g++', path], shell=False)\n"
        "# subprocess.run(x, shell=True) in a comment\n"
    )
    assert shell_findings(sample, "sample.py") == [
        "sample.py:2: imports os.system",
        "sample.py:3: subprocess.run(shell=...)",
        "sample.py:3: subprocess.run() with a command built as one string",
        "sample.py:4: os.system()",
        "sample.py:5: os.popen()",
        "sample.py:6: subprocess.check_output() with a command built as one string",
    ]


def test_no_shell_and_no_string_built_command_in_the_package():
    """Every module under tui/: processes start from argument lists, never through a shell."""
    modules = sorted((REPO / "tui").rglob("*.py"))
    assert len(modules) > 20
    findings = [f for path in modules for f in shell_findings(path.read_text(), str(path.relative_to(REPO)))]
    assert findings == []


PROBE = """
    import os
    import sys

    import torch

    with open(os.environ["PROBE_MARKER"], "a") as marker:
        marker.write(f"{os.getpid()}\\n")  # who imported this file


    def make_workload(device, dtype):
        return (lambda x: x + 1), (torch.ones(4),)
"""


@pytest.mark.slow
@pytest.mark.torch  # a real worker runs the user's file
def test_a_user_workload_runs_only_in_the_worker(tmp_path, monkeypatch):
    """After a CLI run of a user's file, it was imported by the worker only, never by this process.

    The app hands runs to the same WorkerRunner, which only ever sends the file's path.
    """
    folder = tmp_path / "user-models"
    folder.mkdir()
    path = write_workload(folder, "compile_lab_probe_model.py", PROBE)
    marker = tmp_path / "importers.txt"
    monkeypatch.setenv("PROBE_MARKER", str(marker))
    code = cli.main(["run", "--workload", str(path), "--backend", "eager", "--warmup", "0", "--iters", "2",
                     "--block-size", "1", "--no-profile", "--no-history", "--quiet"])
    assert code == 0
    importers = [int(line) for line in marker.read_text().split()]
    assert len(importers) == 1 and importers[0] != os.getpid()
    assert "compile_lab_probe_model" not in sys.modules
    assert not [m for m in list(sys.modules.values())
                if (getattr(m, "__file__", None) or "").startswith(str(folder))]
    assert str(folder) not in sys.path
