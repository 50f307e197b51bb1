"""The app's small persistent config: last used options, sweep choices, theme and the table's columns.

Stored as JSON in :func:`tui.paths.config_file` (``COMPILE_LAB_HOME`` overrides the location,
which is how tests isolate it). Reading never raises and never blocks: a missing file gives the
defaults; an unreadable file, one that is not UTF-8, not JSON or not an object, or larger than
:data:`CONFIG_MAX_BYTES` gives the defaults plus a warning naming the file (and the line, for JSON),
and is renamed to ``config.json.bad-<date>`` so that the user's file is never saved over (a pipe,
device or directory there is left as it is, and not saved over); in a readable one every setting is
checked on its own (the run options by :func:`tui.engine.store.stored_options.decode_options`), and a bad
one takes its default with a line naming the file and the field. The app always starts.
Writing is atomic (temporary file + rename) so a crash never leaves half a file behind; it keeps the
mode of the file it replaces, and checks that file first: one changed by hand into something that
does not parse is kept aside too.
"""

from __future__ import annotations

import errno
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from collections.abc import Iterable

from tui import paths
from tui.app.table_columns import decode_choice, encode_choice
from tui.engine.atomic import ExportError, atomic_writer
from tui.engine.catalog import echo
from tui.engine.input_file import InputFileError, JSONError, load_json, read_regular
from tui.engine.options import RunOptions
from tui.engine.store.repeats import DEFAULT_REPEAT
from tui.engine.store.stored_options import check_hidden, decode_options
from tui.typed import printable

__all__ = [
    "AppConfig", "load_config", "save_config", "keep_aside", "resolve_theme", "DEFAULT_THEME", "THEME_ALIASES",
    "CONFIG_VERSION", "CONFIG_MAX_BYTES",
]

CONFIG_VERSION = 2
"""2: the repeat default became ``auto`` (a version-1 file's ``repeat: 1`` was the old default: read as auto)."""
CONFIG_MAX_BYTES = 1 << 20
"""A config file larger than this (1 MiB) is no config the app wrote: refused like a corrupt one."""
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
    repeat: int | str = DEFAULT_REPEAT
    """Processes per configuration (the picker's and the sweep's repeat field), or ``"auto"`` (the default:
    more processes only for a launch-bound configuration, tui.engine.store.repeats)."""
    columns: dict[str, bool] = field(default_factory=dict)
    """The results table's columns the user showed or hid (column key -> shown), only those that differ
    from their default (tui.app.table_columns), so a column added later shows as it is meant to."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "version": CONFIG_VERSION,
            "theme": self.theme,
            "options": self.options.to_dict(),
            "sweep": self.sweep,
            "show_history": self.show_history,
            "repeat": self.repeat,
            "columns": self.columns,
        }

    @classmethod
    def decode(cls, data: Any) -> tuple[AppConfig, list[str]]:
        """Build from the parsed JSON: ``(config, problems)``, every field checked on its own.

        A field of the wrong type, an unknown key, a run option the run would refuse and has no
        picker field to correct it (``check_hidden``) each take the default and add one problem
        ``field: why``; the rest is kept. Never raises.
        """
        if not isinstance(data, dict):
            return cls(), [f"the top level is {_kind(data)}, not an object (defaults used)"]
        problems = [f"{echo(printable(str(key)), plain=True)}: unknown setting (ignored)"
                    for key in data if key not in _KEYS]  # fmt: skip
        config = cls()
        theme = data.get("theme", DEFAULT_THEME)
        if isinstance(theme, str) and theme:
            config.theme = printable(theme)
        else:
            problems.append(f"theme: expected a theme name, got {echo(theme)} (default used)")
        options, found = decode_options(data.get("options", {}), where="options")
        options, refused = check_hidden(options, where="options")
        problems += [f"{problem} (default used)" for problem in found + refused]
        config.options = options
        config.sweep = _sweep(data.get("sweep", {}), problems)
        show_history = data.get("show_history", True)
        if isinstance(show_history, bool):
            config.show_history = show_history
        else:
            problems.append(f"show_history: expected true or false, got {echo(show_history)} (default used)")
        config.repeat = _repeat(data.get("repeat", DEFAULT_REPEAT), problems)
        if data.get("version", 1) == 1 and config.repeat == 1:
            config.repeat = DEFAULT_REPEAT  # version 1 saved its default, 1, whether or not the user chose it
        choice, found = decode_choice(data.get("columns", {}))
        config.columns = encode_choice(choice)
        problems += found
        return config, problems


_KEYS = ("version", "theme", "options", "sweep", "show_history", "repeat", "columns")
_SWEEP_KEYS = ("modes", "fullgraphs", "dynamics", "backends", "dtypes", "precisions", "sizes")
_MAX_SHOWN = 6
"""Problems listed in the warning; the rest are counted."""


def _sweep(value: Any, problems: list[str]) -> dict[str, list[Any]]:
    """The sweep choices: each known axis a list of numbers, text or true/false; others dropped."""
    if not isinstance(value, dict):
        problems.append(f"sweep: expected an object, got {_kind(value)} (default used)")
        return {}
    sweep: dict[str, list[Any]] = {}
    for key, items in value.items():
        name = echo(printable(str(key)), plain=True)
        if key not in _SWEEP_KEYS:
            problems.append(f"sweep.{name}: unknown sweep axis (ignored)")
        elif not isinstance(items, list) or not all(isinstance(v, (str, int, float, bool)) for v in items):
            problems.append(f"sweep.{name}: expected a list of values, got {echo(items)} (default used)")
        else:
            sweep[key] = [printable(v) if isinstance(v, str) else v for v in items]
    return sweep


def _repeat(value: Any, problems: list[str]) -> int | str:
    from tui.engine.store.repeats import parse_repeat

    try:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ValueError(f"{echo(value)} is not allowed")
        return parse_repeat(value)
    except ValueError as exc:
        problems.append(f"repeat: {exc} (default used)")
        return DEFAULT_REPEAT


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


class _Unusable(Exception):
    """The config file cannot be used at all: ``why`` follows its path in the warning (``is corrupt (...)``).

    ``regular``: it is a regular file (it can be kept aside); else a directory, pipe, device... left as it is.
    """

    def __init__(self, why: str, regular: bool = True) -> None:
        super().__init__(why)
        self.why, self.regular = why, regular


def _parse(path: Path) -> Any:
    """The config's JSON object; FileNotFoundError when there is none, _Unusable saying why it cannot be used.

    Read as any input file (:func:`~tui.engine.input_file.read_regular`): a pipe or a device at the path is
    refused before it is opened, so the app never blocks on it.
    """
    try:
        raw = read_regular(path, CONFIG_MAX_BYTES)
    except FileNotFoundError:
        raise
    except InputFileError as exc:
        raise _Unusable(str(exc), regular=exc.kind is None) from None
    except OSError as exc:
        raise _Unusable(f"could not be read ({exc.strerror or exc})") from None
    try:
        data = load_json(raw)
    except JSONError as exc:  # not UTF-8, a syntax error (line and column), a number too long, nesting too deep
        raise _Unusable(f"is corrupt ({exc})") from None  # load_json's own words, no text of the file
    if not isinstance(data, dict):
        raise _Unusable(f"is not a config (the top level is {_kind(data)}, not an object)")
    return data


def keep_aside(path: Path) -> Path:
    """Rename the file at ``path`` to ``<name>.bad-<UTC date>`` beside it (``-2``... when taken) and return the
    new path: its bytes, mode and inode stay as they were. OSError when it cannot be renamed."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    for attempt in range(1, 100):
        aside = path.with_name(f"{path.name}.bad-{stamp}" + (f"-{attempt}" if attempt > 1 else ""))
        if not os.path.lexists(aside):
            os.rename(path, aside)
            return aside
    raise FileExistsError(errno.EEXIST, "too many files kept aside already", str(path))


def _set_aside(path: Path, problem: _Unusable) -> str:
    """Keep an unusable config out of the way of the next save; the end of the warning that says so."""
    if not problem.regular:
        return "it is left as it is and not saved over"
    try:
        aside = keep_aside(path)
    except OSError as exc:
        return f"it could not be kept aside ({exc.strerror or exc}), so it is not saved over"
    return f"the file is kept as {aside.name}"


def load_config(path: Path | None = None) -> tuple[AppConfig, str | None]:
    """Read the config: ``(config, None)``, or ``(config, "what was ignored, naming the file")``.

    Never raises. A file that cannot be used at all (unreadable, not UTF-8, not JSON, not an object,
    too big) gives the defaults, and is renamed to ``config.json.bad-<date>`` at once (the warning
    names it) so that no save replaces it; a directory, pipe or device there is left as it is.
    Otherwise each bad setting gives its default and one line ``config <path>: field: why``.
    """
    path = path or paths.config_file()
    try:
        data = _parse(path)
    except FileNotFoundError:
        return AppConfig(), None
    except _Unusable as problem:
        return AppConfig(), f"config {path} {problem.why}; using defaults ({_set_aside(path, problem)})"
    config, problems = AppConfig.decode(data)
    if not problems:
        return config, None
    shown = [f"config {path}: {problem}" for problem in problems[:_MAX_SHOWN]]
    if len(problems) > _MAX_SHOWN:
        shown.append(f"... and {len(problems) - _MAX_SHOWN} more")
    return config, "\n".join(shown)


def _prepare_to_replace(path: Path) -> Path | None:
    """Before ``save_config`` writes over ``path``: where a config that cannot be used was kept aside, or None.

    A config that cannot be used (changed by hand since it was read) is kept aside first; OSError when
    something that is not a regular file is there, or it cannot be kept aside.
    """
    try:
        _parse(path)
    except FileNotFoundError:
        return None
    except _Unusable as problem:
        if not problem.regular:
            raise OSError(f"config {path} {problem.why}; not saved over it") from None
        try:
            return keep_aside(path)
        except OSError as exc:
            raise OSError(f"config {path} {problem.why} and could not be kept aside ({exc.strerror or exc}); "
                          "not saved over it") from None
    return None


def _through_link(path: Path) -> Path:
    """Where the config is saved: ``path``, or where it leads when it is a link (a config kept in a dotfiles
    repository: the file there is replaced, the link kept); OSError for a link that leads nowhere."""
    if not path.is_symlink():
        return path
    real = Path(os.path.realpath(path))
    if not real.exists():
        raise OSError(f"config {path} is a link to {real}, which does not exist; not saved")
    return real


def save_config(config: AppConfig, path: Path | None = None) -> Path | None:
    """Write the config atomically (:func:`~tui.engine.atomic.atomic_writer`), keeping the mode of the one it
    replaces (0o600 for a new one); OSError propagates to the caller (the app shows it). A file there that is no
    usable config is never replaced: it is kept aside (its new path is returned, for the caller to say) or, when it
    is no regular file, refused. A config that is a link is saved where it leads (:func:`_through_link`)."""
    path = _through_link(path or paths.config_file())
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = json.dumps(config.to_dict(), indent=2, sort_keys=True)
    aside = _prepare_to_replace(path)
    try:
        with atomic_writer(path, new_mode=0o600) as handle:
            handle.write(payload + "\n")
    except ExportError as exc:  # one line, the path and the cause: the app says "config not saved: ..."
        raise OSError(str(exc)) from exc
    return aside
