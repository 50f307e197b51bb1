"""The picker's building blocks: the ``Cycler`` choice widget, input validators, labelled rows.

Nothing here knows about ``RunOptions`` as a whole; :mod:`tui.app.components.picker` puts the
fields together and :mod:`tui.app.components.picker_params` builds the workload's parameter rows.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from collections.abc import Callable

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.validation import ValidationResult, Validator
from textual.widget import Widget
from textual.widgets import Label

from tui.engine.catalog import ParamError, ParamSpec
from tui.engine.options import OptionsError, RunOptions, parse_key_values

__all__ = ["Cycler", "ParamValidator", "OptionValidator", "KeyValuesValidator", "field_row", "LABEL_WIDTH"]

LABEL_WIDTH = 10
"""Columns of the field labels and the space after them (the Cycler draws its own label at this width;
compile_lab.tcss's ``.field-label`` and the margins under the labels are as wide)."""


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

        def __init__(self, cycler: Cycler, value: Any) -> None:
            super().__init__()
            self.cycler = cycler
            """The Cycler that changed."""
            self.value = value
            """Its new value."""

        @property
        def control(self) -> Cycler:
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

    def watch_has_focus(self, _has_focus: bool) -> None:
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


class OptionValidator(Validator):
    """Validates one RunOptions field typed as text, with the engine's own rule and message (empty = the default).

    ``parse(name, text)`` turns the text into the field's value (OptionsError when it cannot);
    ``RunOptions.validated`` then judges it on otherwise default options, as a Run would.
    """

    def __init__(self, name: str, parse: Callable[[str, str], Any]) -> None:
        super().__init__()
        self.name = name
        self.parse = parse

    def validate(self, value: str) -> ValidationResult:
        """Success for an empty value or one a run accepts."""
        if not value.strip():
            return self.success()
        try:
            replace(RunOptions(), **{self.name: self.parse(self.name, value.strip())}).validated()
        except OptionsError as exc:
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


def field_row(label: str, widget: Widget, *, row_id: str | None = None, classes: str = "",
              unit: str = "") -> Horizontal:
    """One labelled picker row, with the value's ``unit`` after it (the picker's CSS styles ``.field``,
    ``.field-label`` and ``.field-unit``)."""
    return Horizontal(
        Label(label, classes="field-label"),
        widget,
        *([Label(unit, classes="field-unit")] if unit else []),
        id=row_id,
        classes=f"field {classes}".strip(),
    )
