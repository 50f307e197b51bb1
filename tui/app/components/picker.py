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
from typing import Any
from collections.abc import Iterable

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.validation import Integer
from textual.widget import Widget
from textual.widgets import Checkbox, Input, Static

from tui.app.components.chooser import Chooser
from tui.app.components.ordered_input import OrderedInput
from tui.app.components.marks import MarkedCheckbox
from tui.app.components.picker_fields import LABEL_WIDTH, Cycler, FieldRow, OptionValidator, field_row
from tui.app.components.picker_params import FILE_CHOICE, ParamRows
from tui.app.components.option_text import also_line
from tui.engine.catalog import PATH_ECHO_CHARS, WORKLOADS, echo, is_user_workload
from tui.engine.run.placement import POOL_ALL, is_pool
from tui.engine.store.repeats import DEFAULT_REPEAT
from tui.engine.option_table import SPECS, field_widgets, limit_fields
from tui.engine.options import (
    BACKENDS,
    DEFAULT_MODE,
    DEFAULT_PRECISION,
    DTYPES,
    INT_RANGES,
    MODES,
    PRECISIONS,
    OptionsError,
    RunOptions,
    inductor_options_apply,
    mode_applies,
    parse_dynamic,
    parse_int_option,
    parse_number_option,
)
from tui.telemetry.model import nvml_uuid

__all__ = ["Picker", "Cycler", "FILE_CHOICE", "DYNAMIC_LABELS", "device_choices", "LABEL_WIDTH"]

DYNAMIC_LABELS = ("auto", "true", "false")
"""``torch.compile(dynamic=None/True/False)`` as the picker and the sweep dialog offer it (``parse_dynamic``
reads them)."""

# RunOptions field -> widget id (the field an OptionsError names -> where to mark it), from the option table.
_FIELD_WIDGETS = field_widgets()


def _limit_input(name: str) -> tuple[str, str, str, str, str]:
    """A measurement limit's field from its spec: (label, widget id, unit, placeholder, tooltip)."""
    spec = SPECS[name]
    limit = spec.limit
    assert limit is not None and spec.widget is not None, f"{name} has no picker limit in the option table"
    return limit.label, spec.widget, limit.unit, limit.placeholder, limit.tooltip.replace("{flag}", spec.flag or "")


# The measurement limits' fields: RunOptions field -> (label, widget id, unit, placeholder, tooltip).
_LIMIT_FIELDS = {name: _limit_input(name) for name in limit_fields()}


def _in_range(name: str) -> Integer:
    """An integer field's validator: the option's range in the option table."""
    low, high = INT_RANGES[name]
    return Integer(minimum=low, maximum=high)


def _number_text(value: float | int | None) -> str:
    """A limit as its field shows it: empty for none, ``600`` for 600.0, otherwise every digit."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def device_choices(gpus: Iterable[tuple[str, str]], cluster: bool = False) -> list[tuple[str, str]]:
    """The device field's options: cpu, then each GPU as (``name uuid``, ``cuda:GPU-...``), then
    with two GPUs or more ``cuda:all`` (every GPU, one run each at once: :mod:`tui.app.gpu_pool`).

    ``gpus`` yields ``(name, uuid)``; the uuid may be in any form ``nvml_uuid`` accepts. On a Ray
    cluster (``compile-lab --cluster``) the choices are a node's CPUs or some node's GPU, whatever
    this machine has.
    """
    if cluster:
        return [("cpu (a node's CPUs)", "cpu"), ("cuda (a GPU of the Ray cluster)", "cuda")]
    choices = [("cpu", "cpu")]
    for name, raw in gpus:
        uuid = nvml_uuid(raw)
        if uuid is None:
            continue
        short = uuid[:12] + "…" if len(uuid) > 13 else uuid
        choices.append((f"{name} {short}", f"cuda:{uuid}"))
    if len(choices) > 2:
        choices.append((f"cuda:all ({len(choices) - 1} GPUs at once)", POOL_ALL))
    return choices


class Picker(VerticalScroll):
    """The option picker pane (scrolls when the terminal is short)."""

    BORDER_TITLE = "Run options"

    workload: reactive[str] = reactive("pointwise", init=False)
    """The workload select's value: a built-in name, or ``FILE_CHOICE`` for a Python file."""

    device: reactive[str] = reactive("cpu", init=False)
    """The device select's value (``cpu``, ``cuda:GPU-<uuid>`` or ``cuda:all``); parameter defaults follow it."""

    class RunRequested(Message):
        """The user pressed Enter in one of the picker's inputs (the app treats it as Run)."""

    def __init__(self, options: RunOptions | None = None, *, repeat: int | str = DEFAULT_REPEAT,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self._initial = options or RunOptions()
        self._initial_repeat = repeat
        self._devices: list[tuple[str, str]] = [("cpu", "cpu")]
        self._gpu_names: list[str] = []
        self._wanted_device = self._initial.device
        self._devices_known = False
        self._error_shown = ""
        self._cluster = False

    # ----- composition ----------------------------------------------------

    def compose(self) -> ComposeResult:
        """The fields, in the order a user decides them."""
        opts = self._initial
        user = is_user_workload(opts.workload)
        workload_value = FILE_CHOICE if user else (opts.workload if opts.workload in WORKLOADS else "pointwise")
        self.set_reactive(Picker.workload, workload_value)
        workload_options = [(name, name) for name in WORKLOADS] + [("Python file...", FILE_CHOICE)]
        yield field_row(
            "workload",
            Chooser(workload_options, workload_value, id="workload"),
        )
        yield field_row(
            "file",
            OrderedInput(
                opts.workload if user else "",
                placeholder="model.py[:factory]",  # whole in the 80-column sidebar; the tooltip has the rest
                compact=True,
                id="user-path",
                tooltip="your Python file: path/to/file.py, or path/to/file.py:factory for another function than "
                        "make_workload(device, dtype, **params), which returns the model and its inputs",
            ),
            row_id="user-path-row",
            classes="-hidden" if not user else "",
        )
        yield Static("", id="workload-help", markup=False)
        yield ParamRows(workload_value, self._initial.params, self.device, id="params")
        backends = list(BACKENDS)
        if opts.backend not in backends:
            backends.append(opts.backend)
        yield Cycler("backend", [(b, b) for b in backends], opts.backend, id="backend",
                     tooltip="torch.compile backend (mode applies to inductor only)")
        yield Cycler("mode", [(m, m) for m in MODES], opts.mode if opts.mode in MODES else DEFAULT_MODE, id="mode",
                     disabled=not mode_applies(opts.backend), tooltip="inductor mode")
        yield Cycler("dynamic", [(k, k) for k in DYNAMIC_LABELS], opts.dynamic_label, id="dynamic",
                     tooltip="torch.compile dynamic=: auto (None), true, false")
        yield Cycler("dtype", [(d, d) for d in DTYPES], opts.dtype if opts.dtype in DTYPES else "float32",
                     id="dtype", tooltip="parameters and inputs are cast to it, on both sides")
        yield Cycler("precision", [(p, p) for p in PRECISIONS],
                     opts.precision if opts.precision in PRECISIONS else DEFAULT_PRECISION, id="precision",
                     tooltip="fp32 matmuls and cuDNN convolutions, both sides: default: torch's own flags (cuDNN "
                             "TF32 on, matmul TF32 off); ieee: no TF32; tf32: TF32 for both")
        yield field_row(
            "device",
            Chooser(self._devices, "cpu", id="device"),
        )
        yield field_row(
            "warm-up",
            OrderedInput(str(opts.warmup), type="integer", compact=True, id="warmup",
                  validators=[_in_range("warmup")], placeholder="calls"),
        )
        yield field_row(
            "iters",
            OrderedInput(str(opts.iters), type="integer", compact=True, id="iters",
                  validators=[_in_range("iters")], placeholder="per side"),
        )
        yield field_row(
            "repeat",
            OrderedInput(str(self._initial_repeat), compact=True, id="repeat", placeholder="1, K or auto",
                  tooltip="worker processes per configuration (interleaved; one row, an interval across "
                          "processes); auto: more on a GPU for launch-bound ones (up to 5), on the CPU while "
                          "inconclusive (up to 3)"),
        )
        with Vertical(id="flags"):
            yield MarkedCheckbox("fullgraph", opts.fullgraph, compact=True, id="fullgraph")
            yield MarkedCheckbox("train step", opts.train, compact=True, id="train")
            yield MarkedCheckbox("L2 flush", opts.l2_flush, compact=True, id="l2-flush")
            yield MarkedCheckbox("cold compile", opts.cold_compile, compact=True, id="cold-compile")
        # The measurement's limits: decided last, and least often.
        for name, (label, widget_id, unit, placeholder, tooltip) in _LIMIT_FIELDS.items():
            parse = parse_int_option if name in INT_RANGES else parse_number_option
            yield field_row(label, OrderedInput(_number_text(getattr(opts, name)), compact=True, id=widget_id,
                                         placeholder=placeholder, tooltip=tooltip,
                                         validators=[OptionValidator(name, parse)]), unit=unit)
        yield also_line(opts)  # the options without a field here, where they are not their defaults
        yield Static("", id="picker-error", markup=False)

    def on_mount(self) -> None:
        """Help text and train flag for the initial workload (its inputs were composed); a cluster's devices."""
        self._sync_workload_fields()
        if getattr(self.app, "cluster", None) is not None:
            self._cluster = True
            self.set_devices([])

    # ----- reactions ------------------------------------------------------

    @on(Chooser.Changed, "#workload")
    def _workload_changed(self, event: Chooser.Changed) -> None:
        event.stop()
        self.clear_invalid()
        self.workload = str(event.value)

    async def watch_workload(self, new: str) -> None:
        """Swap the parameter inputs, then show the file-path row, help text and train flag of ``new``."""
        await self.param_rows.show(new)
        # Only now, so that a visible path row means its parameter input is there too.
        self.query_one("#user-path-row").set_class(new != FILE_CHOICE, "-hidden")
        self._sync_workload_fields()

    @property
    def param_rows(self) -> ParamRows:
        """The parameter inputs; ``param_rows.workload`` says whose rows are mounted now."""
        return self.query_one("#params", ParamRows)

    @on(Cycler.Changed, "#backend")
    def _backend_changed(self, event: Cycler.Changed) -> None:
        event.stop()
        self.clear_invalid()
        mode = self.query_one("#mode", Cycler)
        applies = mode_applies(str(event.value))
        if not applies:
            mode.value = DEFAULT_MODE
        mode.disabled = not applies

    @on(Chooser.Changed, "#device")
    def _device_changed(self, event: Chooser.Changed) -> None:
        event.stop()
        self.clear_invalid()
        self.device = str(event.value)

    def watch_device(self, old: str, new: str) -> None:
        """Parameter placeholders show the defaults of the chosen device; the memory limit is for CPU runs only."""
        self.param_rows.set_device(new)
        self.query_one("#memory-limit", Input).disabled = new != "cpu"

    @on(Chooser.Changed)
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
        if isinstance(row, FieldRow):
            row.refuse(False)

    @on(Input.Submitted)
    def _input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.RunRequested())

    # ----- workload ------------------------------------------------------

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

    # ----- devices ----------------------------------------------------------

    def set_devices(self, gpus: Iterable[tuple[str, str]]) -> None:
        """Offer cpu plus these GPUs (``(name, uuid)``), and ``cuda:all`` with two or more; keeps the
        selection when it is still there. A saved ``cuda:all`` the machine cannot give falls back to its
        one GPU (or cpu) with a notice, the first time the GPUs are known."""
        gpus = list(gpus)
        choices = device_choices(gpus, self._cluster)
        first, self._devices_known = not self._devices_known, True
        if choices != self._devices:
            self._devices = choices
            self._gpu_names = [name for name, raw in gpus if nvml_uuid(raw) is not None]
            chooser = self.query_one("#device", Chooser)
            values = [value for _, value in choices]
            with self.prevent(Chooser.Changed):
                chooser.set_options(choices)
                chooser.value = self._kept_device(values, str(chooser.value))
            self.device = str(chooser.value)
        if first and not self._cluster and is_pool(self._wanted_device) and self._wanted_device not in [
                v for _, v in choices]:
            self._tell_pool_fallback()

    def _kept_device(self, values: list[str], current: str) -> str:
        if self._wanted_device in values:
            return self._wanted_device
        if self._cluster and self._wanted_device.startswith("cuda"):
            return "cuda"
        gpus = [value for value in values if value.startswith("cuda:GPU-")]
        if is_pool(self._wanted_device) and gpus:
            return gpus[0]  # every GPU of a machine with one
        return current if current in values else "cpu"

    def _tell_pool_fallback(self) -> None:
        wanted, count = self._wanted_device, len(self._gpu_names)
        shown = echo(wanted, plain=True)
        label = {value: label for label, value in self._devices}.get(self.device, self.device)
        why = ("needs two GPUs or more" if wanted.strip() == POOL_ALL else
               "is a GPU list, which the device field does not offer (cuda:all does; the sweep dialog lists the GPUs)")
        self.notify(f"The saved device {shown} {why}; this machine shows {count} GPU{'' if count == 1 else 's'}: "
                    f"the device is {label}.", title="Device", severity="warning", markup=False, timeout=10)

    @property
    def gpu_devices(self) -> list[tuple[str, str]]:
        """The machine's GPUs as ``cuda:N`` (PCI order, as the pool names them): ``(label, device)`` each."""
        return [(f"cuda:{index}", f"cuda:{index}") for index in range(len(self._gpu_names))]

    # ----- reading and writing the options -----------------------------------

    def current_options(self) -> RunOptions:
        """The options the fields describe (not yet ``validated()``); OptionsError when unparseable."""
        workload_value = str(self.query_one("#workload", Chooser).value)
        workload = self._user_path() if workload_value == FILE_CHOICE else workload_value
        params = self.param_rows.read(workload_value)
        warmup = self._int_field("warmup")
        iters = self._int_field("iters")
        limits = {name: self._limit_field(name) for name in _LIMIT_FIELDS}
        if self.query_one("#memory-limit", Input).disabled:
            limits["memory_limit_gb"] = None  # a GPU run: the limit does not apply (the field says so)
        backend = str(self.query_one("#backend", Cycler).value)
        mode = str(self.query_one("#mode", Cycler).value) if mode_applies(backend) else DEFAULT_MODE
        train = self.query_one("#train", Checkbox).value
        return replace(
            self._initial,
            workload=workload,
            params=params,
            backend=backend,
            mode=mode,
            # The picker has no field for them: kept from the start only where they still apply.
            inductor_options=dict(self._initial.inductor_options) if inductor_options_apply(backend, mode) else {},
            fullgraph=self.query_one("#fullgraph", Checkbox).value,
            dynamic=parse_dynamic(self.query_one("#dynamic", Cycler).value),
            dtype=str(self.query_one("#dtype", Cycler).value),
            precision=str(self.query_one("#precision", Cycler).value),
            device=str(self.query_one("#device", Chooser).value),
            warmup=warmup,
            iters=iters,
            train=train,
            compile_optimizer=self._initial.compile_optimizer and train,
            l2_flush=self.query_one("#l2-flush", Checkbox).value,
            cold_compile=self.query_one("#cold-compile", Checkbox).value,
            **limits,
        )

    def current_repeat(self) -> int | str:
        """The repeat field: processes per configuration, or ``"auto"`` (OptionsError naming what is allowed)."""
        from tui.engine.store.repeats import parse_repeat

        text = self.query_one("#repeat", Input).value.strip()
        try:
            return parse_repeat(text) if text else DEFAULT_REPEAT
        except ValueError as exc:
            raise OptionsError("repeat", str(exc)) from None

    def _user_path(self) -> str:
        path = self.query_one("#user-path", Input).value.strip()
        if not path:
            raise OptionsError("workload", "give the Python file (path/to/file.py or path/to/file.py:factory)")
        if not is_user_workload(path):
            shown = echo(path, limit=PATH_ECHO_CHARS)
            raise OptionsError("workload", f"{shown} is not a .py file (path/to/file.py[:factory])")
        return path

    def _limit_field(self, name: str) -> Any:
        """A measurement limit's field: its default when empty (None: no budget, no memory limit)."""
        text = self.query_one(f"#{_LIMIT_FIELDS[name][1]}", Input).value.strip()
        if not text:
            return getattr(RunOptions(), name)
        return parse_int_option(name, text) if name in INT_RANGES else parse_number_option(name, text)

    def _int_field(self, name: str) -> int:
        text = self.query_one(f"#{name}", Input).value.strip()
        default = getattr(RunOptions(), name)
        if not text:
            return default
        return parse_int_option(name, text)

    # ----- marking refusals -----------------------------------------------------

    def mark_invalid(self, error: OptionsError) -> Widget | None:
        """Mark the field ``error`` names (red label, tinted widget, message below); focus it."""
        self.clear_invalid()
        target = self._widget_for(error)
        self._show_error(str(error))
        if target is None:
            return None
        target.add_class("-invalid")
        if isinstance(target.parent, FieldRow):
            target.parent.refuse(True)
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
            return self.query_one("#workload", Chooser)
        if field == "params":
            if self.workload == FILE_CHOICE:
                return next(iter(self.query("#param-kv")), None)
            # The workload's spec named the parameters concerned, the one to correct first.
            return self.param_rows.field_for(getattr(error, "params", ()))
        widget_id = "repeat" if field == "repeat" else _FIELD_WIDGETS.get(field)  # repeat: not a RunOptions field
        if widget_id is None:
            return None
        return self.query_one(f"#{widget_id}")
