"""Fixtures of the fault tests: the app tests' ``make_app`` and helpers, shared, not copied.

``tests/app`` goes on ``sys.path`` so that ``app_helpers`` imports here as it does there, and
the app tests' conftest is loaded under another module name so its ``make_app`` fixture
(an app wired to the fake worker, every runner killed at teardown) serves these tests too.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

_APP_TESTS = Path(__file__).resolve().parents[1] / "app"
if str(_APP_TESTS) not in sys.path:
    sys.path.insert(0, str(_APP_TESTS))


def _load_app_conftest():
    spec = importlib.util.spec_from_file_location("_app_tests_conftest", _APP_TESTS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_app = _load_app_conftest().make_app


@pytest.fixture
def runners(monkeypatch) -> list:
    """What the CLI would run (``cli.make_runner``'s calls): the list stays empty when nothing started."""
    from tui import cli

    made: list = []

    def factory(*args: Any, **kwargs: Any) -> Any:
        made.append(kwargs)
        raise AssertionError("a worker was about to start")

    monkeypatch.setattr(cli, "make_runner", factory)
    return made
