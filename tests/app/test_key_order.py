"""Keys typed in a burst edit a text field in the order typed (tui/app/components/ordered_input.py).

Each burst is posted to the app at once, as a terminal's keys arrive over SSH: every key is queued before
the app handles the first. Textual's own Input applies its editing keys (backspace, ctrl+u, the arrows,
Enter) only after they have bubbled up to the app and back, behind the characters typed after them.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

from textual import events
from textual.widgets import Input

from app_helpers import wait_until
from tui.app.components.dialogs import ExportScreen
from tui.app.components.picker import Picker

SIZE = (160, 48)
APP_DIR = Path(__file__).resolve().parents[2] / "tui" / "app"

BURSTS = {
    ("5", "0", "backspace", "1", "2"): "512",
    ("ctrl+u", "4", "2"): "42",
    ("9", "left", "8"): "89",
}

SENTINEL = "f24"
"""A key nothing binds: it bubbles up to the app behind every key typed before it (each hop is a queue)."""


def post_burst(app: Any, keys: tuple[str, ...]) -> None:
    """Post ``keys`` to the app without waiting between them, as the terminal's driver does."""
    for key in keys:
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(app)
        app.post_message(event)


async def type_burst(pilot: Any, field: Input, keys: tuple[str, ...]) -> str:
    """Focus ``field``, empty it, type ``keys`` in one burst; its value once the app has handled them all."""
    app = pilot.app
    field.focus()
    await pilot.pause()
    field.value = ""
    await pilot.pause()
    handled = asyncio.Event()
    app.key_f24 = lambda event: handled.set()  # the app's key handler (textual's dispatch_key) finds it
    post_burst(app, (*keys, SENTINEL))
    await asyncio.wait_for(handled.wait(), timeout=10)
    return field.value


async def test_a_burst_of_editing_keys_applies_in_the_order_typed(make_app):
    app = make_app(load_history=False)
    async with app.run_test(size=SIZE) as pilot:
        field = app.query_one(Picker).query_one("#iters", Input)
        seen = {keys: await type_burst(pilot, field, keys) for keys in BURSTS}
        assert seen == BURSTS


async def test_keys_the_field_does_not_bind_still_reach_the_screen_and_the_app(make_app):
    app = make_app(load_history=False)
    async with app.run_test(size=SIZE) as pilot:
        picker = app.query_one(Picker)
        iters = picker.query_one("#iters", Input)
        assert await type_burst(pilot, iters, ("ctrl+u", "3", "0", "tab")) == "30"
        assert app.focused is picker.query_one("#repeat", Input)  # Tab: the screen's binding
        post_burst(app, ("escape",))  # the app's binding: to the table
        await wait_until(pilot, lambda: app.focused is app.table, what="the table focused")
        assert await type_burst(pilot, iters, ("ctrl+u", "2", "0", "enter")) == "20"  # Enter submits: a run
        await wait_until(pilot, lambda: bool(app.lab.records), what="a run queued")
        assert [record.options.iters for record in app.lab.records.values()] == [20]


async def test_a_dialogs_field_submits_what_the_burst_typed_and_escape_cancels(make_app):
    app = make_app(load_history=False)
    async with app.run_test(size=SIZE) as pilot:
        for keys, answer in ((("/", "t", "m", "p", "x", "backspace", "/", "o", "u", "t", "enter"), "/tmp/out"),
                             (("a", "b", "escape"), None)):
            answers: list[str | None] = []
            closed = asyncio.Event()

            def chosen(path: str | None, answers: list[str | None] = answers, closed: asyncio.Event = closed) -> None:
                answers.append(path)
                closed.set()

            app.push_screen(ExportScreen("/exports"), callback=chosen)
            await wait_until(pilot, lambda: getattr(app.focused, "id", None) == "export-path",
                             what="the path field focused")
            post_burst(app, keys)
            await asyncio.wait_for(closed.wait(), timeout=10)
            assert answers == [answer]


def test_every_text_field_the_app_makes_is_an_ordered_input():
    made = []
    for path in sorted(APP_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.endswith("Input"):
                made.append((path.relative_to(APP_DIR).as_posix(), node.func.id))
    assert made and {name for _, name in made} == {"OrderedInput"}, made
    assert {where for where, _ in made} >= {"components/picker.py", "components/picker_params.py",
                                            "components/dialogs.py", "components/sweep_dialog.py",
                                            "components/tune_dialog.py"}
