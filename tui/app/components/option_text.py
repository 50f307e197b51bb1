"""The options without a picker field, in words: the line under the picker and a re-run's full options.

Settings that start a program (``python``, inductor options) are marked: the app asks before the
first run that uses them (:mod:`tui.app.trust`).
"""

from __future__ import annotations

import dataclasses
import json

from rich.text import Text
from textual.widgets import Static

from tui.engine.options import RunOptions
from tui.engine.store.stored_options import code_settings, hidden_settings
from tui.typed import printable

__all__ = ["also_line", "also_text", "options_table"]


def also_text(options: RunOptions) -> Text:
    """``also: seed=7 python=/x/y`` (empty when every hidden option is its default).

    Settings that start a program are bold.
    """
    pairs = hidden_settings(options)
    if not pairs:
        return Text()
    code = {name for name, _ in code_settings(options)}
    text = Text("also:", style="dim")
    for name, value in pairs:
        text.append(" ")
        text.append(f"{name}={printable(value)}", style="bold" if name in code else "")
    return text


def also_line(options: RunOptions) -> Static:
    """The picker's ``#picker-also`` line for the options it starts from (not displayed when empty)."""
    text = also_text(options)
    line = Static(text, id="picker-also", markup=False)
    line.display = bool(text.plain)
    return line


def options_table(options: RunOptions) -> str:
    """Every option of a run, one ``name  value`` line each; settings that start a program marked."""
    code = dict(code_settings(options))
    width = max(len(f.name) for f in dataclasses.fields(options))
    lines = []
    for spec in dataclasses.fields(options):
        value = getattr(options, spec.name)
        if spec.name == "inductor_options" and value:
            lines += [f"{name:<{width}}  {printable(shown)}   <- starts a program" for name, shown in code.items()
                      if name != "python"]  # fmt: skip
            continue
        mark = "   <- starts a program" if spec.name in code else ""
        lines.append(f"{spec.name:<{width}}  {printable(_shown(spec.name, value))}{mark}")
    return "\n".join(lines)


def _shown(name: str, value: object) -> str:
    """An option's value as the table shows it: text as it is, ``auto``/``unset`` for None, else JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return "auto" if name == "dynamic" else "unset"
    return json.dumps(value, sort_keys=True, default=repr)
