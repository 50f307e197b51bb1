"""A config that cannot be read is never saved over (issue 24, item 3).

A missing comma, binary bytes, nesting too deep, a list, a file too big: the app starts with the
defaults and says so, the file is renamed to ``config.json.bad-<date>`` at once with its bytes and
mode, and quitting with ``q`` writes a new config beside it. A directory or a named pipe there is
left as it is (the app does not block on the pipe) and not saved over. A config changed by hand into
something that does not parse while the app runs is kept aside at the next save, with a notice. A
config the app replaces keeps its mode (it used to become 600).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from pathlib import Path

import pytest

from app_helpers import fake_runner, no_gpu_source, raised_notices, wait_until
from tui import paths
from tui.app import config as config_module
from tui.app.config import AppConfig, load_config, save_config
from tui.app.controller import LabController
from tui.engine.store.history import History

SIZE = (160, 48)

BROKEN = [
    pytest.param(b'{"theme": "textual-light" "show_history": false}', "is corrupt (line 1 column 27: Expecting ',' "
                 "delimiter)", id="missing-comma"),
    pytest.param(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "is corrupt (not UTF-8 text", id="binary"),
    pytest.param(b"[" * 100_000, "is corrupt (nested too deeply)", id="nested-too-deep"),
    pytest.param(b'["theme"]', "is not a config (the top level is list, not an object)", id="a-list"),
    pytest.param(b'{"theme": "' + b"x" * (1 << 20) + b'"}', "bytes (allowed: a regular file of at most 1 MiB)",
                 id="too-big"),
]


def _write_config(content: bytes, mode: int = 0o644) -> Path:
    path = paths.config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    os.chmod(path, mode)
    return path


def _kept(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.bad-*"))


async def _start_and_quit(app) -> list[str]:
    """Start the app, read its notices, quit with ``q``; the notices' texts."""
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        notices = [n.message for n in raised_notices(app)]
        app.table.focus()
        await pilot.press("q")
        await wait_until(pilot, lambda: not app.is_running, what="the app to exit")
    return notices


@pytest.mark.parametrize("content, why", BROKEN)
def test_a_config_that_does_not_parse_is_kept_aside_with_a_notice_and_never_replaced(content, why):
    """Each broken config, read and saved as the app does (its controller, without Textual; the app's start and
    ``q`` are the next test's, the same for each)."""
    path = _write_config(content, mode=0o604)
    inode = path.stat().st_ino

    lab = LabController(fake_runner("ok"), telemetry=no_gpu_source(), history=History())
    notice = lab.config_warning or ""
    lab.save_config()  # what quitting does

    [kept] = _kept(path)
    assert kept.read_bytes() == content and stat.S_IMODE(kept.stat().st_mode) == 0o604 and kept.stat().st_ino == inode
    assert notice.startswith(f"config {path}"), notice
    assert why in notice and notice.endswith(f"; using defaults (the file is kept as {kept.name})"), notice
    assert isinstance(json.loads(path.read_text()), dict)  # the save wrote a new config beside it


@pytest.mark.parametrize("content, why", [param for param in BROKEN if param.id == "missing-comma"])
async def test_the_app_keeps_a_config_that_does_not_parse_aside_and_quitting_saves_a_new_one(make_app, content, why):
    path = _write_config(content, mode=0o604)
    inode = path.stat().st_ino

    notices = await _start_and_quit(make_app())

    [kept] = _kept(path)
    assert kept.read_bytes() == content and stat.S_IMODE(kept.stat().st_mode) == 0o604 and kept.stat().st_ino == inode
    [notice] = [n for n in notices if n.startswith(f"config {path}")]
    assert why in notice and notice.endswith(f"; using defaults (the file is kept as {kept.name})"), notice
    assert isinstance(json.loads(path.read_text()), dict)  # the quit saved a new config beside it


def _made_within(seconds: float, make, fifo: Path):
    """``make()``'s app, failing the test (not hanging it) when making it blocks on reading ``fifo``."""
    made: list = []
    thread = threading.Thread(target=lambda: made.append(make()), daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the reader gets its end of file and lets go
        pytest.fail(f"the app was not made within {seconds} s: it blocked reading {fifo}")
    return made[0]


@pytest.mark.parametrize("kind", ["directory", "named-pipe"])
async def test_something_that_is_no_file_is_left_as_it_is_and_not_saved_over(make_app, kind):
    path = paths.config_file()
    path.parent.mkdir(parents=True)
    path.mkdir() if kind == "directory" else os.mkfifo(path)
    what = "a directory" if kind == "directory" else "a named pipe (FIFO)"

    notices = await _start_and_quit(_made_within(30, make_app, path))

    assert f"config {path} is {what} (allowed: a regular file of at most 1 MiB); using defaults (it is left as it " \
           "is and not saved over)" in notices
    assert (path.is_dir() if kind == "directory" else stat.S_ISFIFO(path.lstat().st_mode)) and not _kept(path)


async def test_a_config_changed_by_hand_into_garbage_is_kept_aside_at_the_next_save(make_app):
    path = _write_config(json.dumps({"theme": "textual-light"}).encode())
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        path.write_bytes(b'{"theme": "textual-light",')  # the user edits it meanwhile, and saves a typo
        app._save_config()
        await pilot.pause()
        [kept] = _kept(path)
        assert kept.read_bytes() == b'{"theme": "textual-light",'
        assert any(f"kept as {kept}" in n.message for n in raised_notices(app) if n.title == "Config")
    assert json.loads(path.read_text())["theme"] == "textual-light"


async def test_a_config_that_cannot_be_kept_aside_is_not_saved_over(make_app, monkeypatch):
    content = b'{"theme": "textual-light" "show_history": false}'
    path = _write_config(content)

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(config_module.os, "rename", refuse)
    notices = await _start_and_quit(make_app())

    assert path.read_bytes() == content and not _kept(path)
    assert any(n.endswith("using defaults (it could not be kept aside (Read-only file system), so it is not saved "
                          "over)") for n in notices), notices


def test_saving_keeps_the_mode_of_the_config_it_replaces():
    path = _write_config(json.dumps({"theme": "textual-light"}).encode(), mode=0o640)
    config, warning = load_config()
    assert warning is None
    assert save_config(config) is None
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and json.loads(path.read_text())["theme"] == "textual-light"
    path.unlink()
    save_config(AppConfig())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # a new one: only its user reads it (it names programs)


def test_a_config_that_is_a_link_is_saved_where_it_leads_and_the_link_is_kept(tmp_path):
    """A config kept in a dotfiles repository and linked in: saving writes the file it leads to, the link stays."""
    dotfile = tmp_path / "dotfiles" / "compile-lab.json"
    dotfile.parent.mkdir()
    dotfile.write_text(json.dumps({"theme": "textual-light"}))
    path = paths.config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(dotfile)
    config, warning = load_config()
    assert warning is None and config.theme == "textual-light"
    save_config(AppConfig(theme="nord"))
    assert path.is_symlink() and os.readlink(path) == str(dotfile)
    assert json.loads(dotfile.read_text())["theme"] == "nord"
    dotfile.unlink()  # a link that leads nowhere: not saved, and nothing made where it points
    with pytest.raises(OSError, match="is a link to .*, which does not exist; not saved"):
        save_config(AppConfig(theme="nord"))
    assert path.is_symlink() and not dotfile.exists()
