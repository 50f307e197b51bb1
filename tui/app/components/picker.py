"""The workload and option picker: every field of ``RunOptions`` the user can set.

The picker only gathers and checks input; the app decides what to run. Parameter inputs
are generated from the workload's ``ParamSpec``s (``tui.engine.catalog``) and validated as
the user types (a bad value is tinted at the field). :meth:`Picker.current_options` builds a
``RunOptions`` from the fields, raising ``OptionsError`` for what cannot even be parsed; the
app then calls ``RunOptions.validated()`` and, on refusal, :meth:`Picker.mark_invalid` marks
the field the error names.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.validation import Integer, ValidationResult, Validator
from textual.widget import Widget
from textual.widgets import Checkbox, Input, Label, Select, Static

from tui.engine.catalog import WORKLOADS, ParamError, ParamSpec, is_user_workload
from tui.engine.options import (
    BACKENDS,
    DTYPES,
    MODES,
    OptionsError,
    RunOptions,
    parse_dynamic,
    parse_key_values,
)
from tui.telemetry.model import nvml_uuid

__all__ = ["Picker", "Cycler", "FILE_CHOICE", "DYNAMIC_LABELS", "device_choices", "LABEL_WIDTH"]

LABEL_WIDTH = 9
"""Columns of the field labels (the Cycler draws its own label at this width)."""

FILE_CHOICE = "__python_file__"
"""The workload select's value for "Python file..." (the path comes from its own input)."""

DYNAMIC_LABELS = ("auto", "true", "false")
"""``torch.compile(dynamic=None/True/False)`` as the picker and the sweep dialog offer it (``parse_dynamic`` reads them)."""

# RunOptions field -> widget id (the field an OptionsError names -> where to mark it).
_FIELD_WIDGETS = {
    "workload": "workload",
    "backend": "backend",
    "mode": "mode",
    "inductor_options": "mode",
    "fullgraph": "fullgraph",
    "dynamic": "dynamic",
    "dtype": "dtype",
    "tf32": "tf32",
    "device": "device",
    "warmup": "warmup",
    "iters": "iters",
    "train": "train",
    "compile_optimizer": "train",
    "l2_flush": "l2-flush",
    "cold_compile": "cold-compile",
}


def device_choices(gpus: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Select options for the device field: cpu, then each GPU as (``name uuid``, ``cuda:GPU-...``).

    ``gpus`` yields ``(name, uuid)``; the uuid may be in any form ``nvml_uuid`` accepts.
    """
    choices = [("cpu", "cpu")]
    for name, raw in gpus:
        uuid = nvml_uuid(raw)
        if uuid is None:
            continue
        short = uuid[:12] + "…" if len(uuid) > 13 else uuid
        choices.append((f"{name} {short}", f"cuda:{uuid}"))
    return choices


class Cycler(Widget, can_focus=True):
    """A one-line choice among a few values: ``label  value  ◂ ▸``.

    Enter, Space or Right picks the next value, Left the previous one, a click the next one.
    One widget instead of a Select's six keeps the picker cheap to build (first frame).
    """

    DEFAULT_CSS = """
    Cycler {
        height: 1;
        width: 1fr;
    }
    Cycler:focus {
        background: $block-cursor-blurred-background;
    }
    Cycler:disabled {
        color: $text-disabled;
    }
    """

    BINDINGS = [
        Binding("enter,space,right", "step(1)", "Next value", show=False, id="cycler.next"),
        Binding("left", "step(-1)", "Previous value", show=False, id="cycler.previous"),
    ]

    value: reactive[Any] = reactive(None, init=False)
    """The chosen value (one of the options' values)."""

    class Changed(Message):
        """The value changed (by the user or by code)."""

        def __init__(self, cycler: "Cycler", value: Any) -> None:
            super().__init__()
            self.cycler = cycler
            """The Cycler that changed."""
            self.value = value
            """Its new value."""

        @property
        def control(self) -> "Cycler":
            """The Cycler that changed (for ``@on(Cycler.Changed, "#id")``)."""
            return self.cycler

    def __init__(
        self,
        label: str,
        options: list[tuple[str, Any]],
        value: Any,
        *,
        id: str | None = None,
        disabled: bool = False,
        tooltip: str | None = None,
    ) -> None:
        super().__init__(id=id, disabled=disabled)
        if not options:
            raise ValueError("a Cycler needs at least one option")
        self.label = label
        self.options = list(options)
        self.set_reactive(Cycler.value, value if value in self.values else self.options[0][1])
        if tooltip:
            self.tooltip = tooltip

    @property
    def values(self) -> list[Any]:
        """The option values, in order."""
        return [value for _, value in self.options]

    def render(self) -> Text:
        """``label    value  ◂ ▸`` (the arrows brighten while focused)."""
        shown = next((text for text, value in self.options if value == self.value), str(self.value))
        refused = self.has_class("-refused")
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{self.label:<{LABEL_WIDTH}}", style="bold reverse red" if refused else "dim")
        text.append(shown, style="bold" if self.has_focus else "")
        text.append("  ◂ ▸", style="bold" if self.has_focus else "dim")
        return text

    def action_step(self, delta: int) -> None:
        """Move to the next (``delta`` 1) or previous (-1) value, wrapping around."""
        values = self.values
        index = values.index(self.value) if self.value in values else 0
        self.value = values[(index + delta) % len(values)]

    async def _on_click(self, event: events.Click) -> None:
        event.stop()
        if not self.disabled:
            self.action_step(1)

    def watch_value(self, value: Any) -> None:
        """Tell the parent."""
        self.post_message(self.Changed(self, value))

    def watch_has_focus(self) -> None:
        """Show the arrows only while focused."""
        self.refresh()


class ParamValidator(Validator):
    """Validates one workload parameter with its ``ParamSpec.coerce`` (empty = the default)."""

    def __init__(self, spec: ParamSpec) -> None:
        super().__init__()
        self.spec = spec

    def validate(self, value: str) -> ValidationResult:
        """Success for an empty value or one the spec accepts."""
        if not value.strip():
            return self.success()
        try:
            self.spec.coerce(value)
        except ParamError as exc:
            return self.failure(str(exc))
        return self.success()


class KeyValuesValidator(Validator):
    """Validates a ``key=value,key=value`` list (a user workload's parameters)."""

    def validate(self, value: str) -> ValidationResult:
        """Success when every item is ``key=value``."""
        try:
            parse_key_values(value, "params")
        except OptionsError as exc:
            return self.failure(str(exc))
        return self.success()


def _field(label: str, widget: Widget, *, row_id: str | None = None, classes: str = "") -> Horizontal:
    """One labelled picker row."""
    return Horizontal(
        Label(label, classes="field-label"),
        widget,
        id=row_id,
        classes=f"field {classes}".strip(),
    )


class Picker(VerticalScroll):
    """The option picker pane (scrolls when the terminal is short)."""

    BORDER_TITLE = "Run options"

    workload: reactive[str] = reactive("pointwise", init=False)
    """The workload select's value: a built-in name, or ``FILE_CHOICE`` for a Python file."""

    device: reactive[str] = reactive("cpu", init=False)
    """The device select's value (``cpu`` or ``cuda:GPU-<uuid>``); parameter defaults follow it."""

    class RunRequested(Message):
        """The user pressed Enter in one of the picker's inputs (the app treats it as Run)."""

    def __init__(self, options: RunOptions | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._initial = options or RunOptions()
        self._devices: list[tuple[str, str]] = [("cpu", "cpu")]
        self._wanted_device = self._initial.device
        self._param_values: dict[str, Any] = dict(self._initial.params)
        self._error_shown = ""

    # ----- composition ----------------------------------------------------

    def compose(self) -> ComposeResult:
        """The fields, in the order a user decides them."""
        opts = self._initial
        user = is_user_workload(opts.workload)
        workload_value = FILE_CHOICE if user else (opts.workload if opts.workload in WORKLOADS else "pointwise")
        self.set_reactive(Picker.workload, workload_value)
        workload_options = [(name, name) for name in WORKLOADS] + [("Python file...", FILE_CHOICE)]
        yield _field(
            "workload",
            Select(workload_options, value=workload_value, allow_blank=False, compact=True, id="workload"),
        )
        yield _field(
            "file",
            Input(
                opts.workload if user else "",
                placeholder="path/to/file.py[:factory]",
                compact=True,
                id="user-path",
            ),
            row_id="user-path-row",
            classes="-hidden" if not user else "",
        )
        yield Static("", id="workload-help", markup=False)
        yield Vertical(*self._param_rows(workload_value), id="params")
        backends = list(BACKENDS)
        if opts.backend not in backends:
            backends.append(opts.backend)
        yield Cycler("backend", [(b, b) for b in backends], opts.backend, id="backend",
                     tooltip="torch.compile backend (mode applies to inductor only)")
        yield Cycler("mode", [(m, m) for m in MODES], opts.mode if opts.mode in MODES else "default", id="mode",
                     disabled=opts.backend != "inductor", tooltip="inductor mode")
        yield Cycler("dynamic", [(k, k) for k in DYNAMIC_LABELS], opts.dynamic_label, id="dynamic",
                     tooltip="torch.compile dynamic=: auto (None), true, false")
        yield Cycler("dtype", [(d, d) for d in DTYPES], opts.dtype if opts.dtype in DTYPES else "float32",
                     id="dtype", tooltip="parameters and inputs are cast to it, on both sides")
        yield _field(
            "device",
            Select(self._devices, value="cpu", allow_blank=False, compact=True, id="device"),
        )
        yield _field(
            "warm-up",
            Input(str(opts.warmup), type="integer", compact=True, id="warmup",
                  validators=[Integer(minimum=0, maximum=100_000)], placeholder="calls"),
        )
        yield _field(
            "iters",
            Input(str(opts.iters), type="integer", compact=True, id="iters",
                  validators=[Integer(minimum=1, maximum=10_000_000)], placeholder="per side"),
        )
        with Vertical(id="flags"):
            yield Checkbox("fullgraph", opts.fullgraph, compact=True, id="fullgraph")
            yield Checkbox("TF32", opts.tf32, compact=True, id="tf32")
            yield Checkbox("train step", opts.train, compact=True, id="train")
            yield Checkbox("L2 flush", opts.l2_flush, compact=True, id="l2-flush")
            yield Checkbox("cold compile", opts.cold_compile, compact=True, id="cold-compile")
        yield Static("", id="picker-error", markup=False)

    def on_mount(self) -> None:
        """Help text and train flag for the initial workload (its inputs were composed)."""
        self._sync_workload_fields()

    # ----- reactions ------------------------------------------------------

    @on(Select.Changed, "#workload")
    def _workload_changed(self, event: Select.Changed) -> None:
        event.stop()
        self.clear_invalid()
        self.workload = str(event.value)

    async def watch_workload(self, old: str, new: str) -> None:
        """Swap the parameter inputs and the file-path row for the new workload."""
        self._remember_params()
        if old != new and old != FILE_CHOICE and new != FILE_CHOICE:
            self._param_values = {}
        self.query_one("#user-path-row").set_class(new != FILE_CHOICE, "-hidden")
        await self._rebuild_params()

    @on(Cycler.Changed, "#backend")
    def _backend_changed(self, event: Cycler.Changed) -> None:
        event.stop()
        self.clear_invalid()
        mode = self.query_one("#mode", Cycler)
        is_inductor = event.value == "inductor"
        if not is_inductor:
            mode.value = "default"
        mode.disabled = not is_inductor

    @on(Select.Changed, "#device")
    def _device_changed(self, event: Select.Changed) -> None:
        event.stop()
        self.clear_invalid()
        self.device = str(event.value)

    def watch_device(self, old: str, new: str) -> None:
        """Parameter placeholders show the defaults of the chosen device."""
        self._update_placeholders()

    @on(Select.Changed)
    @on(Cycler.Changed)
    @on(Checkbox.Changed)
    def _any_changed(self, event: Message) -> None:
        event.stop()
        self.clear_invalid()

    @on(Input.Changed)
    def _input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._show_error("")
        row = event.input.parent
        if row is not None:
            row.remove_class("-refused")

    @on(Input.Submitted)
    def _input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.RunRequested())

    # ----- parameters -----------------------------------------------------

    def _remember_params(self) -> None:
        for field in self.query(".param-input").results(Input):
            name = field.id.removeprefix("param-") if field.id else ""
            if field.value.strip():
                self._param_values[name] = field.value.strip()
            else:
                self._param_values.pop(name, None)

    def _param_rows(self, workload: str) -> list[Horizontal]:
        """The parameter rows of a workload (a ``key=value`` row for a Python file)."""
        if workload == FILE_CHOICE:
            initial = ",".join(f"{k}={v}" for k, v in self._param_values.items())
            return [
                _field(
                    "params",
                    Input(initial, placeholder="key=value,...", compact=True, id="param-kv",
                          classes="param-input", validators=[KeyValuesValidator()]),
                )
            ]
        rows = []
        for param in WORKLOADS[workload].params:
            value = self._param_values.get(param.name, "")
            rows.append(
                _field(
                    param.name,
                    Input(
                        "" if value in ("", None) else str(value),
                        placeholder=str(param.default_for(self.device)),
                        compact=True,
                        id=f"param-{param.name}",
                        classes="param-input",
                        validators=[ParamValidator(param)],
                        tooltip=param.help,
                        type="integer" if param.kind is int else "text",
                    ),
                )
            )
        return rows

    def _sync_workload_fields(self) -> None:
        """Help text and the train flag follow the workload."""
        help_text = self.query_one("#workload-help", Static)
        train = self.query_one("#train", Checkbox)
        if self.workload == FILE_CHOICE:
            help_text.update("make_workload() in your file returns the step and its inputs")
            supports_train = False
        else:
            spec = WORKLOADS[self.workload]
            help_text.update(spec.description)
            supports_train = spec.supports_train
        if not supports_train:
            train.value = False
        train.disabled = not supports_train

    async def _rebuild_params(self) -> None:
        container = self.query_one("#params", Vertical)
        await container.remove_children()
        await container.mount_all(self._param_rows(self.workload))
        self._sync_workload_fields()

    def _update_placeholders(self) -> None:
        if self.workload == FILE_CHOICE or self.workload not in WORKLOADS:
            return
        spec = WORKLOADS[self.workload]
        for param in spec.params:
            for field in self.query(f"#param-{param.name}").results(Input):
                field.placeholder = str(param.default_for(self.device))

    # ----- devices ----------------------------------------------------------

    def set_devices(self, gpus: Iterable[tuple[str, str]]) -> None:
        """Offer cpu plus these GPUs (``(name, uuid)``); keeps the selection when it is still there."""
        choices = device_choices(gpus)
        if choices == self._devices:
            return
        self._devices = choices
        select = self.query_one("#device", Select)
        current = select.value
        values = {value for _, value in choices}
        with self.prevent(Select.Changed):
            select.set_options(choices)
            if self._wanted_device in values:
                select.value = self._wanted_device
            elif current in values:
                select.value = current
            else:
                select.value = "cpu"
        self.device = str(select.value)

    # ----- reading and writing the options -----------------------------------

    def current_options(self) -> RunOptions:
        """The options the fields describe (not yet ``validated()``); OptionsError when unparseable."""
        workload_value = str(self.query_one("#workload", Select).value)
        params: dict[str, Any] = {}
        if workload_value == FILE_CHOICE:
            path = self.query_one("#user-path", Input).value.strip()
            if not path:
                raise OptionsError("workload", "give the Python file (path/to/file.py or path/to/file.py:factory)")
            if not is_user_workload(path):
                raise OptionsError("workload", f"{path!r} is not a .py file (path/to/file.py[:factory])")
            workload = path
            for field in self.query("#param-kv").results(Input):
                params = parse_key_values(field.value, "params")
        else:
            workload = workload_value
            spec = WORKLOADS[workload]
            for param in spec.params:
                for field in self.query(f"#param-{param.name}").results(Input):
                    text = field.value.strip()
                    if not text:
                        continue
                    try:
                        params[param.name] = param.coerce(text)
                    except ParamError as exc:
                        raise OptionsError("params", str(exc)) from None
        warmup = self._int_field("warmup")
        iters = self._int_field("iters")
        backend = str(self.query_one("#backend", Cycler).value)
        mode_field = self.query_one("#mode", Cycler)
        mode = str(mode_field.value) if not mode_field.disabled else "default"
        return replace(
            self._initial,
            workload=workload,
            params=params,
            backend=backend,
            mode=mode,
            inductor_options={} if backend != "inductor" or mode != "default" else dict(self._initial.inductor_options),
            fullgraph=self.query_one("#fullgraph", Checkbox).value,
            dynamic=parse_dynamic(self.query_one("#dynamic", Cycler).value),
            dtype=str(self.query_one("#dtype", Cycler).value),
            tf32=self.query_one("#tf32", Checkbox).value,
            device=str(self.query_one("#device", Select).value),
            warmup=warmup,
            iters=iters,
            train=self.query_one("#train", Checkbox).value,
            compile_optimizer=self._initial.compile_optimizer and self.query_one("#train", Checkbox).value,
            l2_flush=self.query_one("#l2-flush", Checkbox).value,
            cold_compile=self.query_one("#cold-compile", Checkbox).value,
        )

    def _int_field(self, name: str) -> int:
        text = self.query_one(f"#{name}", Input).value.strip()
        default = getattr(RunOptions(), name)
        if not text:
            return default
        try:
            return int(text)
        except ValueError:
            raise OptionsError(name, f"{text!r} is not an integer") from None

    # ----- marking refusals -----------------------------------------------------

    def mark_invalid(self, error: OptionsError) -> Widget | None:
        """Mark the field ``error`` names (red label, tinted widget, message below); focus it."""
        self.clear_invalid()
        target = self._widget_for(error)
        self._show_error(str(error))
        if target is None:
            return None
        target.add_class("-invalid")
        if target.parent is not None and target.parent.has_class("field"):
            target.parent.add_class("-refused")
        target.add_class("-refused")
        target.tooltip = str(error)
        target.refresh()
        if target.focusable and not target.disabled:
            target.focus()
        self.scroll_to_widget(target, animate=False)
        return target

    def clear_invalid(self) -> None:
        """Remove every refusal mark (validators' own marks stay)."""
        self._show_error("")
        for widget in self.query(".-refused"):
            widget.remove_class("-refused")
            if not isinstance(widget, Input):
                widget.remove_class("-invalid")
            widget.refresh()

    def _show_error(self, text: str) -> None:
        # Only on change: this runs on every keystroke and an update re-lays out the pane.
        if text != self._error_shown:
            self._error_shown = text
            self.query_one("#picker-error", Static).update(text)

    def _widget_for(self, error: OptionsError) -> Widget | None:
        field = getattr(error, "field", "")
        if field == "workload":
            if self.workload == FILE_CHOICE:
                return self.query_one("#user-path", Input)
            return self.query_one("#workload", Select)
        if field == "params":
            if self.workload == FILE_CHOICE:
                return next(iter(self.query("#param-kv")), None)
            detail = str(error).removeprefix("params: ")
            name = detail.split(":", 1)[0].strip()
            if self.workload == "transformer_block" and "divisible" in detail:
                name = "width"
            found = list(self.query(f"#param-{name}")) if name.isidentifier() else []
            return found[0] if found else next(iter(self.query(".param-input")), None)
        widget_id = _FIELD_WIDGETS.get(field)
        if widget_id is None:
            return None
        return self.query_one(f"#{widget_id}")
