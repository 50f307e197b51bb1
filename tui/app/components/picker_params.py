"""The picker's parameter rows: one input per ``ParamSpec`` of the chosen workload.

A built-in workload gets one validated input per parameter, its placeholder the default for
the chosen device; a Python file gets one ``key=value,...`` input. Values typed survive a
switch to the Python file and back, and are forgotten on a switch between built-ins.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable

from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Input

from tui.app.components.ordered_input import OrderedInput
from tui.app.components.picker_fields import FieldRow, KeyValuesValidator, ParamValidator, field_row
from tui.engine.catalog import WORKLOADS, ParamError
from tui.engine.options import OptionsError, parse_key_values

__all__ = ["ParamRows", "FILE_CHOICE"]

FILE_CHOICE = "__python_file__"
"""The workload select's value for "Python file..." (the path comes from its own input)."""


class ParamRows(Vertical):
    """The parameter inputs of one workload (``FILE_CHOICE``: a ``key=value`` input).

    :meth:`show` swaps them for another workload's and returns once the new rows are mounted;
    :attr:`workload` says whose rows are mounted now.
    """

    def __init__(self, workload: str, values: dict[str, Any], device: str, *, id: str | None = None) -> None:
        """``values``: parameter values to start with (shown as typed text); ``device``: for the placeholders."""
        super().__init__(id=id)
        self._workload = workload
        self._values = dict(values)
        self._device = device

    @property
    def workload(self) -> str:
        """The workload whose rows are mounted (``FILE_CHOICE`` for a Python file)."""
        return self._workload

    def compose(self) -> Iterable[FieldRow]:
        """The first workload's rows."""
        return self._rows(self._workload)

    def _rows(self, workload: str) -> list[FieldRow]:
        if workload == FILE_CHOICE:
            initial = ",".join(f"{k}={v}" for k, v in self._values.items())
            return [
                field_row(
                    "params",
                    OrderedInput(initial, placeholder="key=value,...", compact=True, id="param-kv",
                          classes="param-input", validators=[KeyValuesValidator()]),
                )
            ]
        rows = []
        for param in WORKLOADS[workload].params:
            value = self._values.get(param.name, "")
            rows.append(
                field_row(
                    param.name,
                    OrderedInput(
                        "" if value in ("", None) else str(value),
                        placeholder=str(param.default_for(self._device)),
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

    async def show(self, workload: str) -> None:
        """Replace the rows with ``workload``'s; returns when they are mounted."""
        self._remember()
        if workload != self._workload and FILE_CHOICE not in (workload, self._workload):
            self._values = {}  # another built-in's parameters mean something else
        await self.remove_children()
        await self.mount_all(self._rows(workload))
        self._workload = workload

    def _remember(self) -> None:
        for field in self.query(".param-input").results(Input):
            name = field.id.removeprefix("param-") if field.id else ""
            if field.value.strip():
                self._values[name] = field.value.strip()
            else:
                self._values.pop(name, None)

    def set_device(self, device: str) -> None:
        """Placeholders show ``device``'s defaults (rows built later too)."""
        self._device = device
        if self._workload not in WORKLOADS:
            return
        for param in WORKLOADS[self._workload].params:
            for field in self.query(f"#param-{param.name}").results(Input):
                field.placeholder = str(param.default_for(device))

    def read(self, workload: str) -> dict[str, Any]:
        """The values typed for ``workload`` (empty inputs left out); OptionsError when one is unparseable."""
        if workload == FILE_CHOICE:
            params: dict[str, Any] = {}
            for field in self.query("#param-kv").results(Input):
                params = parse_key_values(field.value, "params")
            return params
        params = {}
        for param in WORKLOADS[workload].params:
            for field in self.query(f"#param-{param.name}").results(Input):
                text = field.value.strip()
                if not text:
                    continue
                try:
                    params[param.name] = param.coerce(text)
                except ParamError as exc:
                    raise OptionsError("params", str(exc), params=exc.params) from None
        return params

    def field_for(self, names: Iterable[str]) -> Widget | None:
        """The input of the first of ``names`` shown here, else the first input (None when there is none)."""
        for name in names:
            found = list(self.query(f"#param-{name}")) if name.isidentifier() else []
            if found:
                return found[0]
        return next(iter(self.query(".param-input")), None)
