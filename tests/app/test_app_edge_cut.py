"""A results cell the pane's edge cuts shows ``…``, never a piece of its number (tui.app.components.edge_cut).

At 80x24 the results pane is 43 cells wide beside the sidebar: the eager ms column starts at cell
37 and ends past the edge, so ``0.00120`` drawn as it is would read ``0.00``; scrolled sideways,
its left end goes under the fixed columns and ``123.4`` would read ``3.4``.
"""

from __future__ import annotations

import math

from app_helpers import wait_until
from test_snapshots_app import _env
from tui.app.components.edge_cut import EdgeCut, drawn_text, edge_cut
from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.store.results import RunRecord

_MEDIANS = [(0.0012, 0.0011), (1.05, 0.5), (123.4, 100.0)]
"""Each row's eager and compiled medians (ms): shown ``0.00120``, ``1.050``, ``123.4``."""


def _record(index: int, eager: float, compiled: float) -> RunRecord:
    options = RunOptions(workload="pointwise", params={"n": 512}, iters=40)
    record = RunRecord(f"20250101-000000-cut{index:03d}", options.validated(), created=float(index))
    record.apply(make_event("started", 0.0, env=_env("cpu", False)))
    record.apply(make_event("compiled", 0.0, compile_s=2.0, diagnostics={"graph_breaks": 0, "recompiles": 0}))
    record.apply(make_event("phase", 0.0, phase="measuring"))
    for block in range(4):
        for side, base in (("eager", eager), ("compiled", compiled)):
            ms = [base * (1 + 0.001 * math.sin((block * 10 + j) / 3.0)) for j in range(10)]
            record.apply(make_event("block", 0.0, side=side, stage="measure", index=block, clock="perf_counter",
                                    ms=ms, host_ms_per_call=base * 1.1))
    record.apply(make_event("measured", 0.0, diagnostics={"graph_breaks": 0, "recompiles": 0},
                            accuracy={"passed": True, "max_abs_err": 0.0}, memory={}, warnings=[]))
    record.apply(make_event("finished", 0.0))
    return record


def _column_on_screen(table, run_id: str, key: str) -> str:
    """What the screen shows of one cell: its row's line, cut to the column's cells on screen."""
    start = sum(column.get_render_width(table) for column in table.ordered_columns[:table.get_column_index(key)])
    start -= int(table.scroll_x)
    end = start + table.columns[key].get_render_width(table)
    fixed = sum(column.get_render_width(table) for column in table.ordered_columns[:table.fixed_columns])
    line = table.render_line(table.header_height + table.get_row_index(run_id)).text
    return line[max(start, fixed):min(end, table.size.width)].strip()


async def _rows(app, pilot) -> tuple[list[RunRecord], object]:
    """The rows of :data:`_MEDIANS` in the app's table, and the table."""
    records = [_record(index, *medians) for index, medians in enumerate(_MEDIANS)]
    for record in records:
        app.inject_record(record)
    await wait_until(pilot, lambda: app.table.row_count == len(records), what="rows")
    return records, app.table


async def test_at_80x24_a_number_the_panes_edge_cuts_shows_an_ellipsis_not_another_number(make_app):
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        records, table = await _rows(app, pilot)
        await pilot.pause()
        texts = [table.cell_text(record.run_id, "eager_ms") for record in records]
        assert texts == ["0.00120", "1.050", "123.4"]
        assert table.shown_columns[2] == "eager_ms" and table.size.width < 37 + 10  # cut by the right edge
        assert [_column_on_screen(table, r.run_id, "eager_ms") for r in records] == ["…", "…", "…"]
        assert table.render_line(0).text.rstrip().endswith("eager")  # the header says which column goes on

        table.scroll_to(x=3, animate=False)  # the column's left end under the fixed status and speedup
        await wait_until(pilot, lambda: table.scroll_x == 3, what="the table scrolled sideways")
        await pilot.pause()
        shown = [_column_on_screen(table, r.run_id, "eager_ms") for r in records]
        assert shown == ["…", "1.050", "123.4"]  # whole on screen but the first, whose "0" is under the speedup

        table.scroll_to(x=8, animate=False)
        await wait_until(pilot, lambda: table.scroll_x == 8, what="the table scrolled further")
        await pilot.pause()
        assert [_column_on_screen(table, r.run_id, "eager_ms") for r in records] == ["…", "…", "…"]


def test_a_cut_keeps_the_words_that_fit_leaves_out_a_cut_number_and_marks_the_edge():
    assert drawn_text("0.00120", "right", 8) == (1, "0.00120")
    assert drawn_text("mlp batch=64", "left", 8) == (0, "mlp bat…")  # Rich's own rule in a narrow column
    assert edge_cut("0.00120", 39, 37, 43) == EdgeCut(39, 43, "   …")  # not "0.00"
    assert edge_cut("0.00120", 36, 37, 43) == EdgeCut(37, 43, "…     ")  # the left end under the fixed columns
    assert edge_cut("LB 1.05×", 37, 37, 43) == EdgeCut(37, 43, "LB   …")  # not "LB 1.0"
    assert edge_cut("reduce-overhead", 37, 37, 43) == EdgeCut(37, 43, "reduc…")
    assert edge_cut("reduce-overhead", 30, 37, 50) == EdgeCut(37, 45, "…verhead")
    assert edge_cut("n=4096 d=3", 30, 33, 50) == EdgeCut(33, 40, "…   d=3")  # not "096 d=3"
    assert edge_cut("0.00120", 30, 0, 43) is None  # whole on screen
    assert edge_cut("0.00120", 45, 37, 43) is None  # none of it on screen


async def test_right_and_left_scroll_the_table_a_column_at_a_time_with_each_number_whole(make_app):
    """A new user at 80x24 pressed Right about 90 times to reach the compile column: the row cursor scrolled one
    cell a press. Stopping at each column's left edge alone showed no number whole there (6 cells beside the fixed
    columns, every number right-aligned in a wider column: a reviewer's finding)."""
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        records, table = await _rows(app, pilot)
        table.focus()
        await pilot.pause()
        seen: dict[str, set[str]] = {"eager_ms": set(), "compile_s": set()}
        presses = 0
        while table.scroll_x < table.max_scroll_x and presses < 30:
            before = table.scroll_x
            await pilot.press("right")
            await wait_until(pilot, lambda before=before: table.scroll_x > before, what="a step sideways")
            await pilot.pause()
            presses += 1
            for key in seen:
                seen[key].add(_column_on_screen(table, records[1].run_id, key))
        assert "1.050" in seen["eager_ms"] and "2.00" in seen["compile_s"], seen  # each number whole at a stop
        assert presses <= 2 * len(table.ordered_columns), presses  # two stops a column at most
        for _ in range(presses):
            await pilot.press("left")
        await wait_until(pilot, lambda: table.scroll_x == 0, what="back at the start")
