"""The suite's garbage-collector thresholds (tests/conftest.py): fewer collections for the suite's
speed, the interpreter's own for the tests that bound the app's time."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest


@pytest.fixture
def suite_conftest(request):
    return request.config.pluginmanager.get_plugin(str(Path(__file__).with_name("conftest.py")))


def test_tests_collect_less_often_and_time_bounds_run_under_pythons_own(suite_conftest, timed):
    assert suite_conftest.GC_THRESHOLDS[0] > suite_conftest.PYTHON_GC_THRESHOLDS[0]
    expected = suite_conftest.PYTHON_GC_THRESHOLDS if timed else suite_conftest.GC_THRESHOLDS
    assert gc.get_threshold() == expected


def test_python_gc_sets_the_interpreters_own_thresholds(suite_conftest, python_gc):
    assert gc.get_threshold() == suite_conftest.PYTHON_GC_THRESHOLDS
