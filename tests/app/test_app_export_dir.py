"""Export to a directory that does not exist (issue 14 item 9) and the export toast's path (item 8).

``E`` to a missing directory asks before making it: no makes nothing, a link in the typed path is
refused; the notice shows the CSV's path on one line, whole or with its folders folded: in a toast at
160x48, on the notice line at 80x24 (tests/app/test_app_notices.py).
"""

from __future__ import annotations


from textual.geometry import Region

from app_helpers import wait_until
from tui.app.components.dialogs import ConfirmScreen
from tui.app.exporting import exported_message
from tui.present.format import fold_path
from tui.engine.store.export import default_formats
from tui.engine.options import RunOptions


async def _one_run(app, pilot) -> None:
    (run,) = app.enqueue([RunOptions(iters=10, block_size=5)])
    await wait_until(pilot, lambda: run.finished and app.settled, what="the run")


async def test_no_makes_nothing_and_exports_nothing(make_app, tmp_path):
    app = make_app()
    target = tmp_path / "new" / "reports"
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await _one_run(app, pilot)
        app._export(str(target))
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the answer")
        await pilot.pause()
        assert not (tmp_path / "new").exists()
        assert not any(n.title in ("Exported", "Export failed") for n in app._notifications)


async def test_a_typed_csv_path_in_a_missing_directory_is_offered_too(make_app, tmp_path):
    app = make_app()
    target = tmp_path / "out" / "report.csv"
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await _one_run(app, pilot)
        app._export(str(target))
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        assert app.screen.question == f"{tmp_path / 'out'} does not exist. Make it and export there?"
        await pilot.press("y")
        names = sorted("report" + f.suffix for f in default_formats())
        # Every file, not the JSON alone: the formats are written one after another (each whole once it exists).
        await wait_until(pilot, lambda: sorted(p.name for p in (tmp_path / "out").iterdir()) == names,
                         what="the export")


async def test_a_link_in_the_typed_path_is_refused_after_the_yes_and_nothing_is_made_behind_it(make_app, tmp_path):
    app = make_app()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await _one_run(app, pilot)
        app._export(str(tmp_path / "link" / "reports"))
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
        await pilot.press("y")
        await wait_until(pilot, lambda: any(n.title == "Export failed" for n in app._notifications), what="error")
        (error,) = [n for n in app._notifications if n.title == "Export failed"]
    assert error.message.startswith(f"{tmp_path / 'link' / 'reports'}: {tmp_path / 'link'} is a symbolic link")
    assert "\n" not in error.message and list(elsewhere.iterdir()) == []


async def test_the_toast_shows_the_path_on_one_line(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await _one_run(app, pilot)
        app.action_export()
        await wait_until(pilot, lambda: bool(app.screen.query("Toast")), what="the toast")
        await pilot.pause()
        (toast,) = app.screen.query("Toast")
        (note,) = [n for n in app._notifications if n.title == "Exported"]
        csv_path = note.message.splitlines()[-1]
        assert csv_path.endswith(".csv") and csv_path.startswith(("/", "…/"))
        # Every line of the text fits the toast as laid out, so the path is never broken across lines.
        width = toast.content_region.width
        assert all(len(line) <= width for line in note.message.splitlines()), (width, note.message)
        assert any(line.strip("▌ ") == csv_path for line in _lines(toast)), _lines(toast)


def _lines(toast) -> list[str]:
    """The toast's text as drawn, line by line."""
    return [strip.text for strip in toast.render_lines(Region(0, 0, *toast.outer_size))]


def test_a_path_keeps_its_file_name_and_folds_its_folders():
    path = "/home/someone/.local/share/compile-lab/exports/compile-lab-20261203-101010.csv"
    assert fold_path(path, 200) == path
    assert fold_path(path, 60) == "…/share/compile-lab/exports/compile-lab-20261203-101010.csv"
    assert fold_path(path, 40) == "…/compile-lab-20261203-101010.csv"  # whole folders only
    assert fold_path(path, 10) == "…/compile-lab-20261203-101010.csv"  # the name is never cut
    message = exported_message(2, path, 1, 36)  # a toast's text at 160 columns
    more = len(default_formats()) - 1  # 2: the JSON and the raw CSV
    assert message.splitlines() == [f"2 run(s) -> CSV and {more} more file(s) (1 unfinished row(s) skipped):",
                                    "…/compile-lab-20261203-101010.csv"]


async def test_at_80x24_the_export_prompt_is_whole(make_app):
    """``E``'s prompt wraps: one line cut it at 80 columns ("... to a directory o")."""
    from terminal_model import TerminalModel
    from tui.app.components.dialogs import ExportScreen

    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        terminal = TerminalModel(app)
        app.table.focus()
        await pilot.press("E")
        await wait_until(pilot, lambda: isinstance(app.screen, ExportScreen), what="the prompt")
        await pilot.pause()
        shown = " ".join(terminal.text(Region(0, 0, *app.size)).replace("█", " ").split())  # the frame out
        assert "to a directory or a .csv path:" in shown, shown
