"""The column chooser (``c``, the palette's "Columns"), the choice kept in the config, and bad settings of it."""

from __future__ import annotations

import json

from textual.widgets import SelectionList

from app_helpers import notifications, wait_until
from test_snapshots_table import SWEEP, sweep_record
from tui import paths
from tui.app.components.columns_dialog import ColumnsScreen
from tui.app.palette import lab_commands
from tui.engine.store.results import RunRecord


async def _open_chooser(pilot) -> SelectionList:
    app = pilot.app
    app.table.focus()
    await pilot.press("c")
    await wait_until(pilot, lambda: isinstance(app.screen, ColumnsScreen) and bool(app.screen.query("#columns-list")),
                     what="the column chooser")
    return app.screen.query_one("#columns-list", SelectionList)


async def test_the_chooser_hides_and_shows_columns_and_the_next_start_keeps_the_choice(make_app):
    first = make_app(load_history=False)
    async with first.run_test(size=(120, 40)) as pilot:
        for index, (mode, dynamic) in enumerate(SWEEP):
            first.inject_record(sweep_record(index, mode, dynamic))
        await wait_until(pilot, lambda: first.table.row_count == len(SWEEP), what="rows")
        assert first.table.shown_columns[:4] == ("status", "speedup", "mode", "dynamic")
        assert "Columns" in [command.title for command in lab_commands(first)]
        listed = await _open_chooser(pilot)
        assert listed.get_option("status").disabled  # the one column that always shows
        listed.deselect("eager_ms")
        listed.deselect("dynamic")
        listed.select("verdict")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: not isinstance(first.screen, ColumnsScreen), what="the chooser closed")
        shown = first.table.shown_columns
        assert "eager_ms" not in shown and "dynamic" not in shown and "verdict" in shown
        assert shown[:3] == ("status", "speedup", "mode")
        assert first.table.cell_text("20250101-000000-swp000", "verdict") == "faster"
        assert "dyn=" not in first.table.border_title  # hidden: not said in the title either
        expected = {"eager_ms": False, "dynamic": False, "verdict": True}
        assert first.config.columns == expected
        assert json.loads(paths.config_file().read_text())["columns"] == expected  # kept at once
    second = make_app(load_history=False)
    async with second.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert second.table.column_choice["eager_ms"] is False and second.table.column_choice["verdict"] is True
        assert "eager_ms" not in second.table.shown_columns and "verdict" in second.table.shown_columns
        listed = await _open_chooser(pilot)
        await pilot.press("d")  # the defaults, applied
        await wait_until(pilot, lambda: "verdict" not in listed.selected, what="defaults checked")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: "eager_ms" in second.table.shown_columns, what="defaults applied")
        assert second.config.columns == {} and "verdict" not in second.table.shown_columns


async def test_escape_leaves_the_columns_as_they_were(make_app):
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        before = app.table.shown_columns
        listed = await _open_chooser(pilot)
        listed.deselect("speedup")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ColumnsScreen), what="the chooser closed")
        assert app.table.shown_columns == before and app.config.columns == {}


async def test_bad_column_settings_warn_one_line_each_and_the_app_starts(make_app):
    path = paths.config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"columns": {"status": False, "nope": True, "peak_mem": "no", "verdict": True}}))
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: bool(notifications(app)), what="the config warning")
        [warning] = notifications(app)
        lines = warning.splitlines()
        assert len(lines) == 3 and all(line.startswith(f"config {path}: columns.") for line in lines)
        assert [line.split(": ")[1] for line in lines] == ["columns.status", "columns.nope", "columns.peak_mem"]
        assert app.table.column_choice["verdict"] is True  # the good entry is kept
        assert app.table.shown_columns[0] == "status" and "peak_mem" in app.table.shown_columns


def _record(index: int, workload: str, params: dict, mode: str = "default", fullgraph: bool = False):
    """A done CPU run (the snapshot tests' blocks), of any workload and options."""
    import dataclasses

    record = sweep_record(index, "default", None)
    record.options = dataclasses.replace(record.options, workload=workload, params=params, mode=mode,
                                         fullgraph=fullgraph, dynamic=None)
    return record


async def test_at_80x24_every_row_of_a_sweep_after_a_run_shows_its_mode_and_fullgraph(make_app):
    """The run of one workload, then a sweep of another over modes x fullgraph: on screen, each row says what
    it is (the tester saw four identical "mlp batch=64 width=256 depth=3" rows, mode and fg off screen)."""
    app = make_app(load_history=False)
    mlp = {"batch": 64, "width": 256, "depth": 3}
    async with app.run_test(size=(80, 24)) as pilot:
        records = [_record(0, "pointwise", {"n": 512})] + [
            _record(1 + 2 * m + f, "mlp", mlp, mode, bool(f)) for m, mode in enumerate(("default", "reduce-overhead"))
            for f in (0, 1)
        ]
        for record in records:
            app.inject_record(record)
        await wait_until(pilot, lambda: app.table.row_count == 5, what="rows")
        narrow = app.table.scrollable_content_region.width
        app.table.focus()
        await pilot.press("b")  # the sidebar hidden: the table widens
        await wait_until(pilot, lambda: app.table.scrollable_content_region.width > narrow, what="a wider table")
        await wait_until(pilot, lambda: app.table.shown_columns[:3] == ("status", "speedup", "config"),
                         what="the config column")
        ends = sum(column.get_render_width(app.table) for column in list(app.table.columns.values())[:3])
        assert ends <= app.table.scrollable_content_region.width  # status, speedup and config all on screen
        width = list(app.table.columns.values())[2].width
        seen = [app.table.cell_text(record.run_id, "config")[:width] for record in records]
        # A field at its default goes unsaid (the default mode, no fullgraph), as in a label: what is said differs.
        starts = ["pointwise n=512", "mlp batch=64", "mlp fullgraph batch=64", "mlp reduce-overhead batch=64",
                  "mlp reduce-overhead fullgraph"]
        assert all(text.startswith(start) for text, start in zip(seen, starts, strict=True)), seen
        assert "off screen" not in str(app.table.border_subtitle)
        app.table.move_cursor(row=1)
        await pilot.press("m")  # a baseline: its mark and every row's change against it on screen
        await wait_until(pilot, lambda: app.table.shown_columns[:4] == ("status", "speedup", "vs_base", "config"),
                         what="the vs base column after the speedup")
        ends = sum(column.get_render_width(app.table) for column in list(app.table.columns.values())[:3])
        assert ends <= app.table.scrollable_content_region.width
        assert app.table.cell_text(records[1].run_id, "vs_base") == "◆ baseline"
        assert app.table.cell_text(records[2].run_id, "vs_base") not in ("", "–")
        width = list(app.table.columns.values())[3].width
        await pilot.press("b")  # the sidebar back: the config cell narrows with the table
        await wait_until(pilot, lambda: list(app.table.columns.values())[3].width < width, what="a narrower cell")


TUNE_CANDIDATES = [{}, {"mode": "max-autotune-no-cudagraphs"}, {"fullgraph": True}, {"dynamic": False},
                   *({"inductor_options": options} for options in (
                       {"freezing": True}, {"cpp_wrapper": True}, {"cpp.simdlen": 256}, {"aggressive_fusion": True},
                       {"cpp_wrapper": True, "freezing": True}))]
"""A CPU tune's candidates: the default compile, a mode, each axis, and inductor options (one, then two combined)."""


async def test_at_80x24_a_tunes_candidates_that_differ_by_an_inductor_option_read_apart(make_app):
    """A tune's rows read alike at 80 columns: four candidates of one inductor option each showed ``1 opt``, and the
    config cell said ``default no-fullgraph dyn=auto`` before the options, which the pane's edge then cut."""
    import dataclasses

    from test_app_edge_cut import _column_on_screen

    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        records = []
        for index, change in enumerate(TUNE_CANDIDATES):
            record = sweep_record(index, "default", None)
            record.options = dataclasses.replace(record.options, **change)
            records.append(record)
            app.inject_record(record)
        await wait_until(pilot, lambda: app.table.row_count == len(records), what="rows")
        app.table.focus()
        narrow = app.table.scrollable_content_region.width
        await pilot.press("b")  # the sidebar hidden, as queueing a tune by its key does below 120 columns
        await wait_until(pilot, lambda: app.table.scrollable_content_region.width > narrow, what="a wider table")
        await pilot.pause()
        table = app.table
        fixed = sum(column.get_render_width(table) for column in table.ordered_columns[:table.fixed_columns])
        lines = [table.render_line(table.header_height + table.get_row_index(r.run_id)).text for r in records]
        options = [line[fixed:].strip() for line in lines]  # what the row shows right of status and speedup
        assert len(set(options)) == len(records), options
        assert table.shown_columns[:3] == ("status", "speedup", "config")
        shown = [_column_on_screen(table, record.run_id, "config") for record in records]
        assert not any(text.endswith("…") for text in shown[:-1]), shown  # whole on screen but the combination
        assert shown[4] == "dyn=auto freezing=True" and shown[0] == "dyn=auto"
        assert shown[-1].startswith("dyn=auto cpp_wrapper=True fr")
        assert app.table.cell_text(records[8].run_id, "flags") == "cpp_wrapper=True freezing=True"


async def test_two_files_of_one_name_are_told_apart_by_their_folders(make_app):
    """``/tmp/a/model.py`` and ``/tmp/b/model.py`` both read ``model.py``: one workload, said once in the title, for
    two files. A file that shares a row's name renames both rows, a previous run's row included."""
    import dataclasses

    from tui.app.components.result_cells import history_cells

    def file_record(index: int, folder: str) -> RunRecord:
        options = dataclasses.replace(sweep_record(index, "default", None).options, workload=f"/tmp/{folder}/model.py",
                                      params={})  # fmt: skip
        return dataclasses.replace(sweep_record(index, "default", None), options=options)

    app = make_app(load_history=False)
    async with app.run_test(size=(160, 40)) as pilot:
        first, second, earlier = file_record(0, "a"), file_record(1, "b"), file_record(2, "old/a")
        app.inject_record(first)
        await wait_until(pilot, lambda: app.table.row_count == 1, what="a row")
        assert app.table.cell_text(first.run_id, "workload") == "model.py"
        app.inject_record(second)
        await wait_until(pilot, lambda: app.table.row_count == 2, what="two rows")
        names = {run.run_id: app.table.cell_text(run.run_id, "workload") for run in (first, second)}
        assert names == {first.run_id: "a/model.py", second.run_id: "b/model.py"}
        assert "workload" in app.table.shown_columns and "model.py" not in app.table.border_title
        app.main_screen.add_history_rows([(earlier.run_id, history_cells(earlier))])
        await wait_until(pilot, lambda: app.table.row_count == 3, what="the previous run's row")
        names = {run.run_id: app.table.cell_text(run.run_id, "workload") for run in (first, second, earlier)}
        assert names == {first.run_id: "tmp/a/model.py", second.run_id: "b/model.py", earlier.run_id: "old/a/model.py"}


async def test_the_queue_chart_title_and_notices_name_a_file_as_its_row_does(make_app):
    """Outside the table, two files of one name read ``model.py`` alike: the queue's line, the chart's title, the
    failed run's toast and the noisy notice name each file as its row does (``a/model.py``, ``b/model.py``)."""
    import dataclasses

    from tui.app.messages import RunFinished
    from tui.engine.protocol import make_event

    def file_record(index: int, folder: str) -> RunRecord:
        done = sweep_record(index, "default", None)
        options = dataclasses.replace(done.options, workload=f"/tmp/{folder}/model.py", params={})
        return dataclasses.replace(done, options=options)

    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        first, second = file_record(0, "a"), file_record(1, "b")
        for record in (first, second):
            app.inject_record(record)
        await wait_until(pilot, lambda: app.table.row_count == 2, what="two rows")
        app.table.focus()
        app.table.move_cursor(row=app.table.run_ids.index(second.run_id))
        chart = app.main_screen.query_one("#chart")
        await wait_until(pilot, lambda: chart.border_title.startswith("iterations · b/model.py"),
                         what="the chart's title naming b/model.py")
        running = RunRecord("20261201-000009-aaaaaa", first.options)
        running.apply(make_event("started", 0.0, env={"torch": "2.13.0"}))
        app.inject_record(running, current=True)
        queue = app.main_screen.query_one("#queue")
        await wait_until(pilot, lambda: "▶ a/model.py" in str(queue.render()), what="the queue naming a/model.py")
        failed = file_record(2, "b")
        failed.fail("compile_error", "fake")
        app.post_message(RunFinished(failed))
        await wait_until(pilot, lambda: any(n.startswith("b/model.py ") for n in notifications(app)),
                         what="the failed run's toast naming b/model.py")
        app.lab._noisy.saved(first, ("a stall",), queue_ended=True)
        await wait_until(pilot, lambda: any(n.startswith("a/model.py ") for n in notifications(app)
                                            if "a stall" in n), what="the noisy notice naming a/model.py")


async def test_at_80_columns_the_highlighted_columns_meaning_is_shown_whole(make_app):
    """The list cuts a long meaning at 80 columns; the line under it says the highlighted one in full."""
    from textual.geometry import Region

    from terminal_model import TerminalModel
    from tui.app.table_columns import TABLE_COLUMNS

    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        listed = await _open_chooser(pilot)
        longest = max((c for c in TABLE_COLUMNS if c.available and not c.required), key=lambda c: len(c.meaning))
        assert len(longest.meaning) > 80  # cut in the list's line at this width
        listed.highlighted = listed.get_option_index(longest.key)
        terminal = TerminalModel(app)

        def screen() -> str:
            return " ".join(terminal.text(Region(0, 0, 80, 24)).split())

        await wait_until(pilot, lambda: longest.meaning in screen(), what="the highlighted column's meaning, whole")
        assert f"{longest.header}: {longest.meaning}" in screen()
