"""Export to a directory that does not exist (issue 14 item 9) and the export toast's path (item 8).

``E`` to a missing directory asks before making it: no makes nothing, a link in the typed path is
refused; the notice counts what the files hold, shows their directory on a line of its own, whole or with
its folders folded, and their names: in a toast at 160x48, on the notice line at 80x24
(tests/app/test_app_notices.py).
"""

from __future__ import annotations


from textual.geometry import Region

from app_helpers import raised_notices, wait_until
from tui.app.components.dialogs import ConfirmScreen
from tui.app.exporting import exported_message
from tui.present.format import fold_path
from tui.engine.store.export import default_formats
from tui.engine.options import RunOptions


async def _one_run(app, pilot) -> None:
    (run,) = app.enqueue([RunOptions(iters=10, block_size=5)])
    await wait_until(pilot, lambda: run.finished and app.settled, what="the run")


async def _asked(app, pilot, target) -> str:
    """Export to ``target`` and wait for the app's question; its text."""
    app._export(str(target))
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
    return app.screen.question


async def _answered(app, pilot, key: str) -> None:
    await pilot.press(key)
    await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the answer")
    await pilot.pause()


async def test_no_makes_nothing_and_exports_nothing(make_app, tmp_path):
    app = make_app()
    target = tmp_path / "new" / "reports"
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await _one_run(app, pilot)
        await _asked(app, pilot, target)
        await _answered(app, pilot, "n")
        assert not (tmp_path / "new").exists()
        assert not any(n.title in ("Exported", "Export failed") for n in raised_notices(app))


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


async def test_a_typed_csv_that_is_a_file_of_the_users_is_replaced_only_after_a_yes(make_app, tmp_path):
    """E onto an existing ``notes.csv`` of the user's replaced it without a word; a compile-lab export there is
    replaced as before, without a question."""
    app = make_app()
    (tmp_path / "mine").mkdir()
    mine = tmp_path / "mine" / "notes.csv"
    mine.write_text("name,score\nada,3\n")
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await _one_run(app, pilot)
        question = await _asked(app, pilot, mine)
        assert question == f"{mine} exists and is not a compile-lab export. Replace it with the export?"
        await _answered(app, pilot, "n")
        assert mine.read_text() == "name,score\nada,3\n"
        assert sorted(p.name for p in mine.parent.iterdir()) == ["notes.csv"]  # nor anything beside it
        await _asked(app, pilot, mine)
        await pilot.press("y")
        await wait_until(pilot, lambda: any(n.title == "Exported" for n in raised_notices(app)), what="the export")
        assert mine.read_text().startswith("run_id,")
        app._export(str(mine))  # now compile-lab's own: replaced without a question
        await wait_until(pilot, lambda: len([n for n in raised_notices(app) if n.title == "Exported"]) == 2,
                         what="the second export")
        assert not isinstance(app.screen, ConfirmScreen)


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
        await wait_until(pilot, lambda: any(n.title == "Export failed" for n in raised_notices(app)), what="error")
        (error,) = [n for n in raised_notices(app) if n.title == "Export failed"]
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
        (note,) = [n for n in raised_notices(app) if n.title == "Exported"]
        _, directory, names = note.message.splitlines()
        assert directory.startswith(("/", "…/")) and names.split(", ")[0].endswith(".csv")
        # Every line of the text fits the toast as laid out, so the path is never broken across lines.
        width = toast.content_region.width
        assert all(len(line) <= width for line in note.message.splitlines()), (width, note.message)
        drawn = [line.strip("▌ ") for line in _lines(toast)]
        assert directory in drawn and names in drawn, drawn


def _lines(toast) -> list[str]:
    """The toast's text as drawn, line by line."""
    return [strip.text for strip in toast.render_lines(Region(0, 0, *toast.outer_size))]


def test_a_path_keeps_its_file_name_and_folds_its_folders():
    path = "/home/someone/.local/share/compile-lab/exports/compile-lab-20261203-101010.csv"
    assert fold_path(path, 200) == path
    assert fold_path(path, 60) == "…/share/compile-lab/exports/compile-lab-20261203-101010.csv"
    assert fold_path(path, 40) == "…/compile-lab-20261203-101010.csv"  # whole folders only
    assert fold_path(path, 10) == "…/compile-lab-20261203-101010.csv"  # the name is never cut
    stem = path.removesuffix(".csv")
    written = [stem + ".csv", stem + ".json", stem + "-raw.csv"]
    message = exported_message(2, 2, written, 1, 36)  # a toast's text at 160 columns
    assert message.splitlines() == ["2 run(s) -> 3 files (1 unfinished row(s) skipped) in:",
                                    "…/.local/share/compile-lab/exports",  # its last folders, whole
                                    "compile-lab-20261203-101010.csv, ….json, …-raw.csv"]  # the names they share: …
    # Room enough: every name whole. A repeated configuration is one CSV row: both counts, the explanation
    # dropped where the line has no room for it.
    assert exported_message(3, 2, written, 0, 200).splitlines()[::2] == [
        "3 run(s) -> 3 files (2 CSV row(s): one per configuration) in:", ", ".join(p.rsplit("/")[-1] for p in written)]
    assert exported_message(3, 2, written, 1, 57).splitlines()[0] == \
        "3 run(s) -> 3 files (2 CSV row(s); 1 unfinished row(s) skipped) in:"


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


async def test_at_80x24_the_export_notice_counts_what_the_files_hold_and_says_where_they_went(make_app):
    """Earlier sessions show a repeated configuration's processes as rows of their own; the CSV makes them one row.
    The notice counts the runs (the JSON's) and the CSV's rows, names the directory and every file, whole."""
    import csv
    import json

    from fakes.timed import timed_run
    from terminal_model import TerminalModel
    from tui import paths
    from tui.app.components.notice_line import NoticeLine
    from tui.engine.store.history import History

    history = History()
    for record in (timed_run("20261201-000001-aaaaaa", session_id="old", group_id="g", repeat=0, seed=1),
                   timed_run("20261201-000002-bbbbbb", session_id="old", group_id="g", repeat=1, seed=2),
                   timed_run("20261201-000003-cccccc", session_id="old", seed=3)):
        history.append(record)
    app = make_app()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await wait_until(pilot, lambda: app.table.row_count == 3, what="three history rows")
        terminal = TerminalModel(app)
        app.table.focus()
        await pilot.press("e")
        await wait_until(pilot, lambda: any(n.title == "Exported" for n in raised_notices(app)), what="the export")
        line = app.screen.query_one(NoticeLine)
        await wait_until(pilot, lambda: line.display and line.size.height == 3, what="the notice, three lines")
        await pilot.pause()
        shown = terminal.text(line.region).splitlines()
    written = sorted(paths.exports_dir().iterdir())
    assert len(written) == len(default_formats())
    csv_file = next(p for p in written if p.name.endswith(".csv") and not p.name.endswith("-raw.csv"))
    with csv_file.open(newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 2  # the group's two processes are one row
    json_file = next(p for p in written if p.suffix == ".json")
    assert len(json.loads(json_file.read_text())["runs"]) == 3
    assert shown[0].strip() == "Exported: 3 run(s) -> 3 files (2 CSV row(s): one per configuration) in:", shown
    assert shown[1].strip() == fold_path(str(paths.exports_dir()), 78), shown  # folded from the left to fit
    assert str(csv_file.parent).endswith(shown[1].strip().removeprefix("…"))
    stem = csv_file.name.removesuffix(".csv")
    names = [p.name for p in sorted(written, key=lambda p: [f.suffix for f in default_formats()].index(
        p.name[len(stem):]))]
    assert shown[2].strip() == ", ".join([names[0], *(f"…{n[len(stem):]}" for n in names[1:])]), shown
    assert all(len(text.rstrip()) <= 80 for text in shown)
