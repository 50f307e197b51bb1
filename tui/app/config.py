"""The app's small persistent config: last used options, sweep choices and theme.

Stored as JSON in :func:`tui.paths.config_file` (``COMPILE_LAB_HOME`` overrides the location,
which is how tests isolate it). Reading never raises: a missing file gives the defaults, and
a corrupt or unreadable one gives the defaults plus a one-line warning for the app to show.
Writing is atomic (temporary file + rename) so a crash never leaves half a file behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from tui import paths
from tui.engine.options import OptionsError, RunOptions

__all__ = [
    "AppConfig", "load_config", "save_config", "resolve_theme", "DEFAULT_THEME", "THEME_ALIASES", "CONFIG_VERSION",
]

CONFIG_VERSION = 1
DEFAULT_THEME = "textual-dark"

THEME_ALIASES = {"textual-ansi": "ansi-dark", "ansi": "ansi-dark"}
"""Theme names accepted on the command line that Textual 8 spells differently."""


def resolve_theme(name: str | None, available: Iterable[str]) -> str:
    """The Textual theme for ``name`` (aliases applied); ValueError naming the choices."""
    if not name:
        return DEFAULT_THEME
    name = THEME_ALIASES.get(name, name)
    names = sorted(available)
    if name not in names:
        raise ValueError(f"theme {name!r} is unknown (available: {', '.join(names)}, textual-ansi)")
    return name


@dataclass
class AppConfig:
    """What the app remembers between sessions."""

    options: RunOptions = field(default_factory=RunOptions)
    """The last options the user ran (raw, as typed: parameters left empty stay absent)."""
    theme: str = DEFAULT_THEME
    """The Textual theme name."""
    sweep: dict[str, list[Any]] = field(default_factory=dict)
    """The last sweep choices: ``modes``, ``fullgraphs``, ``dynamics``, ``backends``, ``dtypes``."""
    show_history: bool = True
    """Whether previous sessions' runs are shown in the results table."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "version": CONFIG_VERSION,
            "theme": self.theme,
            "options": self.options.to_dict(),
            "sweep": self.sweep,
            "show_history": self.show_history,
        }

    @classmethod
    def from_dict(cls, data: Any) -> "AppConfig":
        """Build from a dict; ValueError (or OptionsError) when anything is the wrong shape."""
        if not isinstance(data, dict):
            raise ValueError("the top level is not an object")
        theme = data.get("theme", DEFAULT_THEME)
        if not isinstance(theme, str) or not theme:
            raise ValueError("theme is not a name")
        raw_options = data.get("options", {})
        if not isinstance(raw_options, dict):
            raise ValueError("options is not an object")
        options = RunOptions.from_dict(raw_options)
        if not isinstance(options.params, dict):
            raise ValueError("options.params is not an object")
        sweep = data.get("sweep", {})
        if not isinstance(sweep, dict) or not all(isinstance(v, list) for v in sweep.values()):
            raise ValueError("sweep is not an object of lists")
        show_history = data.get("show_history", True)
        if not isinstance(show_history, bool):
            raise ValueError("show_history is not true/false")
        return cls(options=options, theme=theme, sweep=sweep, show_history=show_history)


def load_config(path: Path | None = None) -> tuple[AppConfig, str | None]:
    """Read the config: ``(config, None)``, or ``(defaults, "why it was ignored")``."""
    path = path or paths.config_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return AppConfig(), None
    except OSError as exc:
        return AppConfig(), f"config {path} could not be read ({exc.strerror or exc}); using defaults"
    try:
        return AppConfig.from_dict(json.loads(text)), None
    except (ValueError, TypeError, OptionsError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return AppConfig(), f"config {path} is corrupt ({reason}); using defaults"


def save_config(config: AppConfig, path: Path | None = None) -> None:
    """Write the config atomically; OSError propagates to the caller (the app shows it)."""
    path = path or paths.config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = json.dumps(config.to_dict(), indent=2, sort_keys=True)
    fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(payload + "\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
