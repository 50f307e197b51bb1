"""Chooser: a one-line choice whose list exists only while it is open, driven as a user drives it."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input

from tui.app.components.chooser import Chooser, ChooserList

OPTIONS = [("matmul", "matmul"), ("pointwise", "pointwise"), ("transformer_block", "transformer_block")]


class Host(App):
    def __init__(self, disabled: bool = False) -> None:
        super().__init__()
        self.changes: list[str] = []
        self.disabled_chooser = disabled

    def compose(self) -> ComposeResult:
        yield Chooser(OPTIONS, "pointwise", id="pick", disabled=self.disabled_chooser)
        yield Input(id="other")

    def on_chooser_changed(self, event: Chooser.Changed) -> None:
        assert event.control is self.query_one(Chooser)
        self.changes.append(event.value)


def _shown(app: App) -> str:
    """The chooser's line as the screen draws it."""
    chooser = app.query_one(Chooser)
    strip = app.screen._compositor.render_strips()[chooser.region.y]
    return "".join(segment.text for segment in strip)[: chooser.region.width].rstrip()


async def test_enter_opens_the_list_on_the_value_and_enter_picks_the_highlighted_option():
    app = Host()
    async with app.run_test(size=(40, 10)) as pilot:
        chooser = app.query_one(Chooser)
        chooser.focus()
        await pilot.pause()
        assert not chooser.children and _shown(app).startswith("pointwise") and _shown(app).endswith("▼")
        await pilot.press("enter")
        [listing] = chooser.query(ChooserList)
        assert app.focused is listing and listing.highlighted == 1 and _shown(app).endswith("▲")
        await pilot.press("up", "enter")
        await pilot.pause()
        assert chooser.value == "matmul" and app.changes == ["matmul"]
        assert not chooser.children and app.focused is chooser  # the list is gone, the focus is back
        assert _shown(app).startswith("matmul")


async def test_escape_closes_the_list_without_a_change_and_typing_jumps_to_an_option():
    app = Host()
    async with app.run_test(size=(40, 10)) as pilot:
        chooser = app.query_one(Chooser)
        chooser.focus()
        await pilot.press("down", "down")  # opens, then moves
        await pilot.press("escape")
        await pilot.pause()
        assert chooser.value == "pointwise" and app.changes == [] and not chooser.children
        assert app.focused is chooser
        await pilot.press("space", "t", "r", "a", "enter")  # "tra": transformer_block
        await pilot.pause()
        assert chooser.value == "transformer_block" and app.changes == ["transformer_block"]


async def test_a_click_opens_it_and_leaving_the_list_closes_it_without_taking_the_focus_back():
    app = Host()
    async with app.run_test(size=(40, 10)) as pilot:
        chooser = app.query_one(Chooser)
        await pilot.click(Chooser)
        await pilot.pause()
        assert chooser.expanded
        app.query_one("#other", Input).focus()
        await pilot.pause()
        assert not chooser.expanded and app.focused is app.query_one("#other") and chooser.value == "pointwise"


async def test_a_disabled_chooser_does_not_open():
    app = Host(disabled=True)
    async with app.run_test(size=(40, 10)) as pilot:
        chooser = app.query_one(Chooser)
        await pilot.click(Chooser)
        await chooser.action_open()
        await pilot.pause()
        assert not chooser.expanded and chooser.value == "pointwise"


async def test_new_options_keep_the_value_when_they_can_and_a_value_must_be_an_option():
    app = Host()
    async with app.run_test(size=(40, 10)) as pilot:
        chooser = app.query_one(Chooser)
        chooser.set_options([("pointwise", "pointwise"), ("mlp", "mlp")])
        await pilot.pause()
        assert chooser.value == "pointwise" and app.changes == []
        chooser.set_options([("cnn", "cnn")])
        await pilot.pause()
        assert chooser.value == "cnn" and app.changes == ["cnn"] and chooser.options == [("cnn", "cnn")]
        with pytest.raises(ValueError, match="'mlp' is not one of this chooser's options"):
            chooser.value = "mlp"
        with pytest.raises(ValueError, match="at least one option"):
            chooser.set_options([])


async def test_an_open_list_follows_new_options_and_a_pick_is_the_value_it_showed():
    """A GPU that came or went while the device list was open: the list kept the old entries and the pick was read
    by position in the new ones (an IndexError, or the wrong GPU)."""
    app = Host()
    async with app.run_test(size=(40, 12)) as pilot:
        chooser = app.query_one(Chooser)
        chooser.focus()
        await pilot.press("enter", "down")  # transformer_block highlighted
        chooser.set_options([("transformer_block", "transformer_block"), ("pointwise", "pointwise")])  # reordered
        await pilot.pause()
        [listing] = chooser.query(ChooserList)
        assert listing.option_count == 2 and listing.highlighted == 1  # the value's, pointwise
        await pilot.press("up", "enter")
        await pilot.pause()
        assert chooser.value == "transformer_block" and app.changes == ["transformer_block"]
        await pilot.press("enter", "down")  # pointwise highlighted
        chooser.set_options([("transformer_block", "transformer_block")])  # pointwise gone
        await pilot.press("enter")
        await pilot.pause()
        assert chooser.value == "transformer_block" and not chooser.expanded


async def test_a_value_set_by_code_while_the_list_is_open_moves_its_highlight():
    app = Host()
    async with app.run_test(size=(40, 12)) as pilot:
        chooser = app.query_one(Chooser)
        chooser.focus()
        await pilot.press("enter")
        chooser.value = "transformer_block"
        await pilot.pause()
        assert chooser.query_one(ChooserList).highlighted == 2
        await pilot.press("enter")  # picks what is highlighted: the value stays
        await pilot.pause()
        assert chooser.value == "transformer_block" and app.changes == ["transformer_block"]
