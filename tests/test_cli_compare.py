"""``compile-lab compare``: exit codes, the rich and Markdown tables, files, one-line usage errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fakes import fake_worker_argv
from fakes.gpus import A100, H100, H200, kind_runs, sweep
from fakes.timed import pointwise, timed_run
from tui import cli
from tui.engine.store.export import write_json
from tui.engine.store.history import History
from tui.engine.run.session import RunSession


@pytest.fixture
def exports(tmp_path) -> dict[str, Path]:
    """base.json: pointwise n=512 and n=1024 with inductor; eager.json: the same with --backend eager (compiled
    as slow as eager) and one configuration more; noisy.json: n=512 measured beside another process busy on 1.5
    cores."""
    paths = {name: tmp_path / f"{name}.json" for name in ("base", "eager", "noisy")}
    write_json([timed_run("20261201-100000-aaaaaa", seed=1),
                timed_run("20261201-100001-aaaaab", pointwise(params={"n": 1024}), eager=4.0, compiled=2.5, seed=2)],
               paths["base"])  # fmt: skip
    eager = pointwise(backend="eager")
    write_json([timed_run("20261201-110000-bbbbbb", eager, compiled=2.0, seed=3),
                timed_run("20261201-110001-bbbbbc", pointwise(backend="eager", params={"n": 1024}), eager=4.0,
                          compiled=4.0, seed=4),
                timed_run("20261201-110002-bbbbbd", pointwise(backend="eager", params={"n": 2048}), seed=5)],
               paths["eager"])  # fmt: skip
    write_json([timed_run("20261201-120000-cccccc", compiled=2.0, other_cpu_cores=1.5, seed=6)], paths["noisy"])
    return paths


def _markdown_table(text: str) -> list[list[str]]:
    """The rows of the one GitHub table in ``text``, checked: header, delimiter row, equal cell counts."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    cells = [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]
    assert len(cells) >= 3, text
    header, delimiter, *rows = cells
    assert all(re.fullmatch(r":?-{3,}:?", cell) for cell in delimiter) and len(delimiter) == len(header)
    assert all(len(row) == len(header) for row in rows), cells
    block = text.split("\n\n")
    assert any(part.splitlines() == lines for part in block)  # one contiguous block, blank lines around it
    return [header, *rows]


def test_a_file_compared_with_itself_is_no_change_and_exits_0(exports, capsys):
    assert cli.main(["compare", str(exports["base"]), str(exports["base"])]) == 0
    out = capsys.readouterr().out
    assert out.count("no change") == 2 + 1 and "gate: pass" in out and "2 pairs: 2 no change" in out
    assert "+0.0%" in out and "slower" not in out


def test_eager_backend_against_inductor_is_slower_and_exits_1(exports, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")  # rich's width: every cell on one line
    argv = ["compare", str(exports["base"]), str(exports["eager"]), "--ignore", "backend", "--fail-above", "5"]
    assert cli.main(argv) == 1
    out = capsys.readouterr().out
    assert "gate: FAIL (2 rows)" in out and re.search(r"n=512 .*compiled slower by (99\.\d|100\.\d)%", out)
    assert re.search(r"n=1024 .*compiled slower by (59\.\d|60\.\d)% \(above --fail-above 5%\)", out)
    assert "backend: inductor -> eager" in out and "only in NEW" in out and "(1 proc/side)" in out  # a caveat
    assert cli.main([*argv[:-1], "250"]) == 0  # 100% and 60% slower: not above 250%
    assert "gate: pass" in capsys.readouterr().out


def test_a_noisy_pair_is_noisy_and_does_not_fail_unless_strict(exports, capsys):
    argv = ["compare", str(exports["base"]), str(exports["noisy"])]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "noisy" in out and "slower" not in out.split("gate:")[0].split("every row")[0]
    assert "noisy: NEW: other processes used 1.5 CPU cores" in out and "1 only in BASE" in out
    assert cli.main([*argv, "--strict"]) == 1
    assert "noisy (--strict)" in capsys.readouterr().out


def test_markdown_is_one_valid_github_table(exports, capsys):
    assert cli.main(["compare", str(exports["base"]), str(exports["eager"]), "--ignore", "backend", "--markdown"]) == 1
    out = capsys.readouterr().out
    header, *rows = _markdown_table(out)
    assert header == ["#", "configuration", "procs", "compiled ms (gated)", "eager ms", "speedup x", "verdict"]
    assert [row[0] for row in rows] == ["1", "2", "3"]
    assert rows[0][1] == "pointwise n=512; backend: inductor -> eager" and rows[0][2] == "1/1"
    assert rows[0][3].startswith("1.000 → 2.000 +100.") and rows[0][6] == "**slower** (1 proc/side) (FAIL)"
    assert rows[2][1].startswith("pointwise n=2048") and rows[2][6] == "**only in NEW**" and rows[2][2] == "–/1"
    assert "**gate: FAIL (2 rows)**" in out and "\n- 1 pointwise n=512" in out


def test_a_pair_with_a_side_not_measured_has_its_processes_line_as_the_other_rows(tmp_path, capsys, monkeypatch):
    """n=1024's NEW run failed: its row says NEW failed and, as every other row, how many processes each side
    measured (1/0), in the table, the Markdown and the CSV."""
    monkeypatch.setenv("COLUMNS", "100")
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    write_json([timed_run("20261201-100000-aaaaaa", seed=1),
                timed_run("20261201-100001-aaaaab", pointwise(params={"n": 1024}), seed=2),
                timed_run("20261201-100002-aaaaac", pointwise(params={"n": 2048}), seed=3)], base)  # fmt: skip
    write_json([timed_run("20261201-110000-bbbbbb", seed=4),
                timed_run("20261201-110001-bbbbbc", pointwise(params={"n": 1024}), failed=True, seed=5)], new)
    assert cli.main(["compare", str(base), str(new)]) == 1  # n=1024 ran in BASE and fails in NEW: the gate fails
    out = capsys.readouterr().out
    rows = [row for row in re.split(r"\n(?= *\d+  )", out) if re.match(r" *\d+  pointwise", row)]
    assert len(rows) == 3 and "NEW failed" in rows[1] and "1/0 processes" in rows[1]
    assert "FAIL" in rows[1] and "(--strict)" not in rows[1]
    assert "NEW failed where the baseline measured (a configuration that stopped working)" in out
    assert all(re.search(r"\n +\d/[\d–] processes", row) for row in rows)
    csv = tmp_path / "c.csv"
    assert cli.main(["compare", str(base), str(new), "--markdown", "--csv", str(csv)]) == 1
    _header, *table = _markdown_table(capsys.readouterr().out)
    assert [row[2] for row in table] == ["1/1", "1/0", "1/–"] and table[1][6] == "**NEW failed** (FAIL)"
    line = [row for row in csv.read_text().splitlines() if "NEW failed" in row][0].split(",")
    header = csv.read_text().splitlines()[0].split(",")
    assert (line[header.index("base_processes")], line[header.index("new_processes")]) == ("1", "0")


def test_csv_and_json_files(exports, tmp_path, capsys):
    argv = ["compare", str(exports["base"]), str(exports["eager"]), "--ignore", "backend", "--csv",
            str(tmp_path / "c.csv"), "--json", str(tmp_path / "c.json"), "--metric", "speedup", "--markdown"]
    assert cli.main(argv) == 1
    assert "speedup x (gated)" in _markdown_table(capsys.readouterr().out)[0]
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["exit_code"] == 1 and [p["verdict"] for p in data["pairs"]] == ["slower", "slower"]
    assert data["settings"]["metric"] == "speedup" and data["settings"]["ignore"] == ["backend"]
    assert len((tmp_path / "c.csv").read_text().splitlines()) == 1 + 3


def test_history_selections_and_session_ids(capsys):
    """Runs saved by two sessions (two CLI starts) are selected by session, by id and by date."""
    first, second = RunSession(lambda lane: None), RunSession(lambda lane: None)
    assert first.session_id != second.session_id
    history = History()
    history.append(timed_run("20261201-100000-aaaaaa", session_id=first.session_id, seed=1, created=1.0e9))
    history.append(timed_run("20261201-110000-bbbbbb", session_id=second.session_id, compiled=1.5, seed=2,
                             created=1.0e9 + 60))
    assert cli.main(["compare", "session:last-1", "session:last", "--fail-above", "60"]) == 0
    out = capsys.readouterr().out
    assert "slower" in out and "+50.0%" in out
    assert cli.main(["compare", "history:20261201-100000-aaaaaa", f"session:{second.session_id}"]) == 1
    capsys.readouterr()
    # Both runs as BASE's two processes (1.0 and 1.5 ms): they disagree, and the interval across them says so.
    assert cli.main(["compare", "since:2001-09-09", "session:last"]) == 0
    out = capsys.readouterr().out
    assert "1 inconclusive" in out and "2/1" in out and "noisy" not in out


def test_a_run_id_listed_twice_in_a_history_selection_is_read_once_with_the_files_warning(capsys):
    """README: "a run id listed twice is one process, with a warning"; a JSON file's repeat warned, history:ID,ID
    did not."""
    history = History()
    history.append(timed_run("20261201-100000-aaaaaa", seed=1, created=1.0e9))
    history.append(timed_run("20261201-110000-bbbbbb", seed=2, created=1.0e9 + 60))
    twice = "history:20261201-110000-bbbbbb,20261201-110000-bbbbbb"
    assert cli.main(["compare", "history:20261201-100000-aaaaaa", twice]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == ["compile-lab: warning: NEW: run 20261201-110000-bbbbbb: named more than once, "
                                         "read once"]
    assert "1/1 processes" in captured.out


def test_each_cli_start_gives_its_runs_one_session_id(monkeypatch, tmp_path, capsys):
    """Through the real CLI and runner (the fake worker): a --repeat 2 run is one session, the next start another."""
    from tui.engine.runner import WorkerRunner

    fake = fake_worker_argv()
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None: WorkerRunner(
        worker_argv=fake, keep_spare=keep_spare, env={"FAKE_WORKER_BEHAVIOUR": "ok"}))
    for extra in (["--repeat", "2"], []):
        assert cli.main(["run", "--iters", "20", "--block-size", "5", "--quiet", *extra]) == 0
    records, problems = History().load()
    assert problems == [] and len(records) == 3
    sessions = [r.session_id for r in records]
    assert sessions[0] == sessions[1] != sessions[2] and all(sessions)
    assert cli.main(["compare", "session:last-1", "session:last", "--json", str(tmp_path / "c.json")]) == 0
    [pair] = json.loads((tmp_path / "c.json").read_text())["pairs"]
    assert (pair["base_processes"], pair["new_processes"], pair["within_process"]) == (2, 1, True)
    capsys.readouterr()


@pytest.mark.parametrize(("argv", "start"), [
    (["compare", "{base}"], "compile-lab: error: the following arguments are required: NEW"),
    (["compare", "{base}", "{base}", "--metric", "fast"],
     "compile-lab: error: --metric: 'fast' is not allowed (allowed: compiled, eager, speedup, host)"),
    (["compare", "{base}", "{base}", "--threshold", "0"], "compile-lab: error: --threshold: '0' is not allowed"),
    (["compare", "{base}", "{base}", "--threshold", "60%"], "compile-lab: error: --threshold: '60%' is not allowed"),
    (["compare", "{base}", "{base}", "--fail-above", "-1"], "compile-lab: error: --fail-above: '-1' is not allowed"),
    (["compare", "{base}", "{base}", "--fail-above", "nan"], "compile-lab: error: --fail-above: 'nan' is not allowed"),
    (["compare", "{base}", "{base}", "--ignore", "backend,colour"],
     "compile-lab: error: --ignore: 'colour' is not a match field (allowed: workload,"),
    (["compare", "{base}", "{base}", "--noise-limit", "loud=1"],
     "compile-lab: error: --noise-limit: 'loud=1' is not allowed"),
    (["compare", "{missing}", "{base}"], "compile-lab: error: BASE: "),
    (["compare", "{base}", "{text}"], "compile-lab: error: NEW: "),
    (["compare", "{base}", "history:nope"], "compile-lab: error: NEW: history:nope: no run 'nope' in"),
    (["compare", "session:last", "{base}"], "compile-lab: error: BASE: session:last: the history holds 0 session(s)"),
    (["compare", "since:tuesday", "{base}"], "compile-lab: error: BASE: since:tuesday: 'tuesday' is not a date"),
    (["compare", "{base}", "{base}", "--csv", "{dir}"], "compile-lab: error: --csv: "),
    (["compare", "{base}", "{base}", "--csv", "{out}", "--json", "{out}"],
     "compile-lab: error: --csv, --json: both name"),
    (["compare", "{base}", "--across", "gpu"],
     "compile-lab: error: --across: 'gpu' is not allowed (allowed: gpu_name, node)"),
    (["compare", "{base}", "{base}", "--across", "node"],
     "compile-lab: error: --across: sets one selection's nodes side by side, but NEW"),
    (["compare", "{base}", "{base}", "--across-base", "H100"], "compile-lab: error: --across-base: only with --across"),
    (["compare", "{base}", "--across", "gpu_name"], "compile-lab: error: --across gpu_name: "),
    (["compare", "session:last", "--across", "gpu_name"],
     "compile-lab: error: BASE: session:last: the history holds 0 session(s)"),
    (["compare", "{base}", "--across", "gpu_name", "--csv", "{out}", "--json", "{out}"],
     "compile-lab: error: --csv, --json: both name"),
])  # fmt: skip
def test_bad_usage_exits_2_with_one_line(exports, tmp_path, capsys, argv, start):
    (tmp_path / "text.json").write_text("no json here")
    names = {"base": exports["base"], "missing": tmp_path / "missing.json", "text": tmp_path / "text.json",
             "dir": tmp_path, "out": tmp_path / "out.csv"}
    assert cli.main([part.format(**{k: str(v) for k, v in names.items()}) for part in argv]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(start), captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    assert not (tmp_path / "out.csv").exists()


@pytest.fixture
def kinds_export(tmp_path) -> Path:
    """sweep.json: a sweep on three GPU kinds (fakes.gpus.sweep: n=512 20% slower on the H100, n=64 not on the A100)."""
    path = tmp_path / "sweep.json"
    write_json(sweep(), path)
    return path


def test_across_gpu_kinds_side_by_side(kinds_export, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "220")  # rich's width: every header on one line
    assert cli.main(["compare", str(kinds_export), "--across", "gpu_name"]) == 1
    out = capsys.readouterr().out
    assert re.search(rf"{H200} \(baseline\) compiled ms +{H100} compiled ms +verdict +{A100} compiled ms +verdict", out)
    one = r"(0\.999\d|1\.000)"  # 1 ms each, give or take the made-up noise
    assert re.search(rf"1 +pointwise n=512 +{one} +1\.200 +slower +{one} +no change", out)
    assert f"1 pointwise n=512 inductor dyn=auto fp32 cuda torch 2.13.0 on {H100}: compiled slower by 20.0%" in out
    assert "gate: FAIL (1 row)" in out and "left out: 1 run without a gpu_name" in out
    assert f"{H100}: 1 faster, 1 slower" in out and f"{A100}: 1 no change, 1 not run" in out
    # The H100 as the baseline: n=512 is faster elsewhere, n=64 43% slower on the H200 (0.7 ms on the H100).
    argv = ["compare", str(kinds_export), "--across", "gpu_name", "--across-base", "h100"]
    assert cli.main([*argv, "--fail-above", "50"]) == 0
    out = capsys.readouterr().out
    assert f"baseline {H100}" in out and "gate: pass" in out and f"{H200}: 1 faster, 1 slower" in out
    assert cli.main(argv) == 1 and f"on {H200}: compiled slower by 42.9%" in capsys.readouterr().out


def test_across_markdown_csv_and_json(kinds_export, tmp_path, capsys):
    argv = ["compare", str(kinds_export), "--across", "gpu_name", "--markdown", "--csv", str(tmp_path / "c.csv"),
            "--json", str(tmp_path / "c.json")]
    assert cli.main(argv) == 1
    out = capsys.readouterr().out
    header, *rows = _markdown_table(out)
    assert header == ["#", "configuration", f"{H200} (baseline) compiled ms", f"{H100} compiled ms", "verdict",
                      f"{A100} compiled ms", "verdict"]
    assert rows[0][:2] == ["1", "pointwise n=512"] and re.fullmatch(r"(0\.999\d|1\.000) \(3 procs\)", rows[0][2])
    assert re.fullmatch(r"1\.200 \+20\.0% \[\+19\.\d, \+20\.\d\] \(3 procs\)", rows[0][3]), rows[0][3]
    assert rows[0][4] == "**slower** (FAIL)" and rows[0][6] == "**no change**"
    assert rows[1][4] == "**faster** (1 proc/side)" and rows[1][5:] == ["–", "**not run**"]
    assert "**gate: FAIL (1 row)**" in out and f"- {A100}: 1 no change, 1 not run" in out
    assert len((tmp_path / "c.csv").read_text().splitlines()) == 1 + 2 * 2
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["exit_code"] == 1 and data["baseline"] == H200 and len(data["failures"]) == 1


def test_across_refuses_one_kind_and_an_unknown_baseline(kinds_export, tmp_path, capsys):
    one = tmp_path / "one.json"
    write_json(kind_runs("a", H200, 2), one)
    assert cli.main(["compare", str(one), "--across", "gpu_name"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("compile-lab: error: --across gpu_name: ")
    assert "its runs ran on one GPU kind only (NVIDIA H200: 2 runs): nothing to set side by side" in err[0]
    assert cli.main(["compare", str(kinds_export), "--across", "gpu_name", "--across-base", "V100"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (
        f"compile-lab: error: --across-base: 'V100' names none of the "
        f"values found (allowed: {H200}, {H100}, {A100}, or a part of one)\n"
    )


def test_two_exports_of_two_kinds_pair_with_ignore_gpu_name(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # rich's width: every cell on one line
    write_json(kind_runs("a", H200), tmp_path / "h200.json")
    write_json(kind_runs("b", H100, compiled=1.2), tmp_path / "h100.json")
    argv = ["compare", str(tmp_path / "h200.json"), str(tmp_path / "h100.json")]
    assert cli.main(argv) == 1  # no configuration on both sides: a gate that compared nothing fails
    out = capsys.readouterr().out
    assert "(--ignore gpu_name)" in out
    assert "gate: FAIL\n  nothing was compared: no configuration is on both sides" in out, out
    assert cli.main([*argv, "--ignore", "gpu_name"]) == 1
    out = capsys.readouterr().out
    assert f"gpu_name: {H200} -> {H100}" in out and "3/3 processes" in out
    assert re.search(r"compiled slower by (19\.\d|20\.\d)%", out)


LOOSE = ["--noise-limit", "max_relative_iqr=10", "--noise-limit", "max_severe_outlier_share=1", "--noise-limit",
         "max_drift=10", "--noise-limit", "max_other_cpu_cores=1000", "--noise-limit", "max_interval_ratio=100"]
"""Noise limits a shared 2-core test machine passes: the test is about the direction, not the noise checks."""


# perf: the verdict reads real timings, and beside the other xdist worker's compiles one process's eager blocks
# swung by -58%..+94% (the 10x slowdown then read inconclusive); .ci/run runs perf tests alone, serially
@pytest.mark.perf
@pytest.mark.slow  # two real worker processes, one inductor compile: about a minute on a shared 2-core machine
@pytest.mark.torch
def test_real_cpu_workers_eager_backend_is_slower_than_inductor(tmp_path, capsys):
    """pointwise (x * x + sin(x), n=2048) fused by inductor against the same with --backend eager."""
    for backend in ("inductor", "eager"):
        argv = ["run", "--workload", "pointwise", "--param", "n=2048", "--backend", backend, "--iters", "100",
                "--no-profile", "--quiet", "--json", str(tmp_path / f"{backend}.json")]
        assert cli.main(argv) == 0
    argv = ["compare", str(tmp_path / "inductor.json"), str(tmp_path / "eager.json"), "--ignore", "backend",
            "--json", str(tmp_path / "c.json"), *LOOSE]
    assert cli.main(argv) == 1, capsys.readouterr().out
    [pair] = json.loads((tmp_path / "c.json").read_text())["pairs"]
    assert pair["verdict"] == "slower" and pair["slowdown"] > 0.05 and pair["within_process"]
    assert cli.main(["compare", "session:last-1", "session:last", "--ignore", "backend", *LOOSE]) == 1


def test_user_files_fit_80_columns_by_their_names_and_json_keeps_the_paths(tmp_path, capsys, monkeypatch):
    """compare with user files drew a 119-column table: it kept each path whole. The rows, and what an ignored
    field was, name the files as a listing does (tui.present.format.workload_names), folded after a separator
    where they are wider than the column; --json keeps the whole paths."""
    monkeypatch.setenv("COLUMNS", "80")
    folder = "/home/someone/projects/compile-lab-models/experiments"
    files = {side: f"{folder}/{side}/example_workload.py:make_workload" for side in ("base", "new")}
    for side, workload in files.items():
        write_json([timed_run(f"20261201-10000{len(side)}-aaaaaa", pointwise(workload=workload, params={}), seed=1)],
                   tmp_path / f"{side}.json")
    base, new = str(tmp_path / "base.json"), str(tmp_path / "new.json")
    assert cli.main(["compare", base, new, "--json", str(tmp_path / "c.json")]) == 1  # nothing compared
    out = capsys.readouterr().out
    assert max(len(line) for line in out.split("every row:")[0].splitlines()) <= 80, out  # the title and the table
    rows = re.findall(r"^ +\d +(\S+) .*\n +(\S+)", out, flags=re.MULTILINE)
    assert rows == [("base/example_", "workload.py"), ("new/example_", "workload.py")], out
    assert "NEW has it with workload new/ example_workload.py (--ignore workload)" in " ".join(out.split())
    unmatched = json.loads((tmp_path / "c.json").read_text())["unmatched"]
    assert [row["key"]["workload"] for row in unmatched] == list(files.values())
    assert cli.main(["compare", base, new, "--ignore", "workload"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.split("1 proc/side:")[0].splitlines()) <= 80, out
    column = "".join(line[4:20] for line in out.splitlines()).replace(" ", "")
    assert "workload:base/example_workload.py->new/example_workload.py1/1processes" in column, out
    assert cli.main(["compare", base, new, "--ignore", "workload", "--json", str(tmp_path / "c.json")]) == 0
    (pair,) = json.loads((tmp_path / "c.json").read_text())["pairs"]
    assert pair["differences"] == [f"workload: {files['base']} -> {files['new']}"]


def test_a_noise_reason_and_the_legend_fold_under_their_own_start(exports, capsys, monkeypatch):
    """A reason longer than the terminal went on at column 0, where it read as a line of its own."""
    monkeypatch.setenv("COLUMNS", "50")
    assert cli.main(["compare", str(exports["base"]), str(exports["noisy"])]) == 0
    tail = capsys.readouterr().out.split("every row:")[1].splitlines()[1:]
    reason = next(n for n, line in enumerate(tail) if line.startswith("  1: noisy: NEW: other processes"))
    legend = next(n for n, line in enumerate(tail) if line.startswith("1 proc/side: "))
    for start in (reason, legend):
        assert tail[start + 1].startswith(" " * (len(tail[start]) - len(tail[start].lstrip()) + 2)), tail
    assert all(len(line) <= 50 for line in tail), tail


@pytest.mark.parametrize("width", [40, 60, 80, 100, 160])
def test_no_header_title_or_verdict_loses_a_letter_at_any_width(exports, capsys, monkeypatch, width):
    """The tester read "fai" for "fail above" and "FAIL (--stric" at 80 columns: Rich squeezed them."""
    monkeypatch.setenv("COLUMNS", str(width))
    argv = ["compare", str(exports["base"]), str(exports["eager"]), "--ignore", "backend", "--fail-above", "5",
            "--strict"]
    assert cli.main(argv) == 1
    words = set(capsys.readouterr().out.split("every row:")[0].split())  # the title and the table
    assert {"configuration", "compiled", "(gated)", "eager", "speedup", "verdict", "(--strict)", "fail", "above",
            "processes", "slower", "NEW"} <= words
    assert not any("…" in word for word in words)


def test_an_extra_line_names_every_file_the_workload_rule_calls_a_file(tmp_path, capsys, monkeypatch):
    """The extra lines find the user files they say by tui.engine.catalog.is_user_workload, the rule every listing
    uses, so a factory any Python name may be (a non-ASCII one, which a pattern of its own missed) reads as the
    rows read it, not as its whole path."""
    monkeypatch.setenv("COLUMNS", "160")
    files = {side: f"/srv/models/{side}/model.py:сделать" for side in ("base", "new")}
    for side, workload in files.items():
        write_json([timed_run(f"20261201-10000{len(side)}-aaaaaa", pointwise(workload=workload, params={}), seed=1)],
                   tmp_path / f"{side}.json")
    base, new = str(tmp_path / "base.json"), str(tmp_path / "new.json")
    assert cli.main(["compare", base, new]) == 1  # nothing compared
    out = " ".join(capsys.readouterr().out.split())
    assert "NEW has it with workload new/model.py:сделать (--ignore workload)" in out, out
    assert cli.main(["compare", base, new, "--ignore", "workload"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "workload: base/model.py:сделать -> new/model.py:сделать" in out and "/srv/" not in out, out


def test_one_pair_says_its_options_once_under_the_table(tmp_path, capsys, monkeypatch):
    """A new user's one pair drew its every option in the configuration cell, wrapped over 5-9 lines at 80
    columns; two rows or more said what they share once, under the table."""
    monkeypatch.setenv("COLUMNS", "80")
    write_json([timed_run("20261201-100001-aaaaaa", pointwise(), seed=1)], tmp_path / "b.json")
    write_json([timed_run("20261201-100002-aaaaaa", pointwise(), seed=2)], tmp_path / "n.json")
    assert cli.main(["compare", str(tmp_path / "b.json"), str(tmp_path / "n.json")]) == 0
    out = capsys.readouterr().out
    table, shared = out.split("every row:")
    assert re.search(r"^ +1 +pointwise +\d", table, flags=re.MULTILINE) and "inductor" not in table, out
    assert shared.splitlines()[0].split() == ["n=512", "inductor", "dyn=auto", "fp32", "cpu", "torch", "2.13.0"]
