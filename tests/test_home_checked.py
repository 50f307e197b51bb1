"""A data dir or compile cache compile-lab cannot write is refused before anything runs, in one line naming it.

A ``COMPILE_LAB_HOME`` that is a file (or a folder on a read-only disk) made every run fail inside inductor as
``compile_error: inductor failed to compile: NotADirectoryError``, which sends a user to debug torch.compile.
"""

from __future__ import annotations

import sys

import pytest

import tui.launch
from tui import cli, paths

REFUSAL = "is a file, not a folder (allowed: COMPILE_LAB_HOME set to a folder compile-lab can write)"


@pytest.fixture
def home_is_a_file(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.write_text("not a folder")
    monkeypatch.setenv("COMPILE_LAB_HOME", str(home))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    return home


@pytest.mark.parametrize("argv", [["run", "--iters", "20"], ["sweep", "--no-history", "--iters", "20"],
                                  ["tune", "--budget", "1m"]])
def test_a_run_with_a_home_that_is_a_file_is_refused_in_one_line(home_is_a_file, capsys, monkeypatch, argv):
    monkeypatch.setattr(cli, "make_runner", lambda *a, **k: pytest.fail("no runner may start"))
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"compile-lab: error: {home_is_a_file}/cache/inductor: {home_is_a_file} {REFUSAL}"]


def test_the_app_with_such_a_home_is_refused_before_textual_loads(home_is_a_file, capsys, monkeypatch):
    monkeypatch.setattr(tui.launch, "not_a_terminal", lambda keys, screen: None)
    monkeypatch.delitem(sys.modules, "tui.app.app", raising=False)
    assert tui.launch.open_app() == 2
    assert capsys.readouterr().err.strip().endswith(REFUSAL) and "tui.app.app" not in sys.modules


def test_what_is_checked_and_what_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPILE_LAB_HOME", str(tmp_path / "fresh" / "home"))  # not there yet: made on demand
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    assert paths.home_problem(needs_config=True) is None
    cache = tmp_path / "cache-file"
    cache.write_text("")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))  # the user's own compile cache: named as theirs
    assert paths.home_problem() == (f"{cache}/compile-lab: {cache} is a file, not a folder (allowed: "
                                    "TORCHINDUCTOR_CACHE_DIR set to a folder compile-lab can write)")
    data = tmp_path / "data-file"
    data.write_text("")
    assert paths.unwritable(tmp_path, data / "history") == f"{data / 'history'}: {data} is a file, not a folder"
