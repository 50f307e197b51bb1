"""The app started the way ``compile-lab`` starts it (``App.run``), not through ``run_test``.

``App.run_async`` installs Python 3.12's eager task factory where it exists; ``run_test`` does
not. Under eager tasks a screen's compose runs the moment Textual registers it, so a layout that
is composed before it is on the screen stack crashes at start (``ScreenStackError`` from the
picker's inputs). CI runs this file under the newest Python it finds as well (.ci/run).
"""

from __future__ import annotations

import asyncio
import sys

import pytest

textual = pytest.importorskip("textual")

from textual.pilot import Pilot  # noqa: E402  - after the importorskip

from tui.app.components.picker import Picker  # noqa: E402


async def test_the_app_starts_and_quits_under_its_own_loop_setup(make_app):
    app = make_app()
    errors: list[BaseException] = []
    original = app._handle_exception

    def keep(error: Exception) -> None:
        errors.append(error)
        original(error)

    app._handle_exception = keep  # type: ignore[method-assign]
    seen: dict[str, object] = {}

    async def auto_pilot(pilot: Pilot) -> None:
        await pilot.pause()
        seen["factory"] = asyncio.get_running_loop().get_task_factory()
        seen["picker"] = pilot.app.query_one(Picker).query_one("#warmup").value
        seen["bottom"] = pilot.app.screen_stack[0] is pilot.app.main_screen
        pilot.app.exit(0)

    await app.run_async(headless=True, size=(80, 24), auto_pilot=auto_pilot)
    assert errors == [], errors
    assert app.return_code == 0
    assert seen["picker"] and seen["bottom"] is True
    eager = getattr(asyncio, "eager_task_factory", None)  # Python 3.12+
    if sys.version_info >= (3, 12):
        assert eager is not None and seen["factory"] is eager  # the condition this test exists for


async def test_the_focus_is_set_once_at_start_on_the_table(make_app, monkeypatch):
    """Each focus change restyles the picker (its ``:focus-within`` rule) and recomposes the footer's keys:
    the start focuses the table at once, never a picker field first."""
    from tui.app.main_screen import MainScreen

    focused: list[object] = []
    original = MainScreen.set_focus

    def record(screen: MainScreen, widget, *args, **kwargs) -> None:
        focused.append(widget)
        original(screen, widget, *args, **kwargs)

    monkeypatch.setattr(MainScreen, "set_focus", record)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.focused is app.table
        assert focused == [app.table]


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_the_main_screen_has_its_breakpoint_class_before_its_widgets_are_styled(make_app, monkeypatch, size):
    """Textual sets the breakpoint class at the screen's first resize, after its widgets were styled, and
    restyles them all for it: the screen takes it as it composes instead, so the resize changes nothing."""
    from tui.app.main_screen import MainScreen

    seen: list[set[str]] = []
    original = Picker.compose

    def compose(picker: Picker):
        seen.append(set(picker.screen.classes))
        yield from original(picker)

    monkeypatch.setattr(Picker, "compose", compose)
    changed: list[object] = []
    update = MainScreen.update_node_styles

    def recording(screen: MainScreen, animate: bool = True) -> None:
        changed.append(screen.classes)
        update(screen, animate)

    monkeypatch.setattr(MainScreen, "update_node_styles", recording)
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        wanted = "-narrow" if size[0] < 120 else "-wide"
        assert wanted in app.main_screen.classes
        assert seen and wanted in seen[0]
        assert len(changed) == 1  # the restyle as the screen is shown; none for the breakpoint


def test_the_breakpoint_classes_are_textuals():
    from textual.screen import Screen

    from tui.app.layout import HORIZONTAL_BREAKPOINTS, VERTICAL_BREAKPOINTS, breakpoint_classes

    for width in (0, 40, 80, 119, 120, 121, 200):
        for height in (0, 24, 39, 40, 41, 60):
            ours = {name for name, on in breakpoint_classes(width, height).items() if on}
            textuals = (Screen._get_breakpoint_classes(Screen(), width, HORIZONTAL_BREAKPOINTS)
                        | Screen._get_breakpoint_classes(Screen(), height, VERTICAL_BREAKPOINTS))
            assert ours == textuals, (width, height)


async def test_a_run_that_ends_while_the_app_closes_is_no_error(make_app, monkeypatch):
    """Textual removes the screens first, then handles the messages still queued: a RunStarted or RunFinished
    among them raised "No screen called 'main' installed" (a test that quit with a run in flight failed)."""
    from fakes.records import cuda_run_record
    from tui.app.main_screen import MainScreen
    from tui.app.messages import RunFinished, RunStarted

    record = cuda_run_record()

    def run_ends_now(screen: MainScreen) -> None:
        screen.app.post_message(RunStarted(record))
        screen.app.post_message(RunFinished(record))

    monkeypatch.setattr(MainScreen, "on_unmount", run_ends_now, raising=False)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
    assert app.return_code in (0, None)


async def test_enter_on_the_empty_table_of_a_first_start_goes_to_the_run_options(make_app):
    """The table has the focus at start, and Enter on it opened nothing: a newcomer's Enter now reaches the options
    (as ``o`` does); on a row it still opens the run's details."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.focused is app.table and app.table.row_count == 0
        await pilot.press("enter")
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "workload", app.focused


@pytest.mark.parametrize("size", [(120, 30), (200, 34)])
async def test_a_short_wide_terminal_gives_the_results_table_more_rows_than_the_chart(make_app, size):
    """Below 40 rows the chart takes 8 rows, not the wide layout's 16, which left the table 4 rows at 120x30."""
    from tui.app.components.chart import IterationChart

    app = make_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        chart = app.query_one(IterationChart)
        assert chart.size.height + 2 == 8 and app.table.size.height >= 12, (chart.size, app.table.size)
