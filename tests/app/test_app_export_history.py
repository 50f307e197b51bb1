"""Export (default place, a typed path, a refused one) and the history across app instances."""

from __future__ import annotations

import csv
import json
import threading
from pathlib import Path

from textual.widgets import Input

from app_helpers import notifications, raised_notices, wait_until
from tui import paths
from tui.app.components.dialogs import ConfirmScreen, ExportScreen
from tui.app.components.picker import Picker
from tui.app.messages import RunFinished, RunsExported
from tui.engine.store.export import default_formats
from tui.engine.store.history import History
from tui.engine.options import RunOptions
from tui.engine.store.columns import CSV_COLUMNS, RAW_COLUMNS


async def _two_runs(app, pilot) -> list[str]:
    picker = app.query_one(Picker)
    picker.query_one("#iters", Input).value = "40"  # 4 blocks of 10 per side: enough pairs for an interval
    await pilot.pause()
    app.action_run()
    picker.query_one("#workload").value = "matmul"
    await pilot.pause()
    app.action_run()
    await wait_until(pilot, lambda: app.table.row_count == 2 and app.settled, what="two runs")
    return list(app.table.run_ids)


async def test_export_writes_csv_raw_csv_and_json_and_says_where(make_app):
    app = make_app()
    exported: list[RunsExported] = []
    hook = lambda m: exported.append(m) if isinstance(m, RunsExported) else None  # noqa: E731
    async with app.run_test(size=(160, 48), notifications=True, message_hook=hook) as pilot:
        run_ids = await _two_runs(app, pilot)
        app.table.focus()
        await pilot.press("e")
        await wait_until(pilot, lambda: bool(exported), what="export")
        await pilot.pause()
        files = exported[0].paths
        assert all(Path(p).parent == paths.exports_dir() for p in files)
        csv_path, json_path, raw_path = (Path(p) for p in files[:3])  # EXPORT_FORMATS order
        with csv_path.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert tuple(rows[0].keys()) == CSV_COLUMNS
        assert [r["run_id"] for r in rows] == run_ids
        assert [r["workload"] for r in rows] == ["pointwise", "matmul"]
        assert all(r["status"] == "done" for r in rows)
        assert float(rows[0]["eager_median_ms"]) == 2.02 and float(rows[0]["compiled_median_ms"]) == 1.02
        assert rows[0]["significant"] == "true"
        with raw_path.open(newline="") as handle:
            raw = list(csv.DictReader(handle))
        assert tuple(raw[0].keys()) == RAW_COLUMNS
        measured = [r for r in raw if r["stage"] == "measure"]
        assert len(measured) == 2 * 2 * 40  # two runs x two sides x 40 iterations
        data = json.loads(json_path.read_text())
        assert [run["run_id"] for run in data["runs"]] == run_ids
        # The toast names the place: the directory on a line of its own, whole or shortened from the left, and
        # the files' names (the first whole).
        messages = [m for m in notifications(app) if m.startswith("2 run(s) -> 3 files in:")]
        assert len(messages) == 1, notifications(app)
        directory, names = messages[0].splitlines()[1:]
        folder = str(csv_path.parent)
        assert directory == folder or (directory.startswith("…") and folder.endswith(directory[1:]))
        assert names.startswith(csv_path.name + ", ")


async def test_export_to_a_typed_directory(make_app, tmp_path):
    app = make_app()
    target = tmp_path / "my-report"
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await _two_runs(app, pilot)
        app.table.focus()
        await pilot.press("E")
        await wait_until(pilot, lambda: isinstance(app.screen, ExportScreen), what="export dialog")
        app.screen.query_one("#export-path", Input).value = str(target)
        await pilot.press("enter")
        # It does not exist: the app asks first, and makes it on a yes.
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        assert app.screen.question == f"{target} does not exist. Make it and export there?"
        assert not target.exists()
        await pilot.press("y")
        count = len(default_formats())
        await wait_until(pilot, lambda: target.exists() and len(list(target.glob("*"))) == count, what="the files")
        stem = next(p.name for p in target.iterdir() if p.name.endswith("-raw.csv")).removesuffix("-raw.csv")
        assert sorted(p.name for p in target.iterdir()) == sorted(stem + f.suffix for f in default_formats())
        await wait_until(pilot, lambda: any(n.title == "Exported" for n in raised_notices(app)), what="toast")
        (note,) = [n for n in raised_notices(app) if n.title == "Exported"]
        csv_path = next(p for p in target.iterdir() if p.name.endswith(".csv") and not p.name.endswith("-raw.csv"))
        directory, names = note.message.splitlines()[1:]
        assert str(csv_path.parent).endswith(directory.lstrip("…")) and names.startswith(csv_path.name)


async def test_export_to_a_typed_csv_path(make_app, tmp_path):
    app = make_app()
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await _two_runs(app, pilot)
        app._export(str(tmp_path / "report.csv"))
        last = tmp_path / ("report" + default_formats()[-1].suffix)  # the formats are written in order
        await wait_until(pilot, last.exists, what="the last file")
        assert (tmp_path / "report.json").read_text().startswith('{"schema"')
        assert (tmp_path / "report.csv").read_text().startswith("run_id,")
        assert (tmp_path / "report-raw.csv").read_text().startswith("run_id,side,")


async def test_an_export_that_cannot_be_written_is_one_error_line(make_app, tmp_path):
    app = make_app()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await _two_runs(app, pilot)
        app._export(str(blocker / "report.csv"))
        await wait_until(pilot, lambda: any(n.severity == "error" for n in raised_notices(app)), what="error toast")
        error = next(n for n in raised_notices(app) if n.severity == "error")
        assert "\n" not in error.message and str(blocker) in error.message
        assert error.title == "Export failed"


async def test_export_with_nothing_ended_says_so(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        app.action_export()
        await pilot.pause()
        assert "Nothing to export: no run has ended yet." in notifications(app)


async def test_history_reload_in_a_second_instance_and_toggle(make_app):
    first = make_app()
    async with first.run_test(size=(160, 48)) as pilot:
        run_ids = await _two_runs(first, pilot)
    second = make_app()
    async with second.run_test(size=(160, 48), notifications=True) as pilot:
        await wait_until(pilot, lambda: second.table.row_count == 2, what="history rows")
        assert second.table.run_ids == run_ids
        assert second.table.cell_text(run_ids[0], "status") == "↺ faster"  # a done run shows its verdict
        assert float(second.table.cell_text(run_ids[0], "eager_ms")) == 2.02
        assert second.table.cell_text(run_ids[0], "speedup").startswith("1.98× [")
        # New runs go below the history; h hides and shows the old ones.
        second.action_run()
        await wait_until(pilot, lambda: second.table.row_count == 3 and second.settled, what="new run")
        second.table.focus()
        await pilot.press("h")
        await pilot.pause()
        assert second.table.row_count == 1 and second.table.run_ids[0] not in run_ids
        await pilot.press("h")
        await pilot.pause()
        assert second.table.run_ids[:2] == run_ids and second.table.row_count == 3
        # History rows are exportable, samples read back from the per-run files.
        second._export(None)
        await wait_until(pilot, lambda: any(m.startswith("3 run(s) -> ") for m in notifications(second)), what="export")
    third = make_app()
    async with third.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: third.table.row_count == 3, what="3 history rows")


async def test_a_damaged_history_line_is_a_warning_not_a_crash(make_app):
    first = make_app()
    async with first.run_test(size=(160, 48)) as pilot:
        await _two_runs(first, pilot)
    with paths.history_file().open("a") as handle:
        handle.write("{this is not json\n")
    second = make_app()
    async with second.run_test(size=(160, 48), notifications=True) as pilot:
        await wait_until(pilot, lambda: second.table.row_count == 2, what="history rows")
        await wait_until(pilot, lambda: any(n.title == "History" for n in raised_notices(second)), what="warning")
        warning = next(n for n in raised_notices(second) if n.title == "History")
        assert warning.severity == "warning" and "not valid JSON" in warning.message


class _FirstAppendWaits(History):
    """A history whose first append waits until ``gate`` is set (a slow disk, or a slow summary)."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__()
        self.gate = gate
        self.waits: list[bool] = []
        self._calls = 0
        self._lock = threading.Lock()

    def append(self, record) -> None:
        with self._lock:  # appends may come from several threads at once: that is the bug this catches
            first = self._calls == 0
            self._calls += 1
        if first:
            self.waits.append(self.gate.wait(timeout=30))
        super().append(record)


async def test_a_fast_sweep_reaches_the_history_in_run_order(make_app):
    """Runs that end while an earlier one is still being saved are written after it, not before."""
    gate = threading.Event()
    history = _FirstAppendWaits(gate)
    app = make_app(history=history, load_history=False)
    options = [
        RunOptions(workload="pointwise", params={"n": 64 + i}, iters=10, block_size=5).validated() for i in range(6)
    ]
    finished: list[str] = []

    def hook(message) -> None:
        if isinstance(message, RunFinished):
            finished.append(message.record.run_id)
            if len(finished) == len(options):
                gate.set()  # the first run's append goes on only once every run has ended

    async with app.run_test(size=(160, 48), message_hook=hook) as pilot:
        queued = [record.run_id for record in app.enqueue(options, origin="sweep")]
        await wait_until(pilot, lambda: len(finished) == len(options) and app.settled, what="six runs saved")
    assert history.waits == [True]  # released by the last run ending, not by the timeout
    assert finished == queued
    lines = paths.history_file().read_text().splitlines()
    assert [json.loads(line)["run_id"] for line in lines] == queued


async def _error_toast(app, pilot) -> str:
    await wait_until(pilot, lambda: any(n.severity == "error" for n in raised_notices(app)), what="error toast")
    error = next(n for n in raised_notices(app) if n.severity == "error")
    assert error.title == "Export failed" and "\n" not in error.message
    return error.message


async def test_an_export_is_written_whole_or_not_at_all(make_app, tmp_path):
    """The raw CSV's name is a link: nothing is written, not even the CSV before it."""
    app = make_app()
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep me")
    (tmp_path / "report-raw.csv").symlink_to(elsewhere)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await _two_runs(app, pilot)
        app._export(str(tmp_path / "report.csv"))
        message = await _error_toast(app, pilot)
    assert "report-raw.csv is a symbolic link" in message
    assert not (tmp_path / "report.csv").exists() and not (tmp_path / "report.json").exists()
    assert (tmp_path / "report-raw.csv").is_symlink() and elsewhere.read_text() == "keep me"


async def test_an_export_directory_inside_compile_labs_data_is_refused_before_it_is_made(make_app):
    from tui import paths

    app = make_app()
    target = paths.runs_dir() / "my-export"
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await _two_runs(app, pilot)
        app._export(str(target))
        message = await _error_toast(app, pilot)
    assert str(target) in message and "compile-lab" in message
    assert not target.exists()


async def test_cancelled_runs_alone_leave_an_existing_export_alone(make_app, tmp_path):
    app = make_app(delay=30.0)
    existing = tmp_path / "report.csv"
    existing.write_text("an earlier export\n")
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        (record,) = app.enqueue([RunOptions(iters=20)])
        await wait_until(pilot, lambda: record.status not in ("queued", "starting"), what="the run started")
        app.action_cancel_all()
        await wait_until(pilot, lambda: record.finished and app.settled, what="cancelled")
        assert record.status == "cancelled"
        app._export(str(existing))
        await pilot.pause()
        assert any(m.startswith("Nothing to export: no run has finished") for m in notifications(app))
    assert existing.read_text() == "an earlier export\n"


async def test_a_stored_run_whose_samples_file_is_gone_is_exported_without_them_and_named(make_app):
    """One stored run's samples file deleted by hand: ``e`` still writes every file, that run with its stored summary
    and no samples, and a warning names it; one run's lost file does not stop the others' export."""
    first = make_app()
    async with first.run_test(size=(160, 48)) as pilot:
        run_ids = await _two_runs(first, pilot)
    [gone] = [record for record in History(paths.history_file()).load()[0] if record.run_id == run_ids[0]]
    History(paths.history_file()).samples_path(gone).unlink()
    second = make_app()
    exported: list[RunsExported] = []
    hook = lambda m: exported.append(m) if isinstance(m, RunsExported) else None  # noqa: E731
    async with second.run_test(size=(160, 48), notifications=True, message_hook=hook) as pilot:
        await wait_until(pilot, lambda: second.table.row_count == 2, what="history rows")
        second._export(None)
        await wait_until(pilot, lambda: bool(exported), what="export")
        await wait_until(pilot, lambda: any(run_ids[0] in m for m in notifications(second)), what="the warning")
        csv_path, json_path, raw_path = (Path(p) for p in exported[0].paths)
        runs = {run["run_id"]: run for run in json.loads(json_path.read_text())["runs"]}
        assert runs[run_ids[0]]["samples"] is None and runs[run_ids[1]]["samples"] is not None
        assert runs[run_ids[0]]["summary"]["speedup"] > 1  # its stored summary
        with raw_path.open(newline="") as handle:
            assert {row["run_id"] for row in csv.DictReader(handle)} == {run_ids[1]}
        with csv_path.open(newline="") as handle:
            assert [row["run_id"] for row in csv.DictReader(handle)] == run_ids
        [warning] = [m for m in notifications(second) if run_ids[0] in m]
        assert "No such file" in warning and "exported without its per-iteration samples" in warning
