"""Every option in the picker (issue 14 item 7): block size, time budget, timeout and memory limit have fields.

Their values reach the run's options; a bad one is refused with the engine's line naming the field,
which is marked and focused; the memory limit only applies to CPU runs, so a GPU device disables it.
"""

from __future__ import annotations

from textual.widgets import Input, Static
from tui.app.components.chooser import Chooser

from app_helpers import raised_notices, wait_until
from tui.app.components.picker import Picker
from tui.engine.options import RunOptions
from tui.telemetry.fake import FakeSource

SIZE = (160, 48)
FIELDS = {"block_size": "block-size", "time_budget_s": "time-budget", "timeout_s": "timeout",
          "memory_limit_gb": "memory-limit"}


async def test_the_limits_are_picker_fields_and_reach_the_run(make_app):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        picker = app.query_one(Picker)
        defaults = {name: picker.query_one(f"#{widget}", Input).value for name, widget in FIELDS.items()}
        assert defaults == {"block_size": "10", "time_budget_s": "", "timeout_s": "600", "memory_limit_gb": ""}
        for widget, value in (("block-size", "5"), ("time-budget", "2.5"), ("timeout", "90"), ("memory-limit", "3"),
                              ("iters", "10")):
            picker.query_one(f"#{widget}", Input).value = value
        await pilot.pause()
        options = picker.current_options()
        assert (options.block_size, options.time_budget_s, options.timeout_s, options.memory_limit_gb) == (
            5,
            2.5,
            90.0,
            3.0,
        )
        app.action_run()
        await wait_until(pilot, lambda: app.table.row_count == 1 and app.settled, what="the run")
        (record,) = app.session.records
        assert (record.options.block_size, record.options.time_budget_s, record.options.timeout_s,
                record.options.memory_limit_gb) == (5, 2.5, 90.0, 3.0)
        assert not app.query_one("#picker-also", Static).display  # none of them is a hidden option any more


BAD_LIMITS = [
    ("block-size", "0", "block_size: 0 is not allowed (allowed: an integer from 1 to 100000)"),
    ("block-size", "ten", "block_size: 'ten' is not an integer (allowed: an integer from 1 to 100000)"),
    ("time-budget", "-1", "time_budget_s: -1.0 is not allowed (allowed: a number of seconds above 0 and at most "
                          "86400 (1 day), or unset for no budget)"),
    ("timeout", "abc", "timeout_s: 'abc' is not a number (allowed: a number of seconds above 0 and at most 604800 "
                       "(7 days))"),
    ("timeout", "inf", "timeout_s: inf is not allowed (allowed: a number of seconds above 0 and at most 604800 "
                       "(7 days))"),
    ("memory-limit", "0", "memory_limit_gb: 0.0 is not allowed (allowed: a number of GB above 0 and at most 1000000, "
                          "or unset for no limit)"),
]
"""(widget, value typed, the refusal) of each bad limit; one app meets them in turn, each cleared after."""


async def test_a_bad_limit_is_refused_naming_its_field_and_the_field_is_marked(make_app):
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        picker = app.query_one(Picker)
        for widget, value, refusal in BAD_LIMITS:
            field = picker.query_one(f"#{widget}", Input)
            seen = {n.identity for n in raised_notices(app)}
            field.value = value
            await pilot.pause()
            assert field.has_class("-invalid"), widget  # tinted while typing, by the engine's own rule
            app.action_run()
            await pilot.pause()
            assert app.table.row_count == 0 and app.runner.last_pid is None
            refused = [n.message for n in raised_notices(app) if n.title == "Run refused" and n.identity not in seen]
            assert refused == [refusal]
            assert str(picker.query_one("#picker-error", Static).render()) == refusal
            assert field.parent.has_class("-refused") and app.focused is field, widget
            field.value = ""  # empty: the default again, and the mark goes
            await pilot.pause()
            assert not field.parent.has_class("-refused") and not field.has_class("-invalid"), widget


async def test_the_memory_limit_is_for_cpu_runs_only(make_app):
    source = FakeSource(gpus=1, vary=False)
    app = make_app(telemetry=source)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        picker = app.query_one(Picker)
        memory = picker.query_one("#memory-limit", Input)
        memory.value = "4"
        picker.set_devices([(s.name, s.uuid) for s in source.snapshot()])
        await pilot.pause()
        select = picker.query_one("#device", Chooser)
        select.value = next(value for _, value in select.options if str(value).startswith("cuda:"))
        await wait_until(pilot, lambda: memory.disabled, what="the memory field disabled")
        options = picker.current_options()
        assert options.memory_limit_gb is None and options.validated().device.startswith("cuda:")
        select.value = "cpu"
        await wait_until(pilot, lambda: not memory.disabled, what="the memory field enabled")
        assert picker.current_options().memory_limit_gb == 4.0
        assert "Run refused" not in [n.title for n in raised_notices(app)]


async def test_a_saved_config_fills_the_fields(make_app):
    from tui.app.config import AppConfig, save_config

    save_config(AppConfig(options=RunOptions(block_size=20, time_budget_s=30.0, timeout_s=45.5, memory_limit_gb=1.5)))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        picker = app.query_one(Picker)
        assert {name: picker.query_one(f"#{widget}", Input).value for name, widget in FIELDS.items()} == {
            "block_size": "20", "time_budget_s": "30", "timeout_s": "45.5", "memory_limit_gb": "1.5"}
        options = picker.current_options()
        assert (options.block_size, options.time_budget_s, options.timeout_s, options.memory_limit_gb) == (
            20,
            30.0,
            45.5,
            1.5,
        )
