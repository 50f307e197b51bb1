"""Check marks readable without colour (issue 14 item 6): ✓ on, blank off, in the picker and the sweep dialog."""

from __future__ import annotations

from textual.app import App, ComposeResult

from tui.app.components.marks import OFF, ON, MarkedCheckbox, MarkedSelectionList
from textual.widgets.selection_list import Selection


class _Marks(App):
    def compose(self) -> ComposeResult:
        yield MarkedCheckbox("on", True, id="on")
        yield MarkedCheckbox("off", False, id="off")
        yield MarkedSelectionList(Selection("a", "a", True), Selection("b", "b", False), id="list")


def _line(widget, y: int = 0) -> str:
    return "".join(segment.text for segment in widget.render_line(y))


async def test_checkbox_and_selection_marks_follow_the_value():
    app = _Marks()
    async with app.run_test(size=(40, 10)) as pilot:
        on, off = app.query_one("#on", MarkedCheckbox), app.query_one("#off", MarkedCheckbox)
        assert ON in _line(on) and ON not in _line(off)
        off.toggle()
        await pilot.pause()
        assert ON in _line(off)
        selections = app.query_one("#list", MarkedSelectionList)
        assert ON in _line(selections, 0) and ON not in _line(selections, 1)
        selections.toggle("b")
        selections.deselect("a")
        await pilot.pause()
        assert ON not in _line(selections, 0) and ON in _line(selections, 1)
        assert f"▐{OFF}▌" in _line(selections, 0)
