"""The picker: choosing a workload and options, refusals marked at the field, config restore."""

from __future__ import annotations

import json

from textual.widgets import Checkbox, Input
from tui.app.components.chooser import Chooser

from app_helpers import notifications, raised_notices, wait_until
from tui import paths
from tui.app.components.picker import FILE_CHOICE, Cycler, Picker, device_choices
from tui.engine.options import RunOptions
from tui.telemetry.fake import FakeSource


async def test_choosing_a_workload_and_options_by_keyboard(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        picker = app.query_one(Picker)
        assert [w.id for w in picker.query(".param-input")] == ["param-n"]
        # Workload: open the select and move up from pointwise to matmul.
        picker.query_one("#workload").focus()
        await pilot.press("enter", "up", "enter")
        await wait_until(pilot, lambda: picker.workload == "matmul", what="workload matmul")
        await pilot.pause()
        # transformer_block has four parameters, generated from its ParamSpecs.
        picker.query_one("#workload", Chooser).value = "transformer_block"
        await wait_until(pilot, lambda: len(picker.query(".param-input")) == 4, what="4 params")
        assert [w.id for w in picker.query(".param-input")] == [
            "param-batch",
            "param-seq",
            "param-width",
            "param-heads",
        ]
        # Type a parameter, switch the backend (mode follows), flip flags.
        field = picker.query_one("#param-seq", Input)
        field.focus()
        await pilot.press("1", "2", "8")
        picker.query_one("#backend", Cycler).value = "eager"
        await pilot.pause()
        assert picker.query_one("#mode", Cycler).disabled
        picker.query_one("#backend", Cycler).value = "inductor"
        await pilot.pause()
        assert not picker.query_one("#mode", Cycler).disabled
        picker.query_one("#mode", Cycler).value = "max-autotune"
        picker.query_one("#dynamic", Cycler).value = "false"
        picker.query_one("#dtype", Cycler).focus()
        await pilot.press("right")  # float32 -> bfloat16
        await pilot.pause()
        picker.query_one("#fullgraph", Checkbox).focus()
        await pilot.press("space")
        picker.query_one("#train", Checkbox).value = True
        iters = picker.query_one("#iters", Input)
        iters.value = "40"
        await pilot.pause()
        options = picker.current_options()
        assert options.workload == "transformer_block"
        assert options.params == {"seq": 128}
        assert (options.backend, options.mode, options.dynamic, options.dtype) == (
            "inductor",
            "max-autotune",
            False,
            "bfloat16",
        )
        assert options.fullgraph is True and options.train is True and options.iters == 40
        validated = options.validated()
        assert validated.params == {"batch": 2, "seq": 128, "width": 128, "heads": 4}


async def test_python_file_choice_shows_a_path_input(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        picker = app.query_one(Picker)
        assert picker.query_one("#user-path-row").has_class("-hidden")
        picker.query_one("#workload", Chooser).value = FILE_CHOICE
        # The parameter rows are swapped asynchronously (removed, then the key=value row mounted):
        # wait for what the test uses, the path row shown and the key=value input mounted.
        await wait_until(pilot, lambda: not picker.query_one("#user-path-row").has_class("-hidden")
                         and bool(picker.query("#param-kv")), what="path row and key=value input")
        assert picker.query_one("#train", Checkbox).disabled
        picker.query_one("#user-path", Input).value = "models/mine.py:build"
        picker.query_one("#param-kv", Input).value = "size=32,scale=0.5"
        await pilot.pause()
        options = picker.current_options()
        assert options.workload == "models/mine.py:build"
        assert options.params == {"size": 32, "scale": 0.5}


async def test_a_missing_file_is_refused_at_the_path_field_before_a_worker_starts(make_app, tmp_path):
    """The file was looked for only in the worker, which started (2 s) to fail the run."""
    app = make_app()
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        picker = app.query_one(Picker)
        picker.query_one("#workload", Chooser).value = FILE_CHOICE
        await wait_until(pilot, lambda: not picker.query_one("#user-path-row").has_class("-hidden"), what="path row")
        path = picker.query_one("#user-path", Input)
        path.value = str(tmp_path / "nope" / "model.py")
        await pilot.pause()
        app.action_run()
        await pilot.pause()
        refusal = (f"workload: {tmp_path}/nope/model.py: no such file (allowed: a readable Python file, "
                   "path/to/file.py[:factory])")
        assert app.table.row_count == 0 and app.current is None and app.runner.last_pid is None
        assert refusal in notifications(app)
        assert str(picker.query_one("#picker-error").render()) == refusal
        assert path.has_class("-refused") and app.focused is path


async def test_invalid_iters_is_refused_with_a_notification_and_no_run(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        picker = app.query_one(Picker)
        picker.query_one("#iters", Input).value = "0"
        await pilot.pause()
        app.table.focus()
        await pilot.press("r")
        await pilot.pause()
        assert app.table.row_count == 0 and app.current is None and not app.queue
        messages = notifications(app)
        assert any(m.startswith("iters: 0 is not allowed") for m in messages), messages
        iters = picker.query_one("#iters", Input)
        assert iters.has_class("-invalid")
        assert iters.parent.has_class("-refused")
        assert app.focused is iters  # the field is focused for correction
        assert "iters" in str(picker.query_one("#picker-error").render())
        # Correcting it clears the mark; the run is accepted.
        iters.value = "20"
        await pilot.pause()
        assert not iters.parent.has_class("-refused")
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: app.table.row_count == 1, what="a row")
        iters.focus()
        await pilot.press("enter")  # Enter in a field runs too
        await wait_until(pilot, lambda: app.table.row_count == 2, what="a second row")
        await wait_until(pilot, lambda: app.settled, what="settled")


async def test_a_parameter_out_of_range_is_marked_at_its_field(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        picker = app.query_one(Picker)
        field = picker.query_one("#param-n", Input)
        field.value = "0"
        await pilot.pause()
        assert field.has_class("-invalid")  # the validator marks it while typing
        app.action_run()
        await pilot.pause()
        assert app.table.row_count == 0
        assert field.parent.has_class("-refused")
        assert any("n: 0 is below the minimum 1" in m for m in notifications(app))


async def test_gpus_from_telemetry_appear_as_devices(make_app):
    source = FakeSource(gpus=2, vary=False)
    app = make_app(telemetry=source)
    async with app.run_test(size=(160, 48)) as pilot:
        picker = app.query_one(Picker)
        # Driven directly: the GPU pane's own Updated message does the same in the app.
        picker.set_devices([(s.name, s.uuid) for s in source.snapshot()])
        await pilot.pause()
        select = picker.query_one("#device", Chooser)
        values = [value for _, value in select.options if isinstance(value, str)]
        assert values[0] == "cpu"
        assert values[1] == "cuda:GPU-fa4e0000-0000-4000-8000-000000000000"
        select.value = values[2]
        await pilot.pause()
        options = picker.current_options()
        assert options.device == "cuda:GPU-fa4e0000-0000-4000-8000-000000000001"
        assert options.validated().params == {"n": 4096}  # the GPU default
        assert picker.query_one("#param-n", Input).placeholder == "4096"


def test_device_choices_label_gpus_by_name_and_uuid():
    choices = device_choices([("NVIDIA H200", "gpu-8d4f0000-1111-2222-3333-444455556666")])
    assert choices == [("cpu", "cpu"), ("NVIDIA H200 GPU-8d4f0000…", "cuda:GPU-8d4f0000-1111-2222-3333-444455556666")]


async def test_last_used_options_are_restored_at_the_next_start(make_app):
    first = make_app()
    async with first.run_test(size=(160, 48)) as pilot:
        picker = first.query_one(Picker)
        picker.query_one("#workload", Chooser).value = "matmul"
        # pointwise has an #param-n too: wait until matmul's rows replaced it, or "64" lands in the old one
        await wait_until(pilot, lambda: picker.param_rows.workload == "matmul", what="matmul's parameter rows")
        picker.query_one("#param-n", Input).value = "64"
        picker.query_one("#backend", Cycler).value = "eager"
        picker.query_one("#iters", Input).value = "20"
        await pilot.pause()
        first.action_run()
        await wait_until(pilot, lambda: first.table.row_count == 1, what="a row")
        await wait_until(pilot, lambda: first.settled, what="settled")
    saved = json.loads(paths.config_file().read_text())
    assert saved["options"]["workload"] == "matmul" and saved["options"]["params"] == {"n": 64}
    second = make_app()
    async with second.run_test(size=(160, 48)) as pilot:
        picker = second.query_one(Picker)
        await pilot.pause()
        assert picker.query_one("#workload", Chooser).value == "matmul"
        assert picker.query_one("#param-n", Input).value == "64"
        assert picker.query_one("#backend", Cycler).value == "eager"
        assert picker.query_one("#mode", Cycler).disabled
        assert picker.current_options() == RunOptions(workload="matmul", params={"n": 64}, backend="eager", iters=20)


async def test_a_corrupt_config_gives_defaults_and_a_warning(make_app):
    path = paths.config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"options": {"workload": "matmul", "no_such_option": 1}')  # torn JSON
    app = make_app()
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await pilot.pause()
        picker = app.query_one(Picker)
        assert picker.current_options() == RunOptions()
        warnings = [n for n in raised_notices(app) if n.severity == "warning"]
        assert warnings and "is corrupt" in warnings[0].message and "using defaults" in warnings[0].message


async def test_a_config_with_an_unknown_option_keeps_the_rest_and_names_the_option(make_app):
    """An unknown option costs only itself (it used to reset every option): named with the file, ignored."""
    path = paths.config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"options": {"workload": "matmul", "no_such_option": 1}}))
    app = make_app()
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await pilot.pause()
        assert app.query_one(Picker).current_options().workload == "matmul"
        assert f"config {path}: options.no_such_option: unknown option (default used)" in notifications(app)


async def test_a_config_with_a_wrong_type_keeps_the_rest_and_the_field_shows_its_default(make_app):
    path = paths.config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"options": {"workload": "matmul", "backend": None, "iters": "20", "tf32": True}}))
    app = make_app()
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await pilot.pause()
        picker = app.query_one(Picker)
        assert picker.query_one("#backend", Cycler).value == "inductor"
        assert picker.query_one("#iters", Input).value == "50"
        # the old TF32 switch of an older config: true is the tf32 precision, with no problem said
        assert picker.query_one("#precision", Cycler).value == "tf32"
        assert picker.current_options() == RunOptions(workload="matmul", params={}, precision="tf32")
        (warning,) = [n.message for n in raised_notices(app) if n.title == "Config ignored"]
        assert warning.splitlines() == [f"config {path}: options.backend: expected a value, got null (default used)",
                                        f"config {path}: options.iters: expected int, got str (default used)"]


async def test_at_80x24_the_file_fields_placeholder_is_whole(make_app):
    """The narrow sidebar leaves the file field ~20 columns: its placeholder is not cut mid-word."""
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        picker = app.query_one(Picker)
        picker.query_one("#workload", Chooser).value = FILE_CHOICE
        await wait_until(pilot, lambda: not picker.query_one("#user-path-row").has_class("-hidden"), what="path row")
        field = picker.query_one("#user-path", Input)
        await wait_until(pilot, lambda: field.size.width > 0, what="the field laid out")
        assert field.placeholder in field.render_line(0).text, field.render_line(0).text
