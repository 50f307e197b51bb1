"""``compile-lab report``: one self-contained HTML file (issue 15 item 4).

The report renders from the fakes' records exported to JSON (and from the history); its forest plot
is SVG that parses, with one mark per configuration; what users wrote comes out escaped; it opens
offline; without matplotlib, and with a bad ``-o``, the command exits 2 before writing anything.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fakes.records import cuda_run_record, full_group, full_record

from tui import cli, logs, paths
from tui.engine.store.export import write_json
from tui.engine.store.history import History
from tui.cli.report import load_runs
from tui.engine.compare.matching import config_key
from tui.engine.store.report_data import QUANTILES, gather_report
from tui.engine.measure.verdict import VERDICTS

pytest.importorskip("matplotlib")  # in the test extras; the report's own extra

SVG = "{http://www.w3.org/2000/svg}"
SCRIPT = "<script>alert(1)</script>"
INSTALL = 'pip install "compile-lab[report]"'


def _records() -> list:
    """Five rows: launch-bound, GPU-bound, a group of 3 processes (noisy), a failed run, a user file; three
    configurations (the first two runs are one, measured twice; the group's and the failed run's are one)."""
    user = cuda_run_record("20250101-000002-script")
    user.options = dataclasses.replace(user.options, workload=f"my{SCRIPT}.py", params={"tag": SCRIPT})
    return [cuda_run_record("20250101-000000-lbound"), cuda_run_record("20250101-000001-gpubnd", eager_host_ms=0.11),
            *full_group(), full_record("20261201-101011-bbbbbb", failed=True), user]  # fmt: skip


@pytest.fixture
def export(tmp_path: Path) -> Path:
    path = tmp_path / "runs.json"
    write_json(_records(), path)
    return path


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> tuple[Path, Path, str]:
    """The export's report, rendered once for the tests that read the page (a render draws every plot: seconds):
    (the export, the page, what the command said on stderr)."""
    folder = tmp_path_factory.mktemp("rendered")
    export, out, said = folder / "runs.json", folder / "report.html", io.StringIO()
    write_json(_records(), export)
    # before any test's own fixtures: a home of its own (the suite's per-test one is not set up yet), left after
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stderr(said):
        patch.setenv("COMPILE_LAB_HOME", str(folder / "compile-lab-home"))
        try:
            code = cli.main(["report", str(export), "-o", str(out)])
        finally:
            logs.reset()
    assert code == 0, said.getvalue()
    return export, out, said.getvalue()


def _report(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str]:
    code = cli.main(["report", *argv])
    return code, capsys.readouterr().err


def _forest(page: str) -> ET.Element:
    match = re.search(r'<svg id="forest-plot".*?</svg>', page, re.DOTALL)
    assert match, "no forest plot in the page"
    return ET.fromstring(match.group(0))


def _marks(svg: ET.Element, prefix: str) -> dict[str, ET.Element]:
    return {g.get("id"): g for g in svg.iter(f"{SVG}g") if (g.get("id") or "").startswith(prefix)}


def test_the_report_renders_one_forest_mark_per_configuration(rendered):
    export, out, err = rendered
    assert "wrote" in err and "(3 configuration(s) in 5 rows from 7 run(s))" in err
    page = out.read_text(encoding="utf-8")
    forest = _forest(page)
    rows = gather_report(load_runs([str(export)]).records, configuration=config_key).rows
    assert len(rows) == 5 and [len(r.processes) for r in rows] == [1, 1, 3, 1, 1]
    marks = _marks(forest, "forest-row-")
    assert sorted(marks) == sorted(f"forest-row-{r.number}" for r in rows if r.speedup is not None)
    assert len(marks) == 5
    # Host-inclusive marks where (and only where) a run is launch-bound.
    assert sorted(_marks(forest, "forest-host-")) == sorted(f"forest-host-{r.number}" for r in rows if r.shows_host)
    assert "forest-host-2" not in _marks(forest, "forest-host-")
    # Each mark is drawn in its verdict's colour (the app's colours as hex).
    from tui.report.colors import verdict_colour

    for row in rows:
        style = " ".join(p.get("style", "") for p in marks[f"forest-row-{row.number}"].iter(f"{SVG}path"))
        assert f"stroke: {verdict_colour(row.verdict)}" in style
    # The distributions: a box per side per configuration, every sample summarised by bounded quantiles.
    for row in rows:
        svg = re.search(rf'<svg id="dist-{row.number}".*?</svg>', page, re.DOTALL)
        assert svg, f"no distribution for #{row.number}"
        ids = {el.get("id") for el in ET.fromstring(svg.group(0)).iter() if el.get("id")}
        assert {f"dist-{row.number}-eager", f"dist-{row.number}-compiled"} <= ids
        assert len(row.eager.quantiles) <= QUANTILES
    assert rows[2].eager.stats.n == 3 * 34  # the group's processes pooled
    for words in ("Noisy runs", "processes 1, 2, 3 of 3", "re-run on a quiet machine", "Fake H200", "2.13.0",
                  "throttle_reasons[0] 46", "compile-lab run --param n=4096", "reduce-overhead", "SM clock"):
        assert words in page, words


def test_a_speedup_and_its_interval_stay_on_one_line_in_the_summary_table(rendered):
    """``0.88× [0.87, / 0.89]``: the summary table broke an interval across lines in a narrow column."""
    page = rendered[1].read_text(encoding="utf-8")
    assert re.search(r"td\.n\{[^}]*white-space:nowrap", page), "numeric cells may wrap"
    assert re.search(r'<td class="n">\d\.\d\d× \[\d\.\d\d, \d\.\d\d\]</td>', page)  # the speedup cell is one
    host = re.search(r'<td><span class="nw">(\d\.\d\d× \[[^<]*\])</span> <span class="verdict', page)
    assert host, "the host-inclusive figure may wrap inside its interval"


def test_every_string_users_wrote_is_escaped(rendered):
    page = rendered[1].read_text(encoding="utf-8")
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "my&lt;script&gt;alert(1)&lt;/script&gt;.py" in page  # the options table has the whole workload
    for svg in re.findall(r"<svg .*?</svg>", page, re.DOTALL):
        ET.fromstring(svg)  # the plots' text is escaped too, or this would not parse


def test_the_report_opens_offline_and_is_the_same_every_time(rendered, tmp_path, capsys):
    export, first, _ = rendered
    second = tmp_path / "b.html"
    assert _report([str(export), "-o", str(second)], capsys)[0] == 0
    page = first.read_text(encoding="utf-8")
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", page, re.IGNORECASE)
    assert not re.search(r"url\(\s*['\"]?(?:https?:)?//|@import|<link\b|<iframe\b|<img\b", page, re.IGNORECASE)
    assert "<!DOCTYPE svg" not in page and "<?xml" not in page
    assert first.read_bytes() == second.read_bytes()
    ids = re.findall(r' id="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "an id twice in one page"


def test_without_matplotlib_the_command_says_how_to_install_it(export, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    out = tmp_path / "report.html"
    code, err = _report([str(export), "-o", str(out)], capsys)
    assert code == 2
    assert err.count("\n") == 1 and INSTALL in err and err.startswith("compile-lab: error:")
    assert not out.exists()


def _bad_outputs(tmp_path: Path, export: Path) -> dict[str, Path | str]:
    directory = tmp_path / "a-dir"
    directory.mkdir()
    target = tmp_path / "target.html"
    target.write_text("keep")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    return {"a directory": directory, "a link": link, "a dangling link": _dangling(tmp_path),
            "the history": paths.history_file(), "the config": paths.config_file(),
            "in the runs directory": paths.runs_dir() / "x.html", "a name ending in a slash": f"{tmp_path}/new/",
            "in a directory that does not exist": tmp_path / "missing" / "r.html",
            "one of the RUNS": export}  # fmt: skip


def _dangling(tmp_path: Path) -> Path:
    link = tmp_path / "dangling.html"
    link.symlink_to(tmp_path / "nowhere.html")
    return link


def test_a_bad_output_path_exits_2_before_anything_is_written(export, tmp_path, capsys):
    before = export.read_bytes()
    for what, path in _bad_outputs(tmp_path, export).items():
        listing = sorted(p.name for p in tmp_path.iterdir())
        code, err = _report([str(export), "-o", str(path)], capsys)
        assert code == 2, what
        assert err.count("\n") == 1 and err.startswith("compile-lab: error: -o:"), (what, err)
        assert sorted(p.name for p in tmp_path.iterdir()) == listing, what
    assert (tmp_path / "target.html").read_text() == "keep"
    assert export.read_bytes() == before
    assert not paths.history_file().exists() and not paths.runs_dir().exists()


def test_runs_that_cannot_be_read_exit_2_with_one_line(tmp_path, capsys):
    not_json = tmp_path / "notes.json"
    not_json.write_text("hello")
    not_export = tmp_path / "list.json"
    not_export.write_text(json.dumps([1, 2]))
    out = tmp_path / "r.html"
    for runs in ([str(tmp_path / "missing.json")], [str(not_json)], [str(not_export)], ["history:"],
                 ["history:20250101-000000-nosuch"], ["session:last"], ["since:yesterday"], [""]):
        code, err = _report([*runs, "-o", str(out)], capsys)
        assert code == 2, runs
        assert err.count("\n") == 1 and err.startswith("compile-lab: error: RUNS:"), (runs, err)
        assert not out.exists()
    code, err = _report([str(not_json)], capsys)  # no -o
    assert code == 2 and "-o" in err


def test_history_selections_pick_runs_and_groups(export, tmp_path, capsys):
    """RUNS are compare's selections (tui.engine.compare.selection); several add up, each run read once."""
    history = History()
    records = _records()
    for record in records:
        history.append(record)
    picked, problems, _, _ = load_runs(["history:20261201-101010-aaaaaa,20250101-000000-lbound"])
    assert len(picked) == 4 and problems == []  # a group id names all three processes
    picked, _, _, _ = load_runs(["session:last"])  # the fakes' full records share one session
    assert sorted(r.run_id for r in picked) == sorted(r.run_id for r in records if r.session_id)
    picked, problems, origins, _ = load_runs([str(export), "history:20250101-000000-lbound"])
    assert len(picked) == 7 and any("more than once" in p for p in problems)
    assert set(origins.values()) == {str(export)}  # each run is its first argument's: the second added none
    out = tmp_path / "h.html"
    ids = ",".join(r.run_id for r in records)
    code, err = _report([f"history:{ids}", "-o", str(out)], capsys)
    assert code == 0, err
    assert len(_marks(_forest(out.read_text(encoding="utf-8")), "forest-row-")) == 5


def test_two_files_of_one_configuration_name_their_file_in_each_row(tmp_path, capsys):
    """A new user reported base.json and new.json: rows #1 and #3 read alike, nothing said which was which."""
    from tui.report.page import row_labels

    base, new = tmp_path / "base.json", tmp_path / "new.json"
    records = _records()[:1]
    write_json(records, base)
    again = [dataclasses.replace(r, run_id="20261202-101010-bbbbbb") for r in records]
    write_json(again, new)
    picked, _, origins, _ = load_runs([str(base), str(new)])
    rows = gather_report(picked, configuration=config_key, origins=origins).rows
    labels = row_labels(rows)
    assert labels[0].endswith(f"(from {base})") and labels[1].endswith(f"(from {new})"), labels
    alone = load_runs([str(base)])
    one = gather_report(alone.records, configuration=config_key, origins=alone.origins)
    assert not row_labels(one.rows)[0].endswith(")")  # one source: nothing to tell apart


def test_runs_from_the_history_are_numbered_as_queued_as_the_cli_and_history_number_them():
    """A new user stopped a sweep in its second run: the third, never started, was saved first, and the report
    numbered it #2 where the CLI's table and ``history`` said run 2 was the one stopped."""
    history = History()
    first, second, third = (dataclasses.replace(cuda_run_record(f"20250101-00000{n}-queued"), created=1000.0 + n)
                            for n in (1, 2, 3))
    for record in (first, third, second):  # the order they ended in
        history.append(record)
    picked = load_runs(["history:" + ",".join(r.run_id for r in (third, first, second))]).records
    assert [r.run_id for r in picked] == [first.run_id, second.run_id, third.run_id]


def test_a_run_whose_samples_are_gone_keeps_its_row_and_its_boxes(tmp_path, capsys):
    history = History()
    records = _records()[:2]
    for record in records:
        history.append(record)
    os.unlink(history.samples_path(history.load()[0][0]))
    selection = "history:" + ",".join(r.run_id for r in records)
    stored, _, _, _ = load_runs([selection])
    rows = gather_report(stored, configuration=config_key).rows
    assert rows[0].samples_note and "samples" in rows[0].samples_note and rows[0].speedup is not None
    assert rows[1].samples_note is None
    out = tmp_path / "p.html"
    assert _report([selection, "-o", str(out)], capsys)[0] == 0
    page = out.read_text(encoding="utf-8")
    # The stored statistics still draw the boxes; the dots (quantiles of the samples) are gone.
    assert "Boxes from the stored statistics, no dots: run 20250101-000000-lbound" in page
    assert 'id="dist-1-eager"' in page and 'id="dist-1-eager-points"' not in page
    assert 'id="dist-2-eager-points"' in page


def test_every_verdict_has_the_apps_colour():
    from tui.present.format import VERDICT_STYLES
    from tui.report.colors import RICH_HEX, VERDICT_COLOURS

    assert set(VERDICT_COLOURS) == set(VERDICTS)
    for verdict, colour in VERDICT_COLOURS.items():
        assert colour == RICH_HEX[VERDICT_STYLES[verdict].split()[-1]]
        assert re.fullmatch(r"#[0-9a-f]{6}", colour)


def test_a_file_that_cannot_be_written_exits_1_with_one_line(export, tmp_path, capsys, monkeypatch):
    import tui.report
    from tui.engine.store.export import ExportError

    def fail(data, path, answers=()):
        raise ExportError(f"cannot write {path}: No space left on device")

    monkeypatch.setattr(tui.report, "write_report", fail)
    code, err = _report([str(export), "-o", str(tmp_path / "r.html")], capsys)
    assert code == 1 and err.count("\n") == 1 and "No space left on device" in err


def test_a_configuration_counts_once_however_often_and_in_how_many_processes_it_ran(tmp_path, capsys):
    """Three single runs of one configuration are one configuration in three rows; a --repeat group of three
    processes is one configuration in one row; the header and the command's line say what the rows are."""
    singles = [cuda_run_record(f"20250101-00000{i}-single") for i in range(3)]
    group = full_group()
    data = gather_report([*singles, *group], configuration=config_key)
    assert (len(data.rows), data.configurations, data.runs) == (4, 2, 6)
    assert data.counts == "2 configuration(s) in 4 rows from 6 run(s)"
    alone = gather_report(singles[:1] + group, configuration=config_key)
    assert (len(alone.rows), alone.configurations) == (2, 2)
    assert alone.counts == "2 configuration(s) from 4 run(s)"
    export = tmp_path / "runs.json"
    write_json([*singles, *group], export)
    out = tmp_path / "report.html"
    code, err = _report([str(export), "-o", str(out)], capsys)
    assert code == 0 and "(2 configuration(s) in 4 rows from 6 run(s))" in err
    page = out.read_text(encoding="utf-8")
    assert "2 configuration(s) in 4 rows from 6 run(s) (a row per run, or per <code>--repeat</code> group" in page


def test_the_rows_gather_groups_verdicts_and_environments():
    data = gather_report(_records(), sources=("x.json",), configuration=config_key)
    assert [row.number for row in data.rows] == [1, 2, 3, 4, 5] and data.runs == 7
    launch_bound, gpu_bound, group, failed, _ = data.rows
    assert launch_bound.shows_host and launch_bound.host_speedup.point == pytest.approx(0.155 / 0.118, rel=1e-3)
    assert not gpu_bound.shows_host and gpu_bound.verdict == "slower"
    assert group.noisy and group.noise_reasons and group in data.noisy_rows
    assert failed.status == "failed" and failed.verdict is None and "runtime_error" in failed.error
    assert group.command.endswith("--repeat 3")
    assert [env.numbers for env in data.environments] == [(1, 2, 5), (3, 4)]


_EM = {".": 0.318, "×": 0.838}
"""DejaVu Sans's advance widths in em (digits 0.636): the forest plot's tick labels at font size 9."""


def _tick_labels(page: str) -> list[tuple[float, str]]:
    forest = re.search(r'<svg id="forest-plot".*?</svg>', page, re.DOTALL)
    assert forest
    found = re.findall(r'<text[^>]*text-anchor: middle" x="([\d.]+)"[^>]*>([^<]*×)</text>', forest.group(0))
    return sorted((float(x), label) for x, label in found)


def test_the_forest_plots_ticks_never_touch_and_its_long_labels_stay_whole(tmp_path, capsys):
    """Speedups from 0.07x to 8.6x put 0.9x, 1x and 1.1x side by side ("0.8×1×1.25×"), and a long label was cut."""
    from fakes.timed import pointwise, timed_run

    long = pointwise(workload="/home/someone/projects/models/very_long_model_file_name.py:make_model",
                     params={"batch": 64, "width": 1024, "depth": 12, "heads": 16})
    records = [timed_run(f"20261201-10000{i}-aaaaa{i}", pointwise(params={"n": 64 * 2**i}), eager=eager, seed=i)
               for i, eager in enumerate((0.07, 0.5, 1.0, 2.0, 8.6))]
    records.append(timed_run("20261201-100009-aaaaa9", long, seed=9))
    export = tmp_path / "runs.json"
    write_json(records, export)
    out = tmp_path / "report.html"
    code, err = _report([str(export), "-o", str(out)], capsys)
    assert code == 0, err
    page = out.read_text(encoding="utf-8")
    ticks = _tick_labels(page)
    assert len(ticks) >= 3 and "1×" in [label for _, label in ticks]
    for (x, label), (next_x, next_label) in zip(ticks, ticks[1:], strict=False):
        right = x + sum(_EM.get(c, 0.636) for c in label) * 9 / 2
        left = next_x - sum(_EM.get(c, 0.636) for c in next_label) * 9 / 2
        assert left - right >= 2, (label, next_label, left - right)
    words = " ".join(_forest(page).itertext()).split()
    for word in ("very_long_model_file_name.py:make_model", "batch=64", "width=1024", "depth=12", "heads=16"):
        assert word in words, word
    assert not any("…" in word for word in words)


def test_the_sections_that_number_rows_call_them_rows_not_configurations(rendered):
    """A tester read ``configuration`` 1, 1, 2, 2, 3, 3 in the machine table of 3 configurations in 5 rows: the
    numbers are the summary table's rows (``#``), and a configuration run apart spans several."""
    page = rendered[1].read_text(encoding="utf-8")
    machine = page.split('id="telemetry"')[1].split("<h2")[0]
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", machine)
    assert headers[:2] == ["#", "run"], headers
    environment = page.split('id="environment"')[1].split("<h2")[0]
    assert re.search(r"<td[^>]*>rows</td>", environment) and "configurations" not in environment
    assert '<h2 id="options">Options of each row</h2>' in page


def test_without_gpu_telemetry_the_machine_section_says_so_in_one_line(tmp_path, capsys):
    from fakes.timed import timed_run

    export = tmp_path / "runs.json"
    write_json([timed_run("20261201-100000-aaaaaa", seed=1), timed_run("20261201-100001-aaaaab", seed=2)], export)
    out = tmp_path / "report.html"
    assert _report([str(export), "-o", str(out)], capsys)[0] == 0
    section = out.read_text(encoding="utf-8").split('id="telemetry"')[1].split("<h2")[0]
    assert "No GPU telemetry on this machine." in section and "<table" not in section
    write_json([timed_run("20261201-100000-aaaaaa", seed=1, other_cpu_cores=1.5)], export)
    assert _report([str(export), "-o", str(out)], capsys)[0] == 0
    section = out.read_text(encoding="utf-8").split('id="telemetry"')[1].split("<h2")[0]
    assert "No GPU telemetry on this machine." in section and "other CPU use (cores)" in section
    assert "SM clock" not in section and "GPU samples" not in section and "1.50" in section


def test_a_cancelled_runs_status_says_cancelled_once():
    """A cancelled run's kind and message are both ``cancelled``: its cell read ``cancelled: cancelled: cancelled``."""
    from tui.report.page import render_page

    cancelled = full_record("20261201-101012-cccccc", failed=False)
    cancelled.fail("cancelled", "cancelled")
    queued = full_record("20261201-101013-dddddd", failed=False)
    queued.fail("cancelled", "cancelled before it started")
    data = gather_report([cancelled, queued], sources=("x.json",), configuration=config_key)
    assert [row.error for row in data.rows] == [None, "cancelled before it started"]
    page = render_page(data, "<svg></svg>", {})
    assert "cancelled: cancelled" not in page.replace("cancelled: cancelled before", "")


def test_a_tunes_candidates_are_named_by_their_inductor_options_not_counted():
    """A tune's report named four candidates alike, "... 1 opt inductor fp32 cpu (tune: screening)": the count
    of inductor options could not tell freezing from cpp_wrapper."""
    from types import SimpleNamespace

    from tui.engine.options import RunOptions
    from tui.report.page import row_labels

    def row(options: dict, train: bool = False) -> SimpleNamespace:
        return SimpleNamespace(options=RunOptions(workload="mlp", device="cpu", inductor_options=options,
                                                  train=train), tune_stage="screening", source=None)

    labels = row_labels([row({}), row({"freezing": True}), row({"cpp_wrapper": True}, train=True),
                         row({"cpp_wrapper": True, "max_autotune": True})])
    assert len(set(labels)) == 4, labels
    assert labels[1].endswith(" freezing=True (tune: screening)") and " opt" not in labels[1]
    assert " train " in labels[2] and labels[2].endswith(" cpp_wrapper=True (tune: screening)")
    assert labels[3].endswith(" cpp_wrapper=True max_autotune=True (tune: screening)")
    # runs that share their options still count them: the label stays short
    (same,) = set(row_labels([row({"freezing": True}), row({"freezing": True})]))
    assert " 1 opt " in same


def _tune_report(tmp_path, capsys, settings: list[dict]) -> Path:
    """The report of one stage-2 tune run of the CNN per inductor-options dict in ``settings``: its path."""
    from fakes.timed import pointwise, timed_run

    records = []
    for i, options in enumerate(settings):
        record = timed_run(f"20261201-10000{i}-aaaaa{i}", pointwise(workload="cnn", params={"batch": 64},
                                                                    inductor_options=options), seed=i)
        record.tune_id, record.tune_stage = "20261201-100000-70e001", "stage 2"
        records.append(record)
    export, out = tmp_path / "runs.json", tmp_path / "report.html"
    write_json(records, export)
    code, err = _report([str(export), "-o", str(out)], capsys)
    assert code == 0, err
    return out


def test_a_tune_stage_is_never_broken_across_lines_in_the_page(tmp_path, capsys):
    """The table under the forest plot broke ``(tune: screening)`` after ``(tune:`` (chromium at 1280 columns):
    the stage's words are joined by a no-break space in every cell and heading that names a configuration."""
    out = _tune_report(tmp_path, capsys, [{}, {"freezing": True, "layout_optimization": False,
                                                "epilogue_fusion": False}])
    page = re.sub(r"<svg.*?</svg>", "", out.read_text(encoding="utf-8"), flags=re.DOTALL)  # the plots' own text
    cells = re.findall(r"<td>([^<]*\(tune:[^<]*)</td>", page)
    assert len(cells) == 2 and all(cell.endswith(" (tune:\u00a0stage\u00a02)") for cell in cells), cells
    # Each label thrice: the table's cell, the distribution's heading, the options' summary.
    assert "(tune: " not in page and page.count("(tune:\u00a0stage\u00a02)") == 2 * 3, page


def _label_lines(forest: str) -> list[tuple[float, str]]:
    """The forest plot's y-axis label lines (one ``<text>`` each, placed by ``translate``) as (y, text), top first."""
    found = re.findall(r'<text style="[^"]*" transform="translate\([\d.]+ ([\d.]+)\)">([^<]*)</text>', forest)
    return sorted((float(y), text) for y, text in found)


def test_a_tune_candidates_long_label_is_whole_in_the_forest_plot(tmp_path, capsys):
    """A candidate with a mode's options and three inductor options lost its end: ``max_autotune=True (…``."""
    settings = [{}, {"max_autotune": True, "layout_optimization": False, "epilogue_fusion": False,
                     "coordinate_descent_tuning": True}, {"freezing": True}]
    out = _tune_report(tmp_path, capsys, settings)
    forest = re.search(r'<svg id="forest-plot".*?</svg>', out.read_text(encoding="utf-8"), re.DOTALL)
    assert forest
    lines = _label_lines(forest.group(0))
    text = " ".join(line for _, line in lines)
    assert "…" not in text
    for word in ("max_autotune=True", "layout_optimization=False", "epilogue_fusion=False",
                 "coordinate_descent_tuning=True", "freezing=True"):
        assert word in text.split(), word
    # The stage in parentheses stays on one line, at the end of its label.
    assert text.count("(tune: stage 2)") == 3
    assert all(line.endswith("(tune: stage 2)") for _, line in lines if "(tune:" in line)
    # Each row is as tall as its label: no two lines overlap (9 px type), nor two rows' labels.
    gaps = [later - earlier for (earlier, _), (later, _) in zip(lines, lines[1:], strict=False)]
    assert min(gaps) >= 9, gaps


def test_a_compiled_output_that_failed_the_accuracy_check_says_fail_in_the_summary_table(tmp_path, capsys):
    """A wrong compiled output says fail, in bold, in the summary table beside its speedup, not only in the warnings."""
    wrong = cuda_run_record("20250101-000003-wrongs", eager_host_ms=0.11)
    wrong.accuracy = dataclasses.replace(wrong.accuracy, passed=False)
    runs, out = tmp_path / "runs.json", tmp_path / "report.html"
    write_json([cuda_run_record("20250101-000000-lbound"), wrong], runs)
    assert _report([str(runs), "-o", str(out)], capsys)[0] == 0
    page = out.read_text(encoding="utf-8")
    header = re.search(r"<tr>(<th[^>]*>.*?</th>)+</tr>", page).group(0)
    assert re.findall(r"<th[^>]*>([^<]*)</th>", header)[6] == "accuracy"
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr><td.*?</tr>", page)[:2]]
    assert [row[6] for row in cells] == [cells[0][6], '<strong class="verdict v-slower">fail</strong>']
    assert cells[0][6] in ("pass", "–")


def test_a_groups_processes_that_warn_alike_are_one_line_in_its_options(tmp_path, capsys):
    """Each process of a --repeat 3 row warning of its own spread was a line apiece in the report's options."""
    group = full_group()
    for number, member in enumerate(group, 1):
        member.warnings.append(f"eager time spread IQR/median {10 + 9 * number}% > 10%: a wide distribution")
    export = tmp_path / "runs.json"
    write_json(group, export)
    out = tmp_path / "report.html"
    code, _err = _report([str(export), "-o", str(out)], capsys)
    page = out.read_text(encoding="utf-8")
    assert code == 0 and "processes 1–3 of 3: eager time spread IQR/median 19–37% &gt; 10%" in page, page[-3000:]
    assert "process 2 of 3: eager time spread" not in page


@pytest.mark.parametrize(("slowest", "scale"), [(6.0, "log"), (1.2, "linear")])
def test_a_few_slow_calls_put_the_distribution_on_a_log_axis(slowest, scale, monkeypatch):
    """A new user's CPU rows drew boxes near 0.9 ms on a linear 0-6 ms axis stretched to one stall: a few pixels
    wide. A span of more than LOG_SPAN times goes on a log axis; a narrow one stays linear."""
    from matplotlib.axes import Axes

    from tui.engine.measure.stats import Stats
    from tui.engine.store.report_data import SideData
    from tui.report.plots import distribution_svg

    scales: list[str] = []
    real = Axes.set_xscale

    def recorded(ax, value, **kwargs):
        scales.append(value)
        return real(ax, value, **kwargs)

    monkeypatch.setattr(Axes, "set_xscale", recorded)

    def side(name: str, median: float) -> SideData:
        stats = Stats(n=200, median=median, mean=median, std=0.02, min=median * 0.9, max=slowest, p10=median * 0.95,
                      p90=median * 1.05, q1=median * 0.98, q3=median * 1.02, iqr=median * 0.04)
        return SideData(name, stats, None, (median * 0.9, median, median * 1.05, slowest))

    [row] = gather_report(_records()[:1], configuration=config_key).rows
    row = dataclasses.replace(row, eager=side("eager", 0.9), compiled=side("compiled", 0.95))
    assert distribution_svg(row) is not None
    assert scales == (["log"] if scale == "log" else []), scales
