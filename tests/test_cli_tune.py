"""``compile-lab tune`` end to end: usage errors, a search through the fake worker (exports, history, the code it
prints), and one real CPU search (slow)."""

from __future__ import annotations

import csv
import dataclasses
import html
import io
import json
import re
import time

import pytest

from rich.console import Console

from fakes import fake_worker_argv
from tui import cli
from tui.cli.tune_render import TuneLines, print_answer
from tui.engine.options import RunOptions
from tui.engine.tune.answer import NOTHING_BEATS, UNCONFIRMED, TuneResult
from tui.engine.tune.objective import Score
from tui.engine.tune.search import Standing
from tui.engine.tune.space import Candidate
from tui.engine.runner import WorkerRunner
from tui.engine.tune import probe as probe_module
from tui.engine.runner.torch_probe import TorchOptions, read_report

FAKE_WORKER = fake_worker_argv()
QUIET_MACHINE = ["--noise-limit", "max_other_cpu_cores=1000"]
"""The fake worker's runs on a busy test machine: the machine check would make every verdict noisy."""


def _use_fake_worker(monkeypatch, times: dict) -> list[str]:
    """The CLI runs the fake worker with ``times`` (FAKE_WORKER_TIMES); the probe answers without torch.

    The table is as wide as a wide terminal (COLUMNS), so a row is one line.
    """
    monkeypatch.setenv("FAKE_WORKER_TIMES", json.dumps(times))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None, env=None:
                        WorkerRunner(worker_argv=FAKE_WORKER, keep_spare=keep_spare))
    asked: list[str] = []

    def probe(keys, python=None, timeout=0):
        asked.extend(keys)
        return TorchOptions(torch="0.0.0+fake", defaults={"aggressive_fusion": False}, missing=("cpp.simdlen",))

    monkeypatch.setattr(probe_module, "probe_torch", probe)
    return asked


@pytest.mark.parametrize(("argv", "start"), [
    (["--budget", "0"], "compile-lab: error: --budget: '0' is not allowed (allowed: a duration above 0"),
    (["--budget", "ten minutes"], "compile-lab: error: --budget: 'ten minutes' is not allowed"),
    (["--space", "fast"], "compile-lab: error: --space: 'fast' is not allowed (allowed: modes, axes, options, all"),
    (["--objective", "gpu"], "compile-lab: error: --objective: 'gpu' is not allowed (allowed: device, host)"),
    (["--calls", "0"], "compile-lab: error: --calls: 0 is not allowed"),
    (["--max-memory", "-1"], "compile-lab: error: --max-memory: -1 is not allowed"),
    (["--calls", "abc"], "compile-lab: error: --calls: abc is not allowed (allowed: an integer from 1"),
    (["--max-memory", "x"], "compile-lab: error: --max-memory: x is not allowed (allowed: a number of GB above 0"),
    (["--max-memory", "nan"], "compile-lab: error: --max-memory: nan is not allowed"),
    (["--mode", "max-autotune"], "compile-lab: error: unrecognized arguments: --mode max-autotune"),
    (["--iters", "0"], "compile-lab: error: --iters: 0 is not allowed"),
])
def test_bad_input_is_one_line_naming_the_field_and_exit_2(argv, start, capsys):
    assert cli.main(["tune", "--workload", "pointwise", "--device", "cpu", *argv]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith(start), err


def test_a_search_through_the_fake_worker_confirms_the_winner_and_prints_valid_code(monkeypatch, tmp_path, capsys,
                                                                                    compile_lab_home):
    asked = _use_fake_worker(monkeypatch, {"freezing=true": 0.7, "mode=max-autotune-no-cudagraphs": 1.6,
                                           "cpp_wrapper=true": "fail"})
    out_csv, out_json = tmp_path / "t.csv", tmp_path / "t.json"
    code = cli.main(["tune", "--workload", "pointwise", "--device", "cpu", "--iters", "20", "--block-size", "5",
                     "--space", "modes,freezing,cpp_wrapper,cpp.simdlen,aggressive_fusion", "--budget", "5m",
                     "--csv", str(out_csv), "--json", str(out_json), *QUIET_MACHINE])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out = captured.out
    assert out.startswith("best: freezing=True, confirmed faster than the default compile in fresh processes")
    assert "freezing" in asked and "triton.cudagraphs" in asked  # the probe was asked about the catalog
    call = next(line for line in out.splitlines() if line.startswith("compiled = torch.compile(model, options="))
    compile(call, "<call>", "exec")
    config = out.split("# or as torch._inductor.config settings:\n")[1].split("\n\n")[0]
    compile(config, "<config>", "exec")
    assert "torch._inductor.config.freezing = True" in config
    assert re.search(r"freezing=True vs default compile: 1\.4\d× \[1\.\d\d, 1\.\d\d\] faster", out)
    assert re.search(r"cpp_wrapper=True .*out: failed: compile failed: fake inductor error", out)
    assert re.search(r"max-autotune-no-cudagraphs .*dropped: below freezing=True", out)
    err = captured.err
    assert "cpp.simdlen: left out (this torch has no cpp.simdlen)" in err
    assert "aggressive_fusion=True" in err  # the probe's default (False) does not hide the value tried
    history = [json.loads(line) for line in (compile_lab_home / "data" / "history.jsonl").read_text().splitlines()]
    tune_ids = {h["tune_id"] for h in history}
    assert len(tune_ids) == 1 and None not in tune_ids
    assert sum(h["options"]["inductor_options"] == {"freezing": True} for h in history) >= 4  # screening + 3
    rows = list(csv.DictReader(out_csv.open()))
    assert {r["tune_id"] for r in rows} == tune_ids
    assert any(r["repeats"] == "3" for r in rows)  # the confirmation's processes make one row a side
    data = json.loads(out_json.read_text())
    assert {r["tune_id"] for r in data["runs"]} == tune_ids
    # the answer as data, for a script: what the search concluded, in the printed answer's words and code
    answer = data["tune"]
    assert (answer["tune_id"], answer["outcome"]) == (*tune_ids, "confirmed")
    assert answer["headline"] == out.splitlines()[0]
    assert answer["winner"]["name"] == "freezing=True" and answer["winner"]["code"]["call"] == call
    assert answer["winner"]["code"]["autotunes"] is False
    assert answer["winner"]["options"]["inductor_options"] == {"freezing": True}
    vs_default = answer["confirmation"]["vs_default"]
    assert vs_default["verdict"] == "faster" and vs_default["low"] > 1.02
    assert answer["confirmation"]["processes"] == [3, 3]
    standings = {c["name"]: c["standing"] for c in answer["candidates"]}
    assert standings["cpp_wrapper=True"].startswith("out: failed: compile failed")
    # the closing line names the selector compare takes, and the JSON file whose page has the answer
    (tune_id,) = tune_ids
    lines = out.splitlines()
    closing = " ".join(line.strip() for line in lines[next(n for n, line in enumerate(lines)
                                                           if line.startswith("tune id ")):])  # folded at 80
    assert closing.endswith(f"compare selects them from the history as tune:{tune_id}; compile-lab report {out_json} "
                            f"-o tune.html makes its page with the answer"), closing
    assert answer["text"].splitlines()[-1] == closing  # the export's copy of the answer ends as the CLI's did
    capsys.readouterr()
    assert cli.main(["compare", f"tune:{tune_id}", "tune:last", "--csv", str(tmp_path / "c.csv")]) == 0
    compared = list(csv.DictReader((tmp_path / "c.csv").open()))
    assert sum(int(r["base_processes"]) for r in compared) == sum(h["status"] == "done" for h in history)
    assert cli.main(["report", f"tune:{tune_id}", "-o", str(tmp_path / "tune.html")]) == 0
    assert cli.main(["report", str(out_json), "-o", str(tmp_path / "j.html")]) == 0  # read past the answer's key
    # each run says which part of the tune ran it, and the report's labels tell them apart
    stages = [(h["options"]["inductor_options"], h["tune_stage"]) for h in history]
    assert [stage for options, stage in stages if options == {"freezing": True}] == ["screening"] + 3 * ["confirmation"]
    assert {stage for options, stage in stages if options == {"cpp_wrapper": True}} == {"screening"}
    page = (tmp_path / "tune.html").read_text()
    assert "(tune: screening)" in page and "(tune: confirmation)" in page
    assert f"<h2>The search's answer (tune:{tune_id})</h2>" in page  # where its answer is kept
    # the export's answer heads its report, as the CLI printed it: the code pasteable as it is
    shown = html.unescape((tmp_path / "j.html").read_text())
    assert f"The search's answer (tune {tune_id})" in shown and answer["text"] in shown
    assert out.splitlines()[0] == answer["text"].splitlines()[0] and call in answer["text"]
    assert [c["screened"] is not None for c in answer["candidates"]] == [c["speedup"] is not None
                                                                        for c in answer["candidates"]]  # measured


def test_nothing_beats_the_default_is_said_in_those_words(monkeypatch, capsys):
    _use_fake_worker(monkeypatch, {"mode=max-autotune-no-cudagraphs": 1.3})
    code = cli.main(["tune", "--workload", "pointwise", "--device", "cpu", "--iters", "20", "--block-size", "5",
                     "--space", "modes", "--budget", "2m", "--no-history", *QUIET_MACHINE])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0] == "no configuration beats the default compile by more than 2%"
    assert "torch.compile(" not in out


def test_the_answer_in_a_json_export_of_runs_not_stored_says_where_they_are(monkeypatch, capsys, tmp_path):
    """The export's copy of the answer ended with the history's selector even under --no-history."""
    _use_fake_worker(monkeypatch, {"mode=max-autotune-no-cudagraphs": 1.3})
    out_json = tmp_path / "t.json"
    assert cli.main(["tune", "--workload", "pointwise", "--device", "cpu", "--iters", "20", "--block-size", "5",
                     "--space", "modes", "--budget", "2m", "--no-history", "--json", str(out_json),
                     *QUIET_MACHINE]) == 0
    closing = json.loads(out_json.read_text())["tune"]["text"].splitlines()[-1]
    assert closing.endswith(f"not stored in the history; compile-lab report {out_json} -o tune.html makes its page "
                            "with the answer"), closing


def test_a_search_whose_runs_all_fail_says_nothing_was_measured_and_exits_1(monkeypatch, capsys):
    _use_fake_worker(monkeypatch, {})
    monkeypatch.setenv("FAKE_WORKER_BEHAVIOUR", "fail")  # every run: the options they share are refused
    monkeypatch.setenv("FAKE_WORKER_FAIL_KIND", "bad_options")
    monkeypatch.setenv("FAKE_WORKER_FAIL_MESSAGE", "device: cuda is not available: no CUDA (allowed: cpu)")
    code = cli.main(["tune", "--workload", "pointwise", "--device", "cpu", "--iters", "20", "--block-size", "5",
                     "--space", "modes", "--budget", "2m", "--no-history", *QUIET_MACHINE])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out.splitlines()[0].startswith("nothing was measured, so no configuration can be judged: the "
                                                   "default compile's run failed: device: cuda is not available")
    assert "beats the default" not in captured.out
    assert "1 run(s)" in captured.out and "no other candidate was run" in captured.err


BOTH = Candidate((("layout_optimization", False), ("coordinate_descent_tuning", True)))
STANDINGS_80 = (Standing(Candidate(), Score(1.0, 0.98, 1.02, 2), stage=1),
                Standing(BOTH, Score(0.99, 0.97, 1.01, 2), stage=1, screened=Score(1.0, 0.9, 1.1, 1)),
                Standing(Candidate((("max_autotune_gemm_backends", "ATEN,TRITON"),)),  # wider than the column at 80
                         Score(0.9, 0.8, 1.0, 1), stage=0, gone="cut: ranked 3 of 3 after stage 1"))


def _answer_at_80(result: TuneResult) -> list[str]:
    console = Console(width=80, file=io.StringIO(), record=True)
    print_answer(result, console)
    return console.export_text().splitlines()


def test_at_80_columns_the_table_wraps_a_name_between_its_settings_never_inside_one():
    result = TuneResult(tune_id="t-1", outcome=NOTHING_BEATS, winner=STANDINGS_80[0], winner_options=None,
                        confirmation=None, standings=STANDINGS_80)
    table = [line for line in _answer_at_80(result) if line.startswith(("│", "┃", "┏", "└"))]
    assert max(len(line) for line in table) <= 80
    names = [line.split("│")[1].strip() for line in table if line.startswith("│")]
    names = [name for name in names if name]
    assert names == ["default", "layout_optimization=False", "coordinate_descent_tuning=True",
                     "max_autotune_gemm_backends=", "ATEN,TRITON"]


def test_the_answer_says_the_notes_the_progress_lines_did_not():
    """The note that the runs read noisy is known only once the search ends: the progress lines never said it, and
    the answer printed only the confirmation's notes, so the CLI alone of the front ends left it out."""
    lines = TuneLines(Console(file=io.StringIO()))
    lines.note("left out on cpu: x")
    noisy = "2 of the 2 runs read noisy: their figures carry the machine's noise"
    result = TuneResult(tune_id="t-1", outcome=NOTHING_BEATS, winner=STANDINGS_80[0], winner_options=None,
                        confirmation=None, standings=STANDINGS_80, notes=("left out on cpu: x", noisy))
    console = Console(width=200, file=io.StringIO(), record=True)
    print_answer(result, console, said=lines.said)
    text = console.export_text()
    assert f"note: {noisy}" in text and "left out on cpu" not in text  # said once, where it was not said yet


def test_a_race_that_ended_after_its_screening_shows_one_figure_column():
    leader = Standing(Candidate((("layout_optimization", False),)), Score(1.19, 1.19, 1.20, 1), stage=0,
                      screened=Score(1.19, 1.19, 1.20, 1))
    dropped = Standing(Candidate(), Score(0.86, 0.86, 0.86, 1), stage=0, screened=Score(0.86, 0.86, 0.86, 1),
                       gone="dropped: below layout_optimization=False (≤ 0.861x vs ≥ 1.189x)")
    result = TuneResult(tune_id="t-1", outcome=UNCONFIRMED, winner=leader, winner_options=None,
                        confirmation=None, standings=(leader, dropped))
    lines = _answer_at_80(result)
    header = [line for line in lines if line.startswith("┃")]
    assert header and not any("screened" in line for line in header)  # the screened figure is the latest one
    assert max(len(line) for line in lines if line.startswith("│")) <= 80
    # the standing's prose keeps the room the second figure column took (24 cells of text), and the name in it
    # folds at a separator where even that is too narrow
    rows = [line.split("│") for line in lines if line.startswith("│")]
    assert len(rows[0][3]) >= 24 + 2, lines
    assert [row[3].strip() for row in rows[1:3]] == ["dropped: below layout_", "optimization=False (≤"], lines
    assert "(≤ 0.861x vs ≥ 1.189x)" in " ".join(row[3].strip() for row in rows[1:]), lines
    two_stages = TuneResult(tune_id="t-1", outcome=NOTHING_BEATS, winner=STANDINGS_80[0], winner_options=None,
                            confirmation=None, standings=STANDINGS_80)
    assert any("screened" in line for line in _answer_at_80(two_stages))


def test_at_80_columns_the_answers_long_lines_fold_with_a_hanging_indent():
    options = dataclasses.replace(BOTH.apply(RunOptions(workload="cnn", device="cuda")), iters=50)
    faster = dataclasses.replace(STANDINGS_80[1], score=Score(1.10, 1.08, 1.12, 2))  # over eager: code is shown
    standings = (STANDINGS_80[0], faster, STANDINGS_80[2])
    result = TuneResult(tune_id="20261204-225026-cea67f", outcome=UNCONFIRMED, winner=faster,
                        winner_options=options, confirmation=None, standings=standings, stopped="Ctrl-C",
                        incomplete="the budget ran out before 3 candidate(s) were screened")
    lines = _answer_at_80(result)
    assert all(len(line) <= 80 for line in lines if not line.startswith("compiled = "))
    assert lines[0] == "best so far: layout_optimization=False coordinate_descent_tuning=True"
    assert lines[1].startswith("  ") and lines[1].strip()  # the headline goes on, indented
    closing = next(n for n, line in enumerate(lines) if line.startswith("tune id "))
    assert lines[closing + 1].startswith("  ") and lines[-1].startswith("  ")
    call = next(line for line in lines if line.startswith("compiled = torch.compile("))
    assert call.endswith(")")  # the CLI does not fold code: the terminal's own soft wrap copies it whole


def test_a_budget_that_fits_no_run_ends_with_one_line_naming_it_and_exit_2(monkeypatch, capsys, compile_lab_home,
                                                                           tmp_path):
    # it used to run nothing, print "best so far: none (unconfirmed: ...)" and exit 0
    _use_fake_worker(monkeypatch, {})
    code = cli.main(["tune", "--workload", "pointwise", "--device", "cpu", "--iters", "20", "--budget", "3s",
                     "--json", str(tmp_path / "t.json")])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    last = captured.err.splitlines()[-1]
    assert last.startswith("compile-lab: error: --budget: 3s ran out before the first run could start"), last
    assert "nothing ran" in last and "how long a run takes" in last
    assert not (compile_lab_home / "data" / "history.jsonl").exists() and not (tmp_path / "t.json").exists()


def test_a_budget_that_ends_the_first_run_before_it_measured_is_one_line_naming_it_and_exit_2(
        monkeypatch, capsys, compile_lab_home, tmp_path):
    """The run started and the budget's end cut it: the answer read "the default compile's run every run failed",
    exit 1, though nothing had failed."""
    _use_fake_worker(monkeypatch, {})
    monkeypatch.setenv("FAKE_WORKER_COMPILE_S", "30")  # longer than the 4 s or less the budget leaves the run
    # 7 s: room for the first run to start on a slow machine (3 s are kept to close), none to finish compiling
    code = cli.main(["tune", "--workload", "pointwise", "--device", "cpu", "--iters", "20", "--budget", "7s",
                     "--json", str(tmp_path / "t.json")])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    last = captured.err.splitlines()[-1]
    assert last == ("compile-lab: error: --budget: 7s ran out before any run was measured (the run it started "
                    "reached the budget's end), so nothing can be judged: give room for several runs of this "
                    "workload (the default is 10m)"), last
    (run,) = json.loads((tmp_path / "t.json").read_text())["runs"]  # the run is kept, with why it ended
    assert (run["status"], run["error_kind"]) == ("failed", "timeout")


def test_the_probes_report_is_read_field_by_field():
    report = read_report('noise\n{"torch": "2.13.0", "options": {"freezing": false}, "missing": ["x.y"], '
                         '"modes": {"reduce-overhead": {"triton.cudagraphs": true}}}\n')
    assert (report.torch, report.defaults, report.missing) == ("2.13.0", {"freezing": False}, ("x.y",))
    assert report.modes == {"reduce-overhead": {"triton.cudagraphs": True}} and report.problem is None
    assert report.cuda is None  # it did not say
    assert read_report('{"torch": "2.13.0+cpu", "cuda": false}').cuda is False
    assert read_report('{"torch": "2.11.0+cu130", "cuda": true}').cuda is True
    assert read_report('{"torch": "2.13.0", "cuda": "no"}').cuda is None  # a field of the wrong type is left empty
    assert read_report("not json").problem == "the probe printed no report"


def test_a_cuda_search_on_a_torch_without_cuda_is_one_line_before_any_run(monkeypatch, capsys, tmp_path):
    """A CPU build of torch asked to tune ``--device cuda``: every run would fail as the default compile's did (a
    table of failed rows, exit 1); the probe already knows, so it is one line, exit 2, and nothing runs."""
    started: list[object] = []
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None, env=None: started.append(1))
    monkeypatch.setattr(probe_module, "probe_torch", lambda keys, python=None, timeout=0: TorchOptions(
        torch="2.13.0+cpu", defaults={}, missing=(), cuda=False))
    code = cli.main(["tune", "--workload", "pointwise", "--device", "cuda", "--json", str(tmp_path / "t.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not started and not (tmp_path / "t.json").exists()
    assert err[-1] == ("compile-lab: error: --device: cuda is not allowed: this machine's torch (2.13.0+cpu) cannot "
                       "use CUDA (allowed: cpu)"), err
    assert not any(line.startswith("note: left out") for line in err), err  # no plan for a search refused


def test_a_pinned_option_torch_lacks_is_one_line_before_any_run(monkeypatch, capsys, tmp_path):
    """``--option freezng=True`` ran the probe and then every candidate, each failing on the misspelt key after 13 s,
    and ended with a table and exit 1; the probe is asked about the pinned keys too, so it is one line, exit 2."""
    started: list[object] = []
    asked: list[str] = []
    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None, env=None: started.append(1))

    def probe(keys, python=None, timeout=0):
        asked.extend(keys)
        return TorchOptions(torch="2.13.0+cpu", defaults={k: False for k in keys if k != "freezng"},
                            missing=tuple(k for k in keys if k == "freezng"))

    monkeypatch.setattr(probe_module, "probe_torch", probe)
    code = cli.main(["tune", "--workload", "pointwise", "--device", "cpu", "--option", "freezng=True",
                     "--json", str(tmp_path / "t.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not started and not (tmp_path / "t.json").exists() and "freezng" in asked
    assert err[-1] == ("compile-lab: error: --option: 'freezng' is not an inductor option of this machine's torch "
                       "(did you mean freezing?)"), err
    assert not [line for line in err if line.startswith("note: pinned")], err  # refused: the error alone


@pytest.mark.slow
@pytest.mark.torch
def test_a_real_cpu_search_ends_within_its_budget_with_an_answer(capsys, tmp_path):
    pytest.importorskip("torch")
    began = time.monotonic()
    code = cli.main(["tune", "--workload", "pointwise", "--device", "cpu", "--space", "modes", "--budget", "60s",
                     "--json", str(tmp_path / "t.json")])
    took = time.monotonic() - began
    out = capsys.readouterr().out
    assert code == 0
    assert took <= 60 + 15  # the budget, and closing and exporting after the last run
    lines = out.splitlines()
    heads = ("best: ", "best so far: ", "no configuration beats the default compile by more than 2%")
    first = next((n for n, line in enumerate(lines) if line.startswith(heads)), None)
    assert first is not None, out
    if first:  # compiling did not read faster than eager here: said first, folded to the terminal's width
        said = " ".join(line.strip() for line in lines[:first])
        assert said.startswith("torch.compile ") and re.search(
            r" pay off for this workload here: no configuration measured was (shown )?more than 2% faster than eager",
            said), out
    assert json.loads((tmp_path / "t.json").read_text())["runs"]


def test_ctrl_c_ends_the_search_with_the_best_so_far_unconfirmed_and_keeps_the_runs(monkeypatch, tmp_path, capsys,
                                                                                     compile_lab_home):
    import os
    import signal

    from tui.engine.protocol import BlockTimed

    _use_fake_worker(monkeypatch, {"freezing=true": 0.7})
    monkeypatch.setenv("FAKE_WORKER_DELAY", "0.05")
    started: list[str] = []

    class Interrupting(WorkerRunner):
        async def run(self, record, on_event=None):
            started.append(record.run_id)

            def forward(event):
                if isinstance(event, BlockTimed) and event.stage == "measure" and len(started) == 3:
                    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the third run measures
                if on_event is not None:
                    on_event(event)

            return await super().run(record, forward)

    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None, env=None:
                        Interrupting(worker_argv=FAKE_WORKER, keep_spare=keep_spare))
    out_csv = tmp_path / "t.csv"
    code = cli.main(["tune", "--workload", "pointwise", "--device", "cpu", "--iters", "20", "--block-size", "5",
                     "--space", "freezing,cpp_wrapper,aggressive_fusion", "--budget", "5m", "--csv", str(out_csv),
                     *QUIET_MACHINE])
    out = capsys.readouterr().out
    assert code == 128 + signal.SIGINT
    assert out.splitlines()[0] == "best so far: freezing=True (unconfirmed: Ctrl-C)"
    statuses = [json.loads(line)["status"] for line in
                (compile_lab_home / "data" / "history.jsonl").read_text().splitlines()]
    assert statuses == ["done", "done", "cancelled"]
    assert [r["status"] for r in csv.DictReader(out_csv.open())] == ["done", "done", "cancelled"]


def test_ctrl_c_in_a_runs_profile_pass_keeps_its_measurement_in_the_answer_as_in_the_history(
        monkeypatch, tmp_path, capsys, compile_lab_home):
    # The answer used to be read before the cancel landed: freezing=True's run read "stopped (Ctrl-C)" there and
    # the default compile was the best so far, while the history and the CSV had that run done and faster.
    import os
    import signal

    from tui.engine.protocol import Measured
    from tui.engine.runner.launch import launch_for

    _use_fake_worker(monkeypatch, {"freezing=true": 0.7})
    hung: list[str] = []

    class ProfilePassHangs(WorkerRunner):
        """freezing=True's worker hangs in its profile pass (``hang_profiling``): Ctrl-C once its measurement is in."""

        def _launch(self, options, gpu):
            freezing = options.inductor_options.get("freezing") is True
            return launch_for(options, gpu, self.worker_argv,
                              {**self.env, "FAKE_WORKER_BEHAVIOUR": "hang_profiling"} if freezing else self.env)

        async def run(self, record, on_event=None):
            def forward(event):
                if on_event is not None:
                    on_event(event)
                if isinstance(event, Measured) and record.options.inductor_options.get("freezing") is True:
                    hung.append(record.run_id)
                    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C as its profile pass starts

            return await super().run(record, forward)

    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None, env=None:
                        ProfilePassHangs(worker_argv=FAKE_WORKER, keep_spare=keep_spare))
    out_csv = tmp_path / "t.csv"
    code = cli.main(["tune", "--workload", "pointwise", "--device", "cpu", "--iters", "20", "--block-size", "5",
                     "--space", "freezing,cpp_wrapper", "--budget", "5m", "--csv", str(out_csv), *QUIET_MACHINE])
    out = capsys.readouterr().out
    assert code == 128 + signal.SIGINT and len(hung) == 1
    history = [json.loads(line) for line in (compile_lab_home / "data" / "history.jsonl").read_text().splitlines()]
    assert [(h["options"]["inductor_options"], h["status"]) for h in history] == [({}, "done"),
                                                                                ({"freezing": True}, "done")]
    assert history[1]["profile"]["why"] == "the profile pass was stopped by a cancel"
    assert [r["status"] for r in csv.DictReader(out_csv.open())] == ["done", "done"]
    # the answer reads the run as the history does: done, scored, the leader; no run stopped
    assert out.splitlines()[0] == "best so far: freezing=True (unconfirmed: Ctrl-C)", out
    assert "stopped (Ctrl-C)" not in out.replace("unconfirmed: Ctrl-C", "")
    assert re.search(r"tune id \S+: 2 run\(s\) in ", out), out


@pytest.mark.parametrize("argv", [
    ["--space", "cpp.simdlen"],  # the worker's torch lacks it
    ["--space", "layout_optimization"],  # it applies to cuda only
    ["--space", "cpp_wrapper", "--option", "cpp_wrapper=true"],  # pinned: the same as the default compile
])
def test_a_space_with_nothing_left_to_race_is_refused_before_any_run(argv, monkeypatch, capsys, compile_lab_home):
    # it used to run the default compile alone and answer "no configuration beats the default compile by more
    # than 2%", having compared nothing
    _use_fake_worker(monkeypatch, {})
    code = cli.main(["tune", "--workload", "pointwise", "--device", "cpu", "--iters", "20", "--budget", "2m", *argv])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.splitlines()[-1] == (
        "compile-lab: error: --space: nothing to race against the default compile: every knob of the space was left "
        "out (the notes say why); widen the space or pin fewer options")
    assert not (compile_lab_home / "data" / "history.jsonl").exists()


def test_at_80_columns_a_name_in_a_standing_folds_at_its_separators_never_mid_word():
    """``dropped: below max-autotune-no-cudagraphs`` folded as ``max-autotune-no-cudagra`` / ``phs``."""
    autotune = Candidate((("mode", "max-autotune-no-cudagraphs"),))
    leader = Standing(autotune, Score(1.19, 1.17, 1.21, 2), stage=1, screened=Score(1.18, 1.12, 1.25, 1))
    default = Standing(Candidate(), Score(0.86, 0.84, 0.88, 2), stage=1, screened=Score(0.85, 0.80, 0.90, 1))
    dropped = Standing(Candidate((("cpp.simdlen", 256),)), Score(0.77, 0.71, 0.83, 1), stage=0,
                       screened=Score(0.77, 0.71, 0.83, 1),
                       gone="dropped: below max-autotune-no-cudagraphs (≤ 0.825x vs ≥ 0.845x)")
    result = TuneResult(tune_id="t-1", outcome=UNCONFIRMED, winner=leader, winner_options=None, confirmation=None,
                        standings=(leader, default, dropped))
    lines = [line for line in _answer_at_80(result) if line.startswith("│")]
    assert max(len(line) for line in lines) <= 80
    standing = " ".join(line.split("│")[4].strip() for line in lines[4:])  # the dropped candidate's rows
    pieces = [line.split("│")[4].strip() for line in lines[4:]]
    assert any(piece.endswith("-") and "max-autotune" in piece for piece in pieces), pieces  # after a separator
    assert any(piece.startswith("cudagraphs") or "no-cudagraphs" in piece for piece in pieces), pieces
    assert standing.replace("- ", "-").startswith("dropped: below max-autotune-no-cudagraphs"), standing


def test_a_search_keeps_a_warm_worker_for_each_next_run(monkeypatch, capsys, compile_lab_home):
    _use_fake_worker(monkeypatch, {"mode=reduce-overhead": 1.3})
    spares: list[bool] = []

    class Counting(WorkerRunner):
        async def run(self, record, on_event=None):
            done = await super().run(record, on_event)
            spares.append(self.last_from_spare)
            return done

    monkeypatch.setattr(cli, "make_runner", lambda keep_spare, telemetry=None, env=None:
                        Counting(worker_argv=FAKE_WORKER, keep_spare=keep_spare))
    code = cli.main(["tune", "--workload", "pointwise", "--device", "cpu", "--iters", "20", "--block-size", "5",
                     "--space", "modes", "--budget", "2m", "--no-history", *QUIET_MACHINE])
    assert code == 0, capsys.readouterr().err
    # The first run starts its worker; every later one takes the spare started while the one before ran.
    assert len(spares) >= 4 and spares[0] is False and all(spares[1:]), spares


def test_only_a_cuda_device_on_a_torch_that_says_it_has_no_cuda_is_refused():
    from tui.engine.tune.request import SearchPlan, device_refused

    plan = SearchPlan(candidates=(), torch="2.13.0+cpu", cuda=False)
    assert device_refused(plan, "cuda:0").startswith("cuda:0 is not allowed")
    assert device_refused(plan, "cpu") is None
    assert device_refused(SearchPlan(candidates=(), cuda=None), "cuda") is None  # the probe could not say
    assert device_refused(SearchPlan(candidates=(), cuda=True), "cuda") is None


def test_the_plan_names_the_pinned_options_torch_lacks_and_the_nearest_name():
    from tui.engine.tune.request import SearchPlan, pinned_refused, plan_search, probe_keys
    from tui.engine.tune.space import parse_space

    base = RunOptions(workload="pointwise", device="cpu", inductor_options={"freezng": True, "cpp_wrapper": True})
    assert probe_keys(base)[-1] == "freezng" and probe_keys(base).count("cpp_wrapper") == 1
    found = TorchOptions(torch="2.13.0+cpu", defaults={"freezing": False, "cpp_wrapper": False}, missing=("freezng",))
    plan = plan_search(base, parse_space("modes"), found)
    assert plan.unknown_pinned == ("freezng",)
    assert pinned_refused(plan) == ("'freezng' is not an inductor option of this machine's torch (did you mean "
                                    "freezing?)")
    odd = SearchPlan(candidates=(), unknown_pinned=("zzz_qqq",))
    assert pinned_refused(odd) == ("'zzz_qqq' is not an inductor option of this machine's torch (see "
                                   "torch._inductor.list_options())")
    assert pinned_refused(plan_search(base, parse_space("modes"), TorchOptions(torch="2.13.0+cpu"))) is None
    # a catalog option this torch lacks is not offered back as its own correction
    older = dataclasses.replace(plan, unknown_pinned=("cpp_wrapper",), known=("freezing",))
    assert pinned_refused(older) == ("'cpp_wrapper' is not an inductor option of this machine's torch (see "
                                     "torch._inductor.list_options())")
    # the runs run on a cluster whose torch could not be asked: this machine's says nothing of the nodes'
    assert pinned_refused(dataclasses.replace(plan, fallback=True)) is None


@pytest.mark.parametrize(("flag", "why"), [
    (["--mode", "default"], "--mode: the search tries the modes itself (--space modes)"),
    (["--fullgraph"], "--fullgraph: the search tries it itself (--space axes)"),
    (["--repeat=3"], "--repeat: the search sets each candidate's processes, and confirms the winner in 3 or more "
                     "a side"),
])
def test_a_run_flag_tune_takes_none_of_says_why(flag, why, capsys):
    """A new user's ``tune --mode default`` read only "unrecognized arguments: --mode default"."""
    code = cli.main(["tune", "--workload", "mlp", *flag])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.endswith(f"({why})") and "\n" not in err, err
    assert cli.main(["tune", "--workload", "mlp", "--itres", "3"]) == 2
    assert capsys.readouterr().err.strip().endswith("(--itres: did you mean --iters?)")


def test_every_run_flag_tune_lacks_says_why_and_no_reason_names_a_flag_tune_takes():
    """``tune.NOT_TAKEN`` is written by hand beside the flags ``add_option_flags`` leaves out (``SEARCHED``): a flag
    added to ``run`` and not to ``tune`` would read only "unrecognized", and a reason kept for a flag ``tune`` later
    took would never be shown."""
    from tui.cli.parser import _command_parser, _long_flags, build_parser
    from tui.cli.tune import NOT_TAKEN

    parser = build_parser()
    run_flags = set(_long_flags(_command_parser(parser, "run")))
    tune_flags = set(_long_flags(_command_parser(parser, "tune")))
    assert sorted(run_flags - tune_flags) == sorted(NOT_TAKEN)
