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

from tui.engine.catalog import ParamError, ParamSpec
from tui.engine.options import OptionsError, RunOptions, parse_key_values

__all__ = ["Cycler", "ParamValidator", "OptionValidator", "KeyValuesValidator", "field_row", "FieldRow", "LABEL_WIDTH"]

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


class FieldRow(Horizontal):
    """One labelled picker row, ``label  [field]  unit``: the row draws its label and unit itself, under its field.

    Label widgets for them would be a third of the picker's widgets, and each widget costs the app's
    start its styling, layout and drawing (docs/BENCHMARKS.md §12); the row's own render draws both
    for nothing more. A row with the ``-refused`` class draws its label as the field a run refused.
    """

    COMPONENT_CLASSES = {"field-row--label", "field-row--refused"}

    DEFAULT_CSS = f"""
    FieldRow {{
        height: 1;
    }}
    FieldRow > * {{
        width: 1fr;
        margin-left: {LABEL_WIDTH};
    }}
    FieldRow > .field-row--label {{
        color: $text-muted;
    }}
    FieldRow > .field-row--refused {{
        color: $error;
        text-style: bold reverse;
    }}
    """

    def __init__(self, label: str, widget: Widget, *, id: str | None = None, classes: str = "",
                 unit: str = "") -> None:
        super().__init__(widget, id=id, classes=f"field {classes}".strip())
        self.label = label
        """The field's name, left of it."""
        self.unit = unit
        """The value's unit, right of it ('' for none)."""
        if unit:
            widget.styles.margin = (0, len(unit) + 1, 0, LABEL_WIDTH)  # the unit's columns and a space

    def refuse(self, refused: bool) -> None:
        """Draw the label as the field a run refused (``refused``), or as a plain label again."""
        if self.has_class("-refused") != refused:
            self.set_class(refused, "-refused")
            self.refresh()  # no rule of the row's own styles changes: its label is in its render

    def render(self) -> Text:
        """The label at the left, the unit at the right; the field covers the columns between."""
        label_style = "field-row--refused" if self.has_class("-refused") else "field-row--label"
        text = Text(no_wrap=True, overflow="crop")
        text.append(self.label[:LABEL_WIDTH].ljust(LABEL_WIDTH), style=self.get_component_rich_style(label_style))
        if self.unit:
            text.append(" " * max(0, self.size.width - LABEL_WIDTH - len(self.unit)))
            text.append(self.unit, style=self.get_component_rich_style("field-row--label"))
        return text


def field_row(label: str, widget: Widget, *, row_id: str | None = None, classes: str = "",
              unit: str = "") -> FieldRow:
    """One labelled picker row around ``widget`` (:class:`FieldRow`), with the value's ``unit`` after it."""
    return FieldRow(label, widget, id=row_id, classes=classes, unit=unit)
