"""What the worker does before it says ``ready``: dynamo imported ahead, so a spare's next run skips it."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from tui.engine.worker import main  # noqa: E402  (needs torch)


def test_the_worker_imports_ahead_before_it_says_ready(monkeypatch):
    said: list[str] = []

    class Channel:
        def emit(self, event):
            said.append(event.NAME)

    monkeypatch.setattr(main, "import_ahead", lambda: said.append("import_ahead"))
    monkeypatch.setattr(main, "read_command_line", lambda fd: b"")  # EOF: a spare that was not needed
    assert main.main(Channel()) == 0
    assert said == ["import_ahead", "ready"]


@pytest.mark.slow
def test_import_ahead_leaves_dynamo_and_its_backends_imported():
    code = ("import sys\nfrom tui.engine.worker.setup import import_ahead\n"
            "before = 'torch._dynamo' in sys.modules\nimport_ahead()\n"
            "print(before, 'torch._dynamo' in sys.modules, 'torch._dynamo.backends.inductor' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "True", "True"], out.stderr
