"""The sweep dialog's A/B field (issue 15 item 2): interpreters as a sweep axis, interleaved, not kept."""

from __future__ import annotations


import pytest

from textual.widgets import Input, SelectionList

from app_helpers import notifications, wait_until
from tui.app.components.dialogs import ConfirmScreen
from tui.app.components.picker import Picker
from tui.app.components.sweep_dialog import SweepScreen, choice_to_expand_kwargs

from tests.fakes import stand_in_python



def test_the_pythons_text_is_the_expand_axis():
    assert choice_to_expand_kwargs({"pythons": ["/a/bin/python, /b/bin/python"]}) == {
        "pythons": ["/a/bin/python", "/b/bin/python"]}
    assert "pythons" not in choice_to_expand_kwargs({"pythons": []})


@pytest.mark.torch  # each interpreter is checked for torch before the sweep is queued
async def test_an_ab_sweep_from_the_dialog_alternates_interpreters_and_is_not_kept(make_app, tmp_path):
    a, b = stand_in_python(tmp_path, "venvA"), stand_in_python(tmp_path, "venvB")
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        app.query_one(Picker).query_one("#iters", Input).value = "10"
        app.action_sweep()
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, SweepScreen) and bool(app.screen.query("#sweep-pythons")),
            what="sweep dialog",
        )
        screen = app.screen
        screen.query_one("#sweep-modes", SelectionList).deselect_all()
        screen.query_one("#sweep-modes", SelectionList).select("default")
        screen.query_one("#sweep-fullgraphs", SelectionList).deselect_all()
        screen.query_one("#sweep-sizes", Input).value = "n=64,128"
        screen.query_one("#sweep-pythons", Input).value = f"{a},{b}"
        await pilot.pause()
        assert str(screen.query_one("#sweep-preview").render()).startswith("4 run(s)")
        await pilot.press("ctrl+s")  # the interpreters typed here are the user's own now: nothing is asked
        await wait_until(pilot, lambda: app.table.row_count == 4, what="4 rows")
        assert not isinstance(app.screen, ConfirmScreen)
        assert [app.records[r].options.python for r in app.table.run_ids] == [a, b, a, b]
        assert "pythons" not in app.config.sweep
        await wait_until(pilot, lambda: app.settled, what="settled")


@pytest.mark.torch  # the interpreter is checked for torch before the sweep is queued
async def test_one_interpreter_typed_is_checked_and_not_credited_to_the_saved_config(make_app, tmp_path):
    """One path in the A/B field ran unchecked ("0" previewed as 6 runs) and was then asked about as "from the
    saved config", which did not hold it."""
    good = stand_in_python(tmp_path, "venv")
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        app.query_one(Picker).query_one("#iters", Input).value = "10"
        for typed in ("0", good):
            app.action_sweep()
            await wait_until(pilot, lambda: isinstance(app.screen, SweepScreen) and bool(
                app.screen.query("#sweep-pythons")), what="sweep dialog")
            screen = app.screen
            screen.query_one("#sweep-modes", SelectionList).deselect_all()
            screen.query_one("#sweep-modes", SelectionList).select("default")
            screen.query_one("#sweep-fullgraphs", SelectionList).deselect_all()
            screen.query_one("#sweep-pythons", Input).value = typed
            await pilot.pause()
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: not isinstance(app.screen, SweepScreen), what="the dialog closed")
            if typed == "0":
                refused = [n for n in notifications(app) if "python" in n]
                assert app.table.row_count == 0 and refused and "0" in refused[0], notifications(app)
        await wait_until(pilot, lambda: app.table.row_count == 1, what="the run of the typed interpreter")
        assert not isinstance(app.screen, ConfirmScreen)
        assert [app.records[r].options.python for r in app.table.run_ids] == [good]
        await wait_until(pilot, lambda: app.settled, what="settled")
