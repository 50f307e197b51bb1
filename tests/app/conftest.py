"""Fixtures of the app tests: an app wired to the fake worker and a fake GPU source."""

from __future__ import annotations

from typing import Any

import pytest

from app_helpers import fake_runner, no_gpu_source, record_notifications
from tui.app.app import CompileLabApp


@pytest.fixture
def make_app() -> Any:
    """``make_app(behaviour="ok", delay=None, telemetry=None, **app_kwargs)`` -> CompileLabApp.

    Every runner created is killed at teardown, whatever the test did.
    """
    created: list[CompileLabApp] = []

    def factory(
        behaviour: str = "ok", delay: float | None = None, telemetry: Any = None, **kwargs: Any
    ) -> CompileLabApp:
        runner = kwargs.pop("runner", None) or fake_runner(behaviour, delay)
        source = telemetry if telemetry is not None else no_gpu_source()
        app = CompileLabApp(runner=runner, telemetry=source, gpu_interval=kwargs.pop("gpu_interval", 0.2), **kwargs)
        record_notifications(app)
        created.append(app)
        return app

    yield factory
    for app in created:
        app.runner.kill_all()


