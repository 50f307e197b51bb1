"""No command writes an output over one of its own inputs.

``compare base.json new.json --json base.json`` used to replace the baseline with the comparison
(exit 0), and ``run --workload wl.py --csv wl.py`` the workload with the summary CSV. Every output
of ``compare``, ``report``, ``run`` and ``sweep`` is now refused before anything runs or is read when
it names (after resolving links) the same file as BASE, NEW, one of the RUNS, the ``--workload``
file or a ``--python`` interpreter: one line naming the flag and the input, exit code 2, the input
byte-identical, no worker started, no history line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fault_helpers import ended_record
from tui import cli, paths
from tui.engine.store.export import write_json

ALLOWED = "(allowed: a file other than the command's inputs)"
RUN = ["--device", "cpu", "--iters", "4", "--block-size", "2", "--quiet"]
WORKLOAD = "def make_workload(device, dtype):\n    raise RuntimeError('never built: the output is refused first')\n"


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    """BASE and NEW: two JSON exports of one configuration (NEW a little faster)."""
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    write_json([ended_record(2.0)], base)
    write_json([ended_record(1.9)], new)
    return base, new


def _refused(argv: list[str], capsys: pytest.CaptureFixture, *inputs: Path) -> str:
    """The one error line of ``argv``, checked to exit 2 and to leave every one of ``inputs`` as it was."""
    before = {path: path.read_bytes() for path in inputs}
    code = cli.main(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert {path: path.read_bytes() for path in inputs} == before
    assert code == 2 and len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("flag", ["--json", "--csv"])
@pytest.mark.parametrize("side", ["BASE", "NEW"])
def test_compare_refuses_an_output_onto_base_or_new(sides, tmp_path, capsys, flag, side):
    base, new = sides
    target = base if side == "BASE" else new
    line = _refused(["compare", str(base), str(new), flag, str(target)], capsys, base, new)
    assert line == f"compile-lab: error: {flag}: {target} is the {side} file {ALLOWED}"


def test_compare_sees_the_input_through_a_link_and_with_across(sides, tmp_path, capsys):
    base, new = sides
    linked = tmp_path / "linked"
    linked.symlink_to(tmp_path)
    line = _refused(["compare", str(base), str(new), "--csv", str(linked / "new.json")], capsys, base, new)
    assert line == f"compile-lab: error: --csv: {linked / 'new.json'} is the NEW file {ALLOWED}"
    line = _refused(["compare", str(base), "--across", "gpu_name", "--json", str(base)], capsys, base)
    assert line == f"compile-lab: error: --json: {base} is the BASE file {ALLOWED}"


def test_report_refuses_an_output_onto_one_of_its_runs_by_the_same_rule(sides, capsys):
    base, new = sides
    line = _refused(["report", str(base), str(new), "-o", str(new)], capsys, base, new)
    assert line == f"compile-lab: error: -o: {new} is one of the RUNS {ALLOWED}"


def test_the_neighbours_of_the_inputs_are_written(sides, tmp_path, capsys):
    base, new = sides
    before = base.read_bytes(), new.read_bytes()
    out = tmp_path / "comparison.json"
    code = cli.main(["compare", str(base), str(new), "--json", str(out)])
    capsys.readouterr()
    assert code == 0 and json.loads(out.read_text()) and (base.read_bytes(), new.read_bytes()) == before


WORKLOAD_CASES = [("run", "--csv"), ("run", "--json"), ("run", "--raw-csv"), ("run", "--trace"),
                  ("sweep", "--csv"), ("sweep", "--json"), ("sweep", "--raw-csv")]  # a sweep's --trace: a directory


@pytest.mark.parametrize("command, flag", WORKLOAD_CASES)
def test_run_and_sweep_refuse_an_output_onto_the_workload_file(tmp_path, monkeypatch, runners, capsys, command, flag):
    workload = tmp_path / "wl.py"
    workload.write_text(WORKLOAD)
    monkeypatch.chdir(tmp_path)
    line = _refused([command, "--workload", "wl.py:make_workload", *RUN, flag, "./wl.py"], capsys, workload)
    assert line == f"compile-lab: error: {flag}: ./wl.py is the --workload file {ALLOWED}"
    assert runners == [] and not paths.history_file().exists()


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_run_and_sweep_refuse_an_output_onto_the_python_interpreter(tmp_path, runners, capsys, command):
    python = tmp_path / "python"  # never started: the output is refused first
    python.write_text("#!/bin/sh\nexit 1\n")
    python.chmod(0o755)
    line = _refused([command, *RUN, "--python", str(python), "--csv", str(python)], capsys, python)
    assert line == f"compile-lab: error: --csv: {python} is a --python interpreter {ALLOWED}"
    assert runners == [] and not paths.history_file().exists() and os.access(python, os.X_OK)
