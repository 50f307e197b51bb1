"""A missing export directory, made on request: only the directories the user typed, never through a link.

The app asks before an export to a directory that does not exist (``E``); on a yes,
:func:`create_directory` makes the missing directories of the typed path one at a time. Each
component the user typed is opened with ``O_NOFOLLOW`` relative to the one before it (``dir_fd``),
so a symbolic link among them, or one put in place of a directory while they are made, is refused
rather than followed, and nothing is made outside the typed path: no ``..`` after a missing
directory, no parent of what was typed. What the user did not type is not judged: ``~`` (the home
directory) and, for a relative path, the current directory.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from tui.engine.store.export import ExportError

__all__ = ["missing_directory", "create_directory", "DirectoryRefused"]

_OPEN = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


class DirectoryRefused(ExportError):
    """The typed directory cannot be made safely: ``<path>: why (allowed: ...)``, one line."""


def missing_directory(typed: str) -> Path | None:
    """The typed directory (``~`` expanded) when it does not exist yet, else None (it exists, or is no directory)."""
    path = Path(typed).expanduser()
    return None if os.path.lexists(path) else path


def _start(typed: str) -> tuple[str, list[str]]:
    """(the directory the typed parts start from, the parts the user typed)."""
    parts = [part for part in typed.split(os.sep) if part]
    if typed.startswith(os.sep):
        return os.sep, parts
    if parts and (parts[0] == "~" or parts[0].startswith("~")):
        home = os.path.expanduser(parts[0])
        if home != parts[0]:
            return home, parts[1:]
    return os.curdir, parts


def create_directory(typed: str) -> Path:
    """Make the missing directories of ``typed``; the directory as a Path (DirectoryRefused when it may not be made).

    An existing component the user typed must be a directory and no symbolic link; each missing
    one is made with ``mkdir`` inside the one before it, opened without following links.
    """
    start, parts = _start(typed)
    shown = typed
    if not parts:
        raise DirectoryRefused(f"{shown or 'the path'}: no directory to make (allowed: a directory path)")
    fd = os.open(start, _OPEN)
    made = False
    try:
        for index, part in enumerate(parts):
            prefix = (
                os.path.join(start, *parts[: index + 1]) if start != os.curdir else os.path.join(*parts[: index + 1])
            )
            if part in (os.curdir, os.pardir) and made:
                raise DirectoryRefused(f"{shown}: {part!r} after a directory still to be made "
                                       "(allowed: a path whose new directories are named one by one)")
            try:
                next_fd = os.open(part, _OPEN | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass  # made at the same moment by someone else: opened, and judged, below
                made = True
                next_fd = _open_made(part, fd, prefix, shown)
            except OSError as exc:
                raise _refusal(exc, part, fd, prefix, shown) from None
            os.close(fd)
            fd = next_fd
    except DirectoryRefused:
        raise
    except OSError as exc:
        raise DirectoryRefused(f"{shown}: cannot make it: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return Path(typed).expanduser()


def _open_made(part: str, fd: int, prefix: str, shown: str) -> int:
    try:
        return os.open(part, _OPEN | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        raise _refusal(exc, part, fd, prefix, shown) from None


def _refusal(exc: OSError, part: str, fd: int, prefix: str, shown: str) -> DirectoryRefused:
    """Why a typed component could not be opened as a directory, in one line."""
    try:
        is_link = os.path.islink(prefix) or _is_link_at(part, fd)
    except OSError:
        is_link = False
    if is_link:
        return DirectoryRefused(f"{shown}: {prefix} is a symbolic link; compile-lab makes no directory through one "
                                "(allowed: a path without links, or make the directory yourself)")
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return DirectoryRefused(f"{shown}: {prefix} is not a directory (allowed: a directory path)")
    return DirectoryRefused(f"{shown}: cannot make it: {prefix}: {exc.strerror or exc}")


def _is_link_at(part: str, fd: int) -> bool:
    import stat

    return stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode)
