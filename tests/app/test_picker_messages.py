"""Trust, messages (issue 11, item 11): a value pasted into the picker is never echoed whole.

A 10,000-digit ``n``, a 10,000-digit ``iters`` and a 10,000-character file name: the refusal
("Run refused", the line under the picker, the field's own validator) shows the first 40
characters and counts the rest; no run starts. The engine's side is in tests/test_options.py
and tests/test_catalog.py.
"""

from __future__ import annotations

from textual.widgets import Input, Static
from tui.app.components.chooser import Chooser

from app_helpers import raised_notices, wait_until
from tui.app.components.picker import FILE_CHOICE, Picker

SIZE = (160, 48)
DIGITS = "1" * 10_000


PASTED = [
    ("param-n", DIGITS, f"params: n: {'1' * 40}… (10000 characters) is above the maximum 65536"),
    ("iters", DIGITS, f"iters: {'1' * 40}… (10000 characters) is not allowed (allowed: an integer from 1 to 10000000)"),
    ("warmup", "9" * 41, f"warmup: {'9' * 40}… (41 characters) is not allowed (allowed: an integer from 0 to 100000)"),
]
"""(field, value pasted, the refusal); one app meets them in turn, each field given back its value after."""


async def test_a_pasted_huge_number_is_refused_with_a_short_message(make_app):
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        picker = app.query_one(Picker)
        for field, value, refusal in PASTED:
            widget = picker.query_one(f"#{field}", Input)
            before, seen = widget.value, {n.identity for n in raised_notices(app)}
            widget.value = value
            await pilot.pause()
            app.action_run()
            await pilot.pause()
            refused = [n.message for n in raised_notices(app) if n.title == "Run refused" and n.identity not in seen]
            assert refused == [refusal]
            assert str(picker.query_one("#picker-error", Static).render()) == refusal
            assert app.table.row_count == 0 and app.runner.last_pid is None
            widget.value = before
            await pilot.pause()


async def test_the_parameter_field_itself_says_it_short(make_app):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        field = app.query_one(Picker).query_one("#param-n", Input)
        field.value = DIGITS
        await pilot.pause()
        result = field.validate(field.value)
        assert result is not None and not result.is_valid
        assert result.failure_descriptions == [f"n: {'1' * 40}… (10000 characters) is above the maximum 65536"]


async def test_a_long_file_name_that_is_not_python_is_shortened(make_app):
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        picker = app.query_one(Picker)
        picker.query_one("#workload", Chooser).value = FILE_CHOICE
        await wait_until(pilot, lambda: picker.workload == FILE_CHOICE, what="the file choice")
        picker.query_one("#user-path", Input).value = "/tmp/" + "m" * 10_000
        await pilot.pause()
        app.action_run()
        await pilot.pause()
        refused = [n.message for n in raised_notices(app) if n.title == "Run refused"]
        assert refused == [f"workload: {'/tmp/' + 'm' * 195!r}… (10005 characters) is not a .py file "
                           "(path/to/file.py[:factory])"]
