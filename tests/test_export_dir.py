"""A missing export directory is made only as typed (issue 14 item 9): never through a link, never outside the path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tui.engine.store.export_dir import DirectoryRefused, create_directory, missing_directory


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_the_missing_directories_of_the_typed_path_are_made(tmp_path):
    typed = str(tmp_path / "a" / "b" / "c")
    assert missing_directory(typed) == Path(typed)
    assert create_directory(typed) == Path(typed)
    assert Path(typed).is_dir() and missing_directory(typed) is None
    assert _tree(tmp_path) == ["a", "a/b", "a/b/c"]
    assert create_directory(typed) == Path(typed)  # already there: nothing to do, no error


def test_a_relative_path_is_made_in_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    create_directory("reports/today")
    assert _tree(tmp_path) == ["reports", "reports/today"]


def test_the_home_directory_is_where_a_tilde_path_starts(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert create_directory("~/exports/x") == home / "exports" / "x"
    assert _tree(tmp_path) == ["home", "home/exports", "home/exports/x"]


@pytest.mark.parametrize("where", ["first", "middle"])
def test_a_link_in_the_typed_path_is_refused_and_nothing_is_made_behind_it(tmp_path, where):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    base = tmp_path / "base"
    base.mkdir()
    if where == "first":
        (base / "link").symlink_to(elsewhere)
        typed = base / "link" / "new"
    else:
        (base / "real").mkdir()
        (base / "real" / "link").symlink_to(elsewhere)
        typed = base / "real" / "link" / "new" / "deeper"
    with pytest.raises(DirectoryRefused, match=r"is a symbolic link; compile-lab makes no directory through one"):
        create_directory(str(typed))
    assert list(elsewhere.iterdir()) == []


def test_a_link_to_nowhere_is_not_made_through(tmp_path):
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert missing_directory(str(tmp_path / "dangling")) is None  # it exists, as a link: nothing to make
    with pytest.raises(DirectoryRefused, match="symbolic link"):
        create_directory(str(tmp_path / "dangling" / "new"))
    assert not (tmp_path / "nowhere").exists()


def test_a_link_put_in_place_while_the_directories_are_made_is_not_followed(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    real_mkdir = os.mkdir

    def racing_mkdir(path, mode=0o777, *, dir_fd=None):
        if path == "a":  # someone swaps in a link right where the directory was to be made
            os.symlink(elsewhere, tmp_path / "a")
            raise FileExistsError(path)
        return real_mkdir(path, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", racing_mkdir)
    with pytest.raises(DirectoryRefused, match="symbolic link"):
        create_directory(str(tmp_path / "a" / "b"))
    assert list(elsewhere.iterdir()) == []


def test_a_file_in_the_way_and_a_parent_step_after_a_new_directory_are_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(DirectoryRefused, match=r"file is not a directory"):
        create_directory(str(tmp_path / "file" / "new"))
    with pytest.raises(DirectoryRefused, match=r"'\.\.' after a directory still to be made"):
        create_directory(f"{tmp_path}/new/../other")
    assert _tree(tmp_path) == ["file", "new"]  # 'other' beside it was never made
    create_directory(f"{tmp_path}/new/../fine")  # '..' through existing directories is what was typed
    assert (tmp_path / "fine").is_dir()


def test_a_directory_that_cannot_be_made_is_one_line(tmp_path, monkeypatch):
    def denied(path, mode=0o777, *, dir_fd=None):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(os, "mkdir", denied)  # as a read-only directory would (the tests may run as root)
    with pytest.raises(DirectoryRefused, match=r"new: cannot make it: Permission denied$"):
        create_directory(str(tmp_path / "new"))
