"""The command line's results table tells a sweep's rows apart: whole modes, differing fields first."""

from __future__ import annotations

import io
import re

from test_cli import _use_fake_worker
from tui import cli


def test_a_sweeps_table_shows_every_mode_whole_at_80_columns(monkeypatch, compile_lab_home, capsys):
    _use_fake_worker(monkeypatch)
    monkeypatch.setenv("COLUMNS", "80")  # rich's width for a table printed to a pipe
    code = cli.main(["sweep", "--workload", "pointwise", "--param", "n=64", "--device", "cpu",
                     "--mode", "reduce-overhead,max-autotune-no-cudagraphs", "--dynamic", "auto,true,false",
                     "--iters", "10", "--block-size", "5", "--no-history"])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert next(line for line in out.splitlines() if " verdict " in line).split()[-1] == "acc", out  # uncut
    # Each row: "N pointwise n=64", then the fields that differ (mode, then dyn) first, each word whole.
    runs = re.findall(r"^ ?(\d) pointwise n=64 .*\n ?(\S+) +.*\n ?(\S+) ", out, flags=re.MULTILINE)
    assert [(mode, dynamic) for _, mode, dynamic in runs] == [
        (mode, f"dyn={dynamic}")
        for mode in ("reduce-overhead", "max-autotune-no-cg")
        for dynamic in ("auto", "true", "false")
    ], out
    assert "…" not in "".join(line[:20] for line in out.splitlines())  # nothing in the run column is cut


def test_rows_that_ran_in_several_places_say_where():
    import dataclasses

    from tui.cli.render import where_words
    from tui.engine.payloads import Env
    from tui.engine.options import RunOptions
    from tui.engine.store.results import RunRecord

    def at(node, gpu):
        record = RunRecord.new(RunOptions(device="cuda:0"))
        record.env = dataclasses.replace(Env(), node=node, gpu_name=gpu)
        return record

    same = [at("a", "NVIDIA H200"), at("a", "NVIDIA H200")]
    assert where_words(same[0], same) == []
    mixed = [at("a", "NVIDIA H200"), at("b", "NVIDIA H100 80GB HBM3")]
    assert where_words(mixed[1], mixed) == ["@b", "H100-80GB-HBM3"]


def test_zero_graph_breaks_read_0_and_a_cancel_says_so_once():
    import dataclasses
    import io

    from rich.console import Console

    from tui.cli.render import print_table
    from tui.engine.options import RunOptions
    from tui.engine.store.results import RunRecord

    counted = RunRecord.new(RunOptions(workload="pointwise", device="cpu"))
    counted.diagnostics = dataclasses.replace(counted.diagnostics, graph_breaks=0, recompiles=0)
    counted.fail("cancelled", "cancelled")
    unknown = RunRecord.new(RunOptions(workload="pointwise", device="cpu"))
    unknown.fail("worker_crashed", "the worker exited with code 1")
    out = io.StringIO()
    print_table([counted, unknown], Console(file=out, width=120))
    text = out.getvalue()
    assert "0/0" in text and "–/–" in text  # counted zero vs not known (format.MISSING)
    assert "run 1: cancelled\n" in text and "cancelled: cancelled" not in text
    assert "run 2: worker_crashed: the worker exited with code 1" in text


def test_a_user_files_name_is_what_the_run_column_shows():
    import io

    from rich.console import Console

    from tui.cli.render import print_table
    from tui.engine.options import RunOptions
    from tui.engine.store.results import RunRecord

    deep = "/home/someone/projects/a-long-folder-name/another-folder/models/resnet_variant.py:make"
    record = RunRecord.new(RunOptions(workload=deep, device="cpu"))
    record.fail("load_error", "no module")
    out = io.StringIO()
    print_table([record], Console(file=out, width=80))
    text = out.getvalue()
    column = "".join(line[1:21].strip() for line in text.splitlines()[4:7])  # the run column's first lines
    assert column.startswith("1 resnet_variant.py:make"), text  # whole, folded where it is wider than the column
    assert "…" not in text and "a-long-folder-name" not in text
    assert " acc" in text.splitlines()[2]  # the last header whole


def test_a_file_name_wider_than_the_run_column_folds_at_a_separator():
    """At 80 columns the run column is 13 wide: ``example_workload.py`` read ``example_workl`` / ``oad.py``."""
    import io

    from rich.console import Console

    from tui.cli.render import print_table
    from tui.present.fold_text import separator_breaks

    from fakes.timed import pointwise, timed_run

    record = timed_run("r1", pointwise(workload="/home/me/example_workload.py:make_workload", params={}))
    out = io.StringIO()
    print_table([record], Console(file=out, width=80))
    lines = out.getvalue().splitlines()
    assert lines[2].index("verdict") == 15, out.getvalue()  # a run column of 13, as a done run's numbers leave it
    assert [line[:14].strip() for line in lines[4:6]] == ["1 example_", "workload.py"], out.getvalue()

    def parts(text: str, width: int) -> list[str]:
        ends = [*separator_breaks(text, width), len(text)]
        return [text[start:end] for start, end in zip([0, *ends], ends, strict=False)]

    assert parts("1 a/very_long_name.py:build n=3", 10) == ["1 a/very_", "long_name.", "py:build ", "n=3"]
    assert parts("abcdefghijklmnop.py", 10) == ["abcdefghij", "klmnop.py"]  # a piece wider than the column: letters
    assert parts("dyn=auto fp32 cpu", 9) == ["dyn=auto ", "fp32 cpu"]  # words that fit: between words
    assert parts("ab cd\xa0ef", 6) == ["ab ", "cd\xa0ef"]  # a no-break space joins its words


def test_files_of_one_name_are_told_apart_by_as_many_folders_as_it_takes():
    from tui.present.format import ListingNames, workload_names

    a, b = "/tmp/a/model.py:make_workload", "/tmp/b/model.py:make_workload"
    assert workload_names([a, b, "pointwise", "/x/other.py:build"]) == {
        a: "a/model.py", b: "b/model.py", "pointwise": "pointwise", "/x/other.py:build": "other.py:build"}
    deeper = "/srv/a/model.py:make_workload"  # a/model.py twice: one more folder for those two, not for b
    assert workload_names([a, b, deeper]) == {a: "tmp/a/model.py", b: "b/model.py", deeper: "srv/a/model.py"}
    assert workload_names(["/a/m.py:build", "/b/a/m.py:build"]) == {"/a/m.py:build": "/a/m.py:build",
                                                                    "/b/a/m.py:build": "b/a/m.py:build"}
    # one file under two factories, or named twice: one name each, nothing to tell apart
    assert workload_names([a, "/tmp/a/model.py:build", a]) == {a: "model.py", "/tmp/a/model.py:build": "model.py:build"}
    listing = ListingNames()  # the app's table: a listing that grows
    assert (listing.add(a), listing.name(a)) == ([], "model.py")
    assert (listing.add(b), listing.name(a), listing.name(b)) == ([a], "a/model.py", "b/model.py")
    assert listing.add(deeper) == [a] and listing.name(a) == "tmp/a/model.py" and listing.add(a) == []


def test_a_label_and_a_word_read_one_listing_of_names_alike():
    """workload_label (the app's one-line labels) and workload_word (the command line's) took the listing's names
    through two interfaces (a function, a mapping); both now read one mapping, the command line's
    workload_names or the app table's growing ListingNames, and a label is the word and a built-in's sizes."""
    from tui.engine.options import RunOptions
    from tui.present.format import ListingNames, workload_label, workload_names, workload_word

    a, b = "/tmp/a/model.py:make_workload", "/tmp/b/model.py:make_workload"
    listing = ListingNames()
    for workload in (a, b):
        listing.add(workload)
    assert dict(listing) == workload_names([a, b]) == {a: "a/model.py", b: "b/model.py"}
    for names in (listing, workload_names([a, b])):
        options = RunOptions(workload=b, device="cpu")
        assert workload_label(options, names) == workload_word(options, names) == "b/model.py"
        other = RunOptions(workload="/srv/other.py:build", device="cpu")  # not in the listing: its file name
        assert workload_label(other, names) == workload_word(other, names) == "other.py:build"
    builtin = RunOptions(workload="pointwise", params={"n": 512}, device="cpu")
    assert (workload_word(builtin), workload_label(builtin, listing)) == ("pointwise", "pointwise n=512")
    # a file's parameters too, as its row shows them (the chart's title and the queue read "model.py" alone)
    sized = RunOptions(workload=a, params={"n": "32"}, device="cpu")
    assert workload_label(sized, listing) == "a/model.py n=32"


def test_the_table_the_lines_and_the_history_tell_two_model_files_apart(monkeypatch, capsys):
    """``/tmp/a/model.py`` and ``/tmp/b/model.py`` both read ``model.py`` in the table, the progress lines and the
    history."""
    import io

    from rich.console import Console

    from tui.cli.history import _print_sessions, print_runs
    from tui.cli.render import print_table
    from tui.cli.run_lines import RunLines, failed_lines
    from tui.engine.compare.selection import SessionRuns
    from tui.engine.options import RunOptions
    from tui.engine.store.results import RunRecord

    records = [RunRecord.new(RunOptions(workload=f"/tmp/{folder}/model.py:make_workload")) for folder in "ab"]
    for record in records:
        record.fail("runtime_error", "no")
    out = io.StringIO()
    print_table(records, Console(file=out, width=80))
    assert re.findall(r"^ (\d \S+)", out.getvalue(), flags=re.MULTILINE) == ["1 a/model.py", "2 b/model.py"]
    assert failed_lines(records) == [f"{folder}/model.py inductor dyn=auto fp32 cpu: failed: runtime_error: no"
                                     for folder in "ab"]
    stream = io.StringIO()
    lines = RunLines(stream, [record.options for record in records])
    lines.started(records[1])
    assert stream.getvalue().startswith("[1/0] b/model.py inductor")
    out = io.StringIO()
    print_runs(records, records, Console(file=out, width=80))
    assert "a/model.py" in out.getvalue() and "b/model.py" in out.getvalue()
    sessions = [SessionRuns(f"s{n}", 0.0, 0.0, 1, (record.options.workload,), ()) for n, record in enumerate(records)]
    out = io.StringIO()
    _print_sessions(sessions, 2, records, records, Console(file=out, width=80))
    assert [line.split()[-1] for line in out.getvalue().splitlines()[:2]] == ["a/model.py", "b/model.py"]


def test_one_spelling_for_a_missing_value_in_the_app_the_cli_and_compare():
    """The tester found ``-``, ``–`` and ``n/a`` for the same thing; format.MISSING is the one spelling."""
    from tui.app.components.result_cells import row_cells
    from tui.cli.render import speedup_text
    from tui.engine.options import RunOptions
    from tui.engine.store.results import RunRecord
    from tui.present.compare_render import change_text, number_text
    from tui.present.format import MISSING, clock_label

    record = RunRecord.new(RunOptions(workload="pointwise", device="cpu"))
    record.fail("worker_crashed", "the worker exited with code 1")
    cells = row_cells(record, record.summary())
    assert MISSING == "–"
    assert {cells[key].plain for key in ("graph_breaks", "recompiles", "compile_s", "eager_ms")} == {MISSING}
    assert speedup_text(record.summary()).plain == MISSING
    assert number_text(None, "ms") == MISSING and change_text(None, "ms") == (MISSING,)
    assert clock_label(record)[0] == MISSING


def test_one_word_for_an_accuracy_verdict_in_the_app_the_cli_the_details_and_the_report():
    """The app's table said ``ok``/``FAIL`` where the CLI said ``pass``/``fail`` and the details ``pass``/``FAIL``."""
    import dataclasses
    import io

    from rich.console import Console

    from tui.app.components.details.summary import ACCURACY_FIELDS
    from tui.app.components.result_cells import row_cells
    from tui.cli.render import print_table
    from tui.engine.options import RunOptions
    from tui.engine.store.results import RunRecord
    from tui.present.format import MISSING
    from tui.report.page import _accuracy

    shown = {}
    for passed, word in ((True, "pass"), (False, "fail"), (None, MISSING)):
        record = RunRecord.new(RunOptions(workload="pointwise", device="cpu"))
        record.accuracy = dataclasses.replace(record.accuracy, passed=passed)
        out = io.StringIO()
        print_table([record], Console(file=out, width=120))
        row = next(line for line in out.getvalue().splitlines() if "pointwise" in line)
        field = ACCURACY_FIELDS[0].show(passed) if passed is not None else MISSING
        report = re.sub(r"<[^>]+>", "", _accuracy(record.accuracy.verdict))
        shown[word] = {row_cells(record, record.summary())["accuracy"].plain, row.split()[-1], field, report}
    assert shown == {"pass": {"pass"}, "fail": {"fail"}, MISSING: {MISSING}}


def test_a_speedup_far_below_one_shows_its_figures_never_zero():
    """A user's model compiled 500 times slower read ``0.00× [0.00, 0.00]`` in the CLI and the app."""
    from tui.present.format import fmt_speedup, ratio

    assert fmt_speedup(0.0021, 0.0019, 0.51) == "0.0021× [0.0019, 0.51]"
    assert [ratio(v) for v in (0.00994, 0.00995, 0.5, 0.05, 0.00000123)] == ["0.0099", "0.01", "0.50", "0.05",
                                                                            "0.0000012"]


def test_an_inconclusive_row_without_a_noise_reason_says_why_it_is_undecided():
    """README: why a verdict is noisy or not decisive comes first. A --repeat row whose processes disagree read
    ``inconclusive`` with no line saying why."""
    from rich.console import Console

    from test_repeats import _group
    from tui.cli.render import print_warnings
    from tui.engine.store.repeats import GroupRecord

    row = GroupRecord.of(_group((0.080, 0.116, 0.070)))
    assert (row.summary().verdict, row.summary().noise_reasons) == ("inconclusive", ())
    out = io.StringIO()
    print_warnings([row], Console(file=out, width=200))
    low, high = row.summary().speedup_ci_low, row.summary().speedup_ci_high
    assert (f"run 1: inconclusive: its interval [{low:.4g}, {high:.4g}] is neither inside the no-change band "
            "[0.98, 1.02] nor wholly past it: more iterations, or more processes than these 3 (--repeat 5), may "
            "decide it") in out.getvalue()  # not 'processes' alone: it has processes, and --repeat auto stops at 3
    from tui.engine.measure.verdict import undecided_reason

    assert undecided_reason(0.9799, 1.01, 0.02).startswith("its interval [0.9799, 1.01] is neither inside the "
                                                           "no-change band [0.98, 1.02]")
    assert "[1.004, 1.01] is neither inside the no-change band [0.995, 1.005]" in undecided_reason(1.004, 1.01, 0.005)
    assert undecided_reason(0.97, 1.01, 0.02).endswith(": more iterations or processes may decide it")


def test_significant_figures_in_every_table_never_an_exponent_nor_a_decade_too_many():
    """0.99996 ms read ``1.0000`` in the app (a 5th figure) and ``1e+03 µs`` in the CLI."""
    from types import SimpleNamespace

    from tui.cli.render import _ms
    from tui.present.compare_render import number_text
    from tui.present.format import fmt_ms, significant

    assert [significant(v, 4) for v in (0.1054, 0.99996, 12345.6, 0.00001234)] == ["0.1054", "1.000", "12346",
                                                                                   "0.00001234"]
    assert fmt_ms(0.1054) == "0.1054" and fmt_ms(0.99996) == "1.000" and fmt_ms(9.99996) == "10.00"
    assert _ms(SimpleNamespace(median=0.99996)) == "1.00 ms" and _ms(SimpleNamespace(median=0.1054)) == "105 µs"
    assert number_text(0.1054, "ms") == "0.1054" and number_text(0.00001234, "ms") == "0.00001234"
    assert number_text(1.2345, "µs") == "1234"


def test_a_speedup_interval_with_a_large_end_fits_its_cell():
    """``3.28× [2.85, 63.3…`` at 80x24: from 10 on a speedup has three significant figures, not two decimals."""
    from tui.app.table_columns import TABLE_COLUMNS
    from tui.present.format import fmt_speedup, ratio

    assert [ratio(v) for v in (0.9712, 2.849, 9.996, 63.36, 150.2)] == ["0.97", "2.85", "10.0", "63.4", "150"]
    (column,) = [c for c in TABLE_COLUMNS if c.key == "speedup"]
    assert fmt_speedup(3.28, 2.85, 63.36) == "3.28× [2.85, 63.4]" and len("3.28× [2.85, 63.4]") <= column.width


def test_a_long_warning_folds_under_its_own_text_at_80_columns():
    import io

    from rich.console import Console

    from tui.cli.render import print_warnings
    from tui.engine.options import RunOptions
    from tui.engine.store.results import RunRecord

    record = RunRecord.new(RunOptions(workload="pointwise", device="cpu"))
    record.warnings.append("stall: one eager iteration took 3.068 ms, 106x its median (0.02895 ms): the worker was "
                           "paused or the machine was busy; re-run")
    out = io.StringIO()
    print_warnings([record], Console(file=out, width=80))
    lines = out.getvalue().splitlines()
    assert lines[0] == "warnings:" and lines[1].startswith("  run 1: stall: one eager iteration took 3.068 ms")
    assert len(lines) == 3 and lines[2].startswith("    ") and lines[2].strip().endswith("busy; re-run"), lines
    assert max(len(line) for line in lines) <= 80


def test_a_user_file_with_the_default_factory_is_named_by_its_file_alone():
    """``model.py:make_workload`` said the default in every row and cut the name in narrow columns."""
    from tui.cli.run_lines import run_label
    from tui.engine.options import RunOptions
    from tui.present.format import workload_label, workload_name

    assert workload_name("/home/me/models/model.py:make_workload") == "model.py"
    assert workload_name("/home/me/models/model.py:build") == "model.py:build"
    assert workload_name("pointwise") == "pointwise"
    options = RunOptions(workload="/home/me/models/model.py:make_workload", device="cpu")
    assert workload_label(options) == "model.py"
    assert run_label(options).startswith("model.py inductor")


def test_what_every_row_shares_is_said_once_in_the_title():
    """One run at 80 columns read seven lines (mlp, batch=64, width=256, depth=3, inductor, dyn=auto fp32, cpu):
    the options every row shares now go in the title, as the app's pane title says them."""
    import io

    from rich.console import Console

    from tui.cli.render import print_table
    from tui.engine.options import RunOptions
    from tui.engine.store.results import RunRecord

    def table(*options: RunOptions) -> list[str]:
        out = io.StringIO()
        records = [RunRecord.new(o.validated()) for o in options]
        for record in records:
            record.fail("compile_error", "x")
        print_table(records, Console(file=out, width=80))
        return out.getvalue().splitlines()

    one = table(RunOptions(workload="mlp", device="cpu"))
    assert one[0].rstrip() == "compile-lab results · inductor dyn=auto fp32 cpu"
    rows = [line for line in one[4:] if line.strip() and not line.startswith("run 1:")]
    assert rows[0].startswith(" 1 mlp batch=64") and not any("inductor" in row or "cpu" in row for row in rows), one
    two = table(RunOptions(workload="mlp", device="cpu"), RunOptions(workload="mlp", device="cpu", dynamic=True))
    assert two[0].rstrip() == "compile-lab results · inductor fp32 cpu"
    assert [line.split()[0] for line in two if line.strip().startswith("dyn=")] == ["dyn=auto", "dyn=true"], two


TUNE_CANDIDATES = ({}, {"freezing": True}, {"cpp_wrapper": True}, {"aggressive_fusion": True},
                   {"freezing": True, "layout_optimization": False})
"""A CPU tune's screening: the default compile and candidates of one inductor option each, then two combined."""


def tune_runs() -> list:
    from fakes.timed import pointwise, timed_run

    runs = []
    for number, options in enumerate(TUNE_CANDIDATES):
        record = timed_run(f"20261201-10000{number}-aaaaa{number}", pointwise(inductor_options=options),
                           created=1764583810.0 + number, seed=number)
        record.tune_id, record.tune_stage = "20261201-100000-70e001", "screening"
        runs.append(record)
    return runs


def test_a_tunes_candidates_that_differ_by_one_inductor_option_read_apart_at_80_columns():
    """Each candidate's row said ``1 opt``: freezing, cpp_wrapper and aggressive_fusion read alike."""
    import io

    from rich.console import Console

    from tui.cli.render import print_table

    out = io.StringIO()
    print_table(tune_runs(), Console(file=out, width=80))
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80 and " acc" in text.splitlines()[2], text
    assert not re.search(r"\d opts?\b", text), text  # no count of options
    column = "\n".join(line[:15].strip() for line in text.splitlines()[4:])  # the run column
    rows = re.split(r"^\d pointwise\nn=512\n", column, flags=re.MULTILINE)[1:]
    named = [row.replace("\n", "") for row in rows]  # a word wider than the column folds at a separator
    assert named == ["", "freezing=True", "cpp_wrapper=True", "aggressive_fusion=True",
                     "freezing=Truelayout_optimization=False"], text
    assert "freezing=True" in column.splitlines()  # a word that fits the run column is whole on its line


def test_the_table_keeps_its_right_columns_at_80_columns_when_a_verdict_is_long():
    """A launch-bound ``inconclusive`` beside a ``reduce-overhead`` label made the table 91 columns wide, and Rich
    cut it at 80: ``brk/rec`` read ``brk/re`` and ``acc`` was gone. The table then drops to one space between its
    columns and folds ``host inconclusive`` between its words."""
    import dataclasses
    import io

    from rich.console import Console

    from fakes.records import cuda_run_record
    from tui.cli.render import print_table

    first, second = cuda_run_record("20250101-000000-aaaaaa"), cuda_run_record("20250101-000000-bbbbbb")
    second.options = dataclasses.replace(second.options, mode="default")
    assert first.summary().host_verdict is not None
    out = io.StringIO()
    print_table([first, second], Console(file=out, width=80))
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80, out.getvalue()
    header = next(line for line in lines if " verdict " in line)
    assert header.split()[-2:] == ["brk/rec", "acc"], out.getvalue()  # the header whole, to its last column
    rows = [line for line in lines if "0/0" in line]
    assert len(rows) == 2 and all(line.rstrip().endswith("pass") for line in rows), out.getvalue()
    assert "reduce-overhead" in out.getvalue() and "inconclusive" in out.getvalue()
