"""The tests' apps run without Textual's animations, except where a test asks for the user's (tests/conftest.py)."""

from __future__ import annotations

import pytest


def test_an_app_in_the_tests_runs_without_animations(make_app):
    assert make_app().animation_level == "none"


@pytest.mark.animated
def test_an_animated_test_runs_its_apps_as_a_user_sees_them(make_app):
    assert make_app().animation_level == "full"
