"""Where an export goes and how its notice reads: the paths (checked before anything is written), no textual.

``e`` exports to the default exports directory; ``E`` to a directory or a ``.csv`` path the user types
(:mod:`tui.app.exporting` asks; :meth:`tui.app.controller.LabController.write_export` writes).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tui.app.layout import NOTICE_LINE_FRAME, notices_in_line
from tui.present.format import fold_path

__all__ = ["export_paths", "export_directory", "directory_to_make", "file_to_replace", "exported_message",
           "export_labels", "notice_text_width", "EXPORTED_TITLE"]

#: Columns of a toast's text: Textual's Toast is 60 wide, at most half of its rack (the screen
#: less the rack's scroll bar), less its padding (1 each side) and its coloured left border.
TOAST_WIDTH, TOAST_MAX_SHARE, TOAST_RACK_GUTTER, TOAST_FRAME = 60, 0.5, 2, 3


def _is_csv(target: str) -> bool:
    """The target names the first export format's file (``report.csv``), not a directory."""
    from tui.engine.store.export import default_formats

    name, suffix = Path(target).expanduser().name.lower(), default_formats()[0].suffix.lower()
    return name.endswith(suffix) and len(name) > len(suffix)


def export_list(words: list[str]) -> str:
    """``a, b and c``."""
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def export_labels() -> str:
    """The files an export writes, as the dialog and the palette name them (``CSV, JSON and raw ... CSV``)."""
    from tui.engine.store.export import default_formats

    return export_list([f.label for f in default_formats()])


def export_directory(target: str | None) -> str | None:
    """The directory a typed target names, as typed: itself, or a ``.csv`` path's folder (None: the default)."""
    if not target:
        return None
    if _is_csv(target):
        return os.path.dirname(target) or None  # a bare file name: the current directory
    return target


def directory_to_make(target: str | None) -> Path | None:
    """The typed directory when it does not exist yet (the app asks before making it), else None.

    ExportTargetError first for a directory inside compile-lab's own data, which is never offered.
    """
    from tui.engine.store.export import ExportTargetError, data_file_role
    from tui.engine.store.export_dir import missing_directory

    directory = export_directory(target)
    if directory is None:
        return None
    role = data_file_role(Path(directory).expanduser())
    if role is not None:
        raise ExportTargetError(Path(directory).expanduser(), role)
    return missing_directory(directory)


def file_to_replace(target: str | None) -> Path | None:
    """The typed ``.csv`` file when it exists and is not a compile-lab export (the app asks before replacing it:
    the user may have typed the name of a file of their own), else None."""
    from tui.engine.store.export import default_formats, ours

    if not target or not _is_csv(target):
        return None
    path = Path(target).expanduser()
    if path.is_symlink() or not path.is_file():  # a link, a device, a pipe: refused as it is written, unasked
        return None
    return None if ours(default_formats()[0], path) else path


def export_paths(target: str | None, defaults: Any, *, make_directory: bool = False) -> dict[str, Path]:
    """The export's files (one per default format): defaults, in a typed directory, or next to a typed ``.csv`` path.

    Every one is checked before anything is written (ExportTargetError: a link, a device, a pipe,
    compile-lab's own data, a directory this user cannot write: the command line's rule,
    :func:`~tui.engine.store.export.check_output`), so an export is written whole or not at all; a typed directory
    inside compile-lab's data is refused before it is made. A missing typed directory is made only
    with ``make_directory`` (the user said yes), else ExportError names it.
    """
    from tui.engine.store.export import (
        ExportError, check_output, default_export_paths, default_formats, export_files,
    )
    from tui.engine.store.export_dir import create_directory

    missing = directory_to_make(target)
    if missing is not None:
        if not make_directory:
            raise ExportError(f"{export_directory(target)}: no such directory (allowed: an existing directory; "
                              "E offers to make it)")
        create_directory(export_directory(target) or "")
    typed_csv = target is not None and _is_csv(target)  # "" names nothing: the defaults
    if not target:
        destinations = defaults()
    elif typed_csv:
        path = Path(target).expanduser()
        first = default_formats()[0]
        destinations = export_files(path.with_name(path.name[: -len(first.suffix)]))
        destinations[first.name] = path  # as typed (``Report.CSV`` stays so)
    else:
        destinations = default_export_paths(directory=Path(target).expanduser())  # names new in that directory
    for destination in destinations.values():
        check_output(destination)
    if typed_csv:
        _keep_what_is_not_ours(destinations, default_formats()[0].name)
    return destinations


def _keep_what_is_not_ours(destinations: dict[str, Path], typed: str) -> None:
    """Refuse a file beside the typed one that is not an export of its format (ExportTargetError): the user named
    the ``.csv``, not the ``.json`` or ``-raw.csv`` next to it, so only compile-lab's own export there is replaced."""
    from tui.engine.atomic import ExportTargetError
    from tui.engine.store.export import default_formats, ours

    for fmt in default_formats():
        path = destinations[fmt.name]
        if fmt.name != typed and not ours(fmt, path):
            raise ExportTargetError(path, f"a file beside {destinations[typed].name} that is not a compile-lab "
                                          f"{fmt.label} export, left alone", "another name, whose neighbours are free "
                                          "or compile-lab's exports")


def notice_text_width(width: int, height: int) -> int:
    """Columns of a notice's text on a terminal of ``width`` x ``height``: the notice line's less its padding
    where notices go there (:func:`~tui.app.layout.notices_in_line`), else a toast's."""
    if notices_in_line(width, height):
        return width - NOTICE_LINE_FRAME
    return min(TOAST_WIDTH, int((width - TOAST_RACK_GUTTER) * TOAST_MAX_SHARE)) - TOAST_FRAME


EXPORTED_TITLE = "Exported"
"""The export notice's title (at narrow sizes the notice line puts it before the first line: ``Exported: ``)."""


def exported_message(runs: int, csv_rows: int, written: Sequence[str], skipped: int, text_width: int) -> str:
    """The export notice's text, each line within ``text_width``: what the files hold, where they went, their names.

    ``runs``: the runs written (every process: the JSON's runs, the raw CSV's); ``csv_rows``: the summary CSV's
    rows (a configuration repeated across processes is one, so fewer than the runs when rows of earlier sessions
    show a group's processes apart); ``written``: the files' paths. Then the directory (its folders folded, its
    own name whole) and the files' names: all of them where they fit, else the first and the others' endings
    after ``…`` (the name they share).
    """
    names = [os.path.basename(path) for path in written]
    count = f"{len(names)} files" if len(names) != 1 else "1 file"
    room = text_width - len(EXPORTED_TITLE) - 2  # the notice line's title goes before the first line
    first = f"{runs} run(s) -> {count}"
    notes = [f"{csv_rows} CSV row(s): one per configuration"] if csv_rows != runs else []
    if skipped:
        notes.append(f"{skipped} unfinished row(s) skipped")
    line = f"{first} ({'; '.join(notes)}) in:" if notes else f"{first} in:"
    if len(line) > room and csv_rows != runs:  # the explanation goes first, the counts stay
        notes[0] = f"{csv_rows} CSV row(s)"
        line = f"{first} ({'; '.join(notes)}) in:"
    directory = os.path.dirname(os.path.abspath(written[0])) if written else ""
    return "\n".join([line, fold_path(directory, text_width), _names(names, text_width)])


def _names(names: list[str], width: int) -> str:
    """``a.csv, a.json, a-raw.csv`` when that fits ``width``, else ``a.csv, ….json, …-raw.csv``."""
    whole = ", ".join(names)
    if len(whole) <= width or len(names) < 2:
        return whole
    shared = os.path.commonprefix(names)
    return ", ".join([names[0], *(f"…{name[len(shared):]}" if shared else name for name in names[1:])])
