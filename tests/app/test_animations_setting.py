"""The tests' apps run without Textual's animations, or with the level the caller set, except where a test asks for
the user's (tests/conftest.py)."""

from __future__ import annotations

import os

import pytest


def test_an_app_in_the_tests_runs_at_the_suites_level(make_app):
    # conftest sets the variable for the processes the tests start, and Textual's constant, read when an app is made.
    # Textual read the variable before conftest set it: an app at "full" here would mean the constant was missed.
    assert make_app().animation_level == os.environ["TEXTUAL_ANIMATIONS"].lower()


@pytest.mark.animated
def test_an_animated_test_runs_its_apps_as_a_user_sees_them(make_app):
    assert make_app().animation_level == "full"
    assert os.environ["TEXTUAL_ANIMATIONS"] == "full"
