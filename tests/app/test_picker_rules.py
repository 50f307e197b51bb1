"""The picker asks the engine's rules: the mode field, inductor options, and which parameter a refusal marks."""

from __future__ import annotations

import pytest
from app_helpers import wait_until
from textual.app import App, ComposeResult

from tui.app.components.chooser import Chooser

from tui.app.components.picker import FILE_CHOICE, Cycler, Picker
from tui.engine.options import (
    BACKENDS,
    MODES,
    OptionsError,
    RunOptions,
    inductor_options_apply,
    mode_applies,
    modes_for,
)
from tui.engine.run.sweep import expand


class PickerHost(App):
    def __init__(self, options: RunOptions) -> None:
        super().__init__()
        self.options = options

    def compose(self) -> ComposeResult:
        yield Picker(self.options, id="picker")


@pytest.mark.parametrize("backend", [*BACKENDS, "my_backend"])
async def test_picker_sweep_and_validation_agree_on_each_backend(backend):
    app = PickerHost(RunOptions(workload="matmul", backend=backend, inductor_options={"epilogue_fusion": False}))
    async with app.run_test(size=(60, 40)) as pilot:
        picker = app.query_one(Picker)
        mode = picker.query_one("#mode", Cycler)
        assert mode.disabled is not mode_applies(backend)  # as composed
        backend_field = picker.query_one("#backend", Cycler)
        backend_field.value = "eager" if backend == "inductor" else "inductor"
        await pilot.pause()
        backend_field.value = backend
        await pilot.pause()
        assert mode.disabled is not mode_applies(backend)  # after a change
        offered = []
        for wanted in MODES:
            if not mode.disabled:
                mode.value = wanted
                await pilot.pause()
            options = picker.current_options()
            offered.append(options.mode)
            assert bool(options.inductor_options) is inductor_options_apply(backend, options.mode)
            assert options.validated().mode == options.mode  # accepted as the picker built it
        assert tuple(dict.fromkeys(offered)) == modes_for(backend)
        swept = expand(RunOptions(workload="matmul"), backends=[backend], modes=list(MODES))
        assert [o.mode for o in swept] == list(modes_for(backend))


async def test_a_rule_between_parameters_marks_the_parameter_its_spec_names():
    app = PickerHost(RunOptions(workload="transformer_block", params={"width": 100, "heads": 3}))
    async with app.run_test(size=(60, 40)) as pilot:
        picker = app.query_one(Picker)
        await pilot.pause()
        with pytest.raises(OptionsError) as info:
            picker.current_options().validated()
        target = picker.mark_invalid(info.value)
        assert target is not None and target.id == "param-width"
        assert target.parent.has_class("-refused")
        # An error that names no parameter falls back to the first input.
        assert picker.mark_invalid(OptionsError("params", "something else")).id == "param-batch"


async def test_the_parameter_rows_say_whose_rows_are_mounted():
    app = PickerHost(RunOptions(workload="matmul"))
    async with app.run_test(size=(60, 40)) as pilot:
        picker = app.query_one(Picker)
        assert picker.param_rows.workload == "matmul"
        picker.query_one("#workload", Chooser).value = FILE_CHOICE
        await wait_until(pilot, lambda: picker.param_rows.workload == FILE_CHOICE, what="key=value row")
        assert [w.id for w in picker.query(".param-input")] == ["param-kv"]
        assert not picker.query_one("#user-path-row").has_class("-hidden")
        picker.query_one("#workload", Chooser).value = "mlp"
        await wait_until(pilot, lambda: picker.param_rows.workload == "mlp", what="mlp rows")
        assert [w.id for w in picker.query(".param-input")] == ["param-batch", "param-width", "param-depth"]


def _label_on_screen(app: App, row) -> tuple[str, bool]:
    """The row's first 10 cells as the screen shows them, and whether they are drawn reversed."""
    region = row.region
    strip = app.screen._compositor.render_strips()[region.y]
    cells, reversed_ = "", False
    x = 0
    for segment in strip:
        if region.x <= x < region.x + 10 and segment.text.strip():
            cells += segment.text
            reversed_ = reversed_ or bool(segment.style and segment.style.reverse)
        x += len(segment.text)
    return cells.strip(), reversed_


async def test_a_refused_field_s_label_is_drawn_reversed_until_the_user_types_in_it():
    app = PickerHost(RunOptions(workload="matmul"))
    async with app.run_test(size=(60, 40)) as pilot:
        picker = app.query_one(Picker)
        await pilot.pause()
        iters = picker.query_one("#iters")
        assert _label_on_screen(app, iters.parent) == ("iters", False)
        assert picker.mark_invalid(OptionsError("iters", "must be at least 1")) is iters
        await pilot.pause()
        assert _label_on_screen(app, iters.parent) == ("iters", True)
        await pilot.press("end", "0")  # typing clears the mark
        await pilot.pause()
        assert _label_on_screen(app, iters.parent) == ("iters", False)
