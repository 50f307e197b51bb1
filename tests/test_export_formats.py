"""The export formats' registry (tui.engine.store.export.EXPORT_FORMATS): the CLI's flags, the app's dialog,
its files and its notice all read it, so a format added there alone is offered and written everywhere."""

from __future__ import annotations

import argparse
import dataclasses
import io
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App
from textual.widgets import Static

from tui.app.components.dialogs import ExportScreen
from tui.app.controller import LabController
from tui.app.export_target import export_paths, exported_message
from tui.cli.outputs import export_flags
from tui.cli.parser import build_parser
from tui.cli.run import _export
from tui.engine.store import export
from tui.engine.store.export import EXPORT_FORMATS, ExportFormat, default_export_paths, default_formats
from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.store.results import RunRecord


def _record() -> RunRecord:
    record = RunRecord.new(RunOptions(workload="matmul", params={"n": 64}).validated())
    record.apply(make_event("started", 0, env={"torch": "2.13.0", "device": "cpu"}))
    record.apply(make_event("compiled", 1, compile_s=1.5, diagnostics={"graph_breaks": 0}))
    for side, ms in (("eager", [2.0, 2.5, 1.5]), ("compiled", [1.0, 1.25, 0.75])):
        record.apply(make_event("block", 2, side=side, stage="measure", index=0, clock="perf_counter", ms=ms,
                                host_ms_per_call=1.0))
    record.apply(make_event("measured", 3, warnings=[]))
    record.apply(make_event("finished", 3))
    return record


def _write_ids(records, path):
    """A demo writer: the run ids, one a line."""
    target = export.check_target(path)
    target.write_text("".join(f"{r.run_id}\n" for r in records))
    return target


IDS = ExportFormat("demo_ids", "-ids.txt", "run ids", "the run ids, one a line", _write_ids)


@pytest.fixture(params=["as shipped", "with a format added", "with a CLI-only format added"])
def formats(request, monkeypatch):
    """The registry as shipped, and with a format added to it alone (one the app writes too, or the CLI's only)."""
    added = {"with a format added": IDS, "with a CLI-only format added": dataclasses.replace(IDS, default=False)}
    if request.param in added:
        monkeypatch.setattr(export, "EXPORT_FORMATS", (*EXPORT_FORMATS, added[request.param]))
    return export.EXPORT_FORMATS


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_the_cli_offers_every_format_as_an_output_flag(formats, command, tmp_path):
    for fmt in formats:
        target = str(tmp_path / f"out{fmt.suffix}")
        args = build_parser().parse_args([command, fmt.flag, target])
        assert getattr(args, fmt.name) == target
    assert [flag for flag, _ in export_flags()] == [fmt.flag for fmt in formats]
    help_text = build_parser()._subparsers._group_actions[0].choices[command].format_help()  # type: ignore[union-attr]
    assert all(fmt.flag in help_text for fmt in formats)


def test_the_cli_writes_every_format_it_is_given(formats, tmp_path):
    args = argparse.Namespace(quiet=False, **{fmt.name: str(tmp_path / f"out{fmt.suffix}") for fmt in formats})
    err = Console(file=io.StringIO(), width=200)
    assert _export([_record()], args, err) is False
    for fmt in formats:
        assert (tmp_path / f"out{fmt.suffix}").stat().st_size > 0
        assert f"wrote {tmp_path / f'out{fmt.suffix}'}" in err.file.getvalue()  # type: ignore[attr-defined]


def test_the_apps_export_writes_every_default_format(formats, compile_lab_home, tmp_path):
    formats = [fmt for fmt in formats if fmt.default]
    record = _record()
    written = LabController.write_export([record], str(tmp_path / "report.csv"))
    assert [p.name for p in written] == ["report" + fmt.suffix for fmt in formats]
    assert all(p.stat().st_size > 0 for p in written)
    defaults = LabController.write_export([record], None)
    assert len(defaults) == len(formats) and all(p.is_file() for p in defaults)
    assert all(p.name.endswith(fmt.suffix) for p, fmt in zip(defaults, formats, strict=True))
    message = exported_message(1, 1, [str(p) for p in written], 0, 200)
    assert message.splitlines() == [f"1 run(s) -> {len(formats)} files in:", str(tmp_path),
                                    ", ".join(p.name for p in written)]


def test_a_format_not_written_by_default_is_the_clis_only(monkeypatch, compile_lab_home, tmp_path):
    monkeypatch.setattr(export, "EXPORT_FORMATS", (*EXPORT_FORMATS, dataclasses.replace(IDS, default=False)))
    assert "demo_ids" not in default_export_paths()
    assert "demo_ids" not in export_paths(str(tmp_path), default_export_paths)
    assert build_parser().parse_args(["run", "--demo-ids", "x.txt"]).demo_ids == "x.txt"


async def test_the_apps_export_dialog_names_every_default_format(formats):
    class Host(App[None]):
        def on_mount(self) -> None:
            self.push_screen(ExportScreen(str(Path.home())))

    app = Host()
    async with app.run_test() as pilot:
        await pilot.pause()
        prompt = str(app.screen.query_one("#export-question", Static).content)
    assert all((fmt.label in prompt) == fmt.default for fmt in formats), prompt


def test_beside_a_typed_csv_only_compile_labs_own_exports_are_replaced(tmp_path, compile_lab_home):
    """The user names ``report.csv``; a ``report.json`` of theirs beside it is not the app's to replace."""
    from tui.engine.atomic import ExportTargetError

    theirs = tmp_path / "report.json"
    theirs.write_text('{"schema": 1, "notes": "mine"}\n')  # JSON of the user's, even one with a "schema" key
    with pytest.raises(ExportTargetError, match=r"report\.json is a file beside report\.csv that is not a "
                                                r"compile-lab JSON export, left alone"):
        export_paths(str(tmp_path / "report.csv"), default_export_paths)
    assert theirs.read_text() == '{"schema": 1, "notes": "mine"}\n'
    records = [_record()]
    for fmt in default_formats():  # an export of the app's there before: a re-export replaces it
        fmt.writer(records, tmp_path / f"report{fmt.suffix}")
    assert set(export_paths(str(tmp_path / "report.csv"), default_export_paths).values()) == {
        tmp_path / f"report{fmt.suffix}" for fmt in default_formats()}


def test_two_exports_to_one_typed_directory_in_one_second_get_names_of_their_own(tmp_path, compile_lab_home):
    first = export_paths(str(tmp_path), default_export_paths)
    for fmt in default_formats():
        first[fmt.name].write_text(fmt.head)
    second = export_paths(str(tmp_path), default_export_paths)
    assert not set(first.values()) & set(second.values())
    assert all(path.parent == tmp_path for path in second.values())
