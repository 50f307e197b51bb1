"""KeyFooter: recomposed when the keys it shows change, not at every focus change."""

from __future__ import annotations

import pytest

textual = pytest.importorskip("textual")

from textual.app import App, ComposeResult  # noqa: E402  - after the importorskip
from textual.binding import Binding  # noqa: E402
from textual.widgets import Input  # noqa: E402
from textual.widgets._footer import FooterKey  # noqa: E402  - not exported; the keys the footer shows

from tui.app.components.key_footer import KeyFooter  # noqa: E402


class KeyedInput(Input):
    """An input that brings a key of its own to the footer."""

    BINDINGS = [Binding("ctrl+o", "noop", "Open")]

    def action_noop(self) -> None:
        """Nothing: the binding is there to be shown."""


class FooterApp(App[None]):
    BINDINGS = [Binding("ctrl+r", "noop", "Run")]

    def compose(self) -> ComposeResult:
        yield Input(id="a")
        yield Input(id="b")
        yield KeyedInput(id="keyed")
        yield KeyFooter()

    def action_noop(self) -> None:
        """Nothing: the binding is there to be shown."""


def shown(app: FooterApp) -> list[str]:
    return [key.description for key in app.query(FooterKey)]


async def test_the_footer_recomposes_only_when_its_keys_change(monkeypatch):
    composed: list[int] = []
    original = KeyFooter.compose

    def counting(footer: KeyFooter) -> ComposeResult:
        composed.append(1)
        yield from original(footer)

    monkeypatch.setattr(KeyFooter, "compose", counting)
    app = FooterApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.focused is app.query_one("#a")
        assert "Run" in shown(app) and "Open" not in shown(app)
        start = len(composed)
        app.query_one("#b").focus()  # the same keys: no rebuild
        await pilot.pause()
        app.query_one("#a").focus()
        await pilot.pause()
        assert len(composed) == start
        app.query_one("#keyed").focus()  # a key more: rebuilt, and shown
        await pilot.pause()
        assert len(composed) == start + 1
        assert "Open" in shown(app)
        app.query_one("#b").focus()  # and gone again
        await pilot.pause()
        assert "Open" not in shown(app) and len(composed) == start + 2


class CrowdedApp(App[None]):
    """More keys than a 60-column compact footer holds: they scroll under the palette's key docked at the right."""

    BINDINGS = [Binding(key, "noop", words) for key, words in
                (("r", "Run"), ("w", "Sweep"), ("x", "Cancel"), ("f1", "Help"), ("q", "Quit"), ("a", "Re-run"),
                 ("e", "Export"), ("h", "History"), ("c", "Columns"))]

    def compose(self) -> ComposeResult:
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one(KeyFooter).compact = True

    def action_noop(self) -> None:
        """Nothing: the binding is there to be shown."""


async def test_a_compact_footers_palette_key_ends_at_the_screens_edge():
    # Footer's compact rule gave the docked palette key a right margin: the keys under it showed through that
    # column, a stray letter after "palette" ("^p palettei" at 60 columns)
    from textual.geometry import Region

    from terminal_model import TerminalModel

    from app_helpers import wait_until

    app = CrowdedApp()
    async with app.run_test(size=(60, 3)) as pilot:
        terminal = TerminalModel(app)
        await wait_until(pilot, lambda: "palette" in terminal.text(Region(0, 2, 60, 1)), what="the footer")
        line = terminal.text(Region(0, 2, 60, 1))
    assert line.rstrip().endswith("^p palette") and line.endswith("palette"), repr(line)
