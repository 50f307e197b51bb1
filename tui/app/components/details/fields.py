"""How the details screen shows a field: a human label, a unit and rounding (the raw data stays in the JSON).

Every payload a person reads here (:mod:`tui.engine.payloads`, the run's telemetry) is shown
through a table of :class:`Field` s, so an internal name never reaches the screen and one
number has one format everywhere on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Iterable

from rich.table import Table
from rich.text import Text

from tui.present.format import fmt_mib, fmt_seconds
from tui.typed import printable

__all__ = [
    "Field", "kv_table", "field_rows", "section", "value_text", "count", "seconds", "mib", "mhz", "watts",
    "celsius", "joules", "cores", "yes_no", "words",
]  # fmt: skip

Format = Callable[[Any], "str | Text | None"]


@dataclass(frozen=True)
class Field:
    """One shown field: the attribute it reads, its label, how its value looks (None: left out)."""

    name: str
    label: str
    show: Format = lambda value: value


def section(title: str) -> Text:
    """A section heading inside a tab."""
    return Text(f"\n{title}", style="bold underline")


def value_text(value: Any) -> Text:
    """A value as text: n/a for unknown, yes/no, lists one per line, control characters shown."""
    if isinstance(value, Text):
        return value
    if value is None:
        return Text("n/a", style="dim")
    if isinstance(value, bool):
        return Text("yes" if value else "no")
    if isinstance(value, float):
        return Text(f"{value:.4g}")
    if isinstance(value, (list, tuple)):
        if not value:
            return Text("none", style="dim")
        return Text(printable("\n".join(str(v) for v in value)))
    if isinstance(value, dict):
        return Text(printable(", ".join(f"{k}={v}" for k, v in sorted(value.items()))) or "none",
                    style="" if value else "dim")
    return Text(printable(str(value)))


def kv_table(items: Iterable[tuple[str, Any]]) -> Table:
    """Label / value rows."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in items:
        table.add_row(str(key), value_text(value))
    return table


def field_rows(data: Any, fields: Iterable[Field], keep_unknown: bool = False) -> list[tuple[str, Any]]:
    """``(label, shown value)`` for each field of ``data`` (unknown ones left out unless ``keep_unknown``)."""
    rows = []
    for spec in fields:
        value = getattr(data, spec.name, None)
        shown = None if value is None else spec.show(value)
        if shown is None and not keep_unknown:
            continue
        rows.append((spec.label, shown))
    return rows


def count(value: Any) -> str | None:
    """An integer count."""
    return None if value is None else f"{int(value):,}"




def seconds(value: Any) -> str | None:
    """Seconds."""
    return None if value is None else f"{fmt_seconds(value)} s"


def mib(value: Any) -> str | None:
    """MiB / GiB."""
    return None if value is None else fmt_mib(value)


def mhz(value: Any) -> str | None:
    """A clock in MHz."""
    return None if value is None else f"{float(value):.0f} MHz"


def watts(value: Any) -> str | None:
    """Power in W."""
    return None if value is None else f"{float(value):.0f} W"


def celsius(value: Any) -> str | None:
    """A temperature."""
    return None if value is None else f"{float(value):.0f} °C"


def joules(value: Any) -> str | None:
    """Energy in J."""
    return None if value is None else f"{float(value):.3g} J"


def cores(value: Any) -> str | None:
    """CPU cores busy (a mean)."""
    return None if value is None else f"{float(value):.1f} cores"


def yes_no(value: Any) -> str | None:
    """A flag."""
    return None if value is None else ("yes" if value else "no")


def words(value: Any) -> str | Text | None:
    """A list, one item per line (``none`` when empty)."""
    return value_text(tuple(value))
