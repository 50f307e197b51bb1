"""Helpers of the app tests (imported as ``app_helpers``; pytest puts this directory on sys.path)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fakes.polling import poll_until
from fakes import fake_worker_argv
from tui.engine.runner import WorkerRunner
from tui.telemetry.fake import FakeSource

if TYPE_CHECKING:
    from tui.app.app import CompileLabApp

FAKE_WORKER = fake_worker_argv()


def fake_runner(behaviour: str = "ok", delay: float | None = None, **env: str) -> WorkerRunner:
    """A runner whose workers are the torch-free fake worker with one behaviour.

    It does not sample other processes' CPU use: the verdicts these tests read must not depend on
    what else this machine runs (a parallel test worker would make every run "noisy").
    """
    env = {"FAKE_WORKER_BEHAVIOUR": behaviour, **env}
    if delay is not None:
        env["FAKE_WORKER_DELAY"] = str(delay)
    return WorkerRunner(worker_argv=FAKE_WORKER, keep_spare=False, env=env, sample_host=False)


def no_gpu_source() -> FakeSource:
    """A telemetry source that reports telemetry unavailable (a CPU box)."""
    source = FakeSource(gpus=1, vary=False)
    source.make_unavailable("NVML Shared Library Not Found")
    return source


async def wait_until(pilot: Any, predicate: Callable[[], bool], timeout: float = 15.0, what: str = "") -> None:
    """Let the app run until ``predicate()`` holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await pilot.pause(0.05)


@dataclass(frozen=True)
class Raised:
    """A notification as the app raised it (:func:`record_notifications`)."""

    message: str
    title: str
    severity: str
    identity: int


def raised_notices(app: CompileLabApp) -> list[Raised]:
    """Every notification the app raised, in order: shown or not, handled or not, expired or not."""
    return list(app._raised_notices)  # type: ignore[attr-defined]


def notifications(app: CompileLabApp) -> list[str]:
    """The messages of the notifications the app raised (shown or not, expired or not)."""
    raised = getattr(app, "_raised_notices", None)
    return [n.message for n in raised] if raised is not None else [n.message for n in app._notifications]


def record_notifications(app: CompileLabApp) -> None:
    """Keep every notification ``app`` raises, for :func:`notifications` and :func:`raised_notices`, as it is raised.

    ``App.notify`` posts a message, and the notification joins ``app._notifications`` only when the
    app handles it: a test that looked right after the code that notifies (a run saved in the
    session's loop) missed it about once in 150 runs under load. Textual also drops a notification
    from ``app._notifications`` once its timeout has passed: under load a test of seven runs found
    three of its five five-second failure notices.
    """
    raised: list[Raised] = []
    notify = app.notify

    def recording(message: str, *, title: str = "", severity: str = "information", **kwargs: Any) -> Any:
        raised.append(Raised(str(message), title, severity, len(raised)))
        return notify(message, title=title, severity=severity, **kwargs)  # type: ignore[arg-type]

    app.notify = recording  # type: ignore[method-assign]
    app._raised_notices = raised  # type: ignore[attr-defined]


def process_alive(pid: int | None) -> bool:
    """Whether a process (not a zombie) with this pid exists."""
    if pid is None:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


async def process_gone(pid: int | None, within: float = 5.0) -> bool:
    """Whether the process is gone within ``within`` seconds."""
    return await poll_until(lambda: not process_alive(pid), within, interval=0.05)


def fake_worker_children() -> list[int]:
    """Pids of live fake-worker processes started by this test process (directly)."""
    me = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if fields[0] == "Z" or int(fields[1]) != me:
            continue
        if b"fake_worker.py" in cmdline:
            found.append(int(entry.name))
    return found


@dataclass
class ChartBlock:
    """A timing block as the iteration chart reads it (``BlockLike``)."""

    stage: str
    index: int
    ms: list[float]


@dataclass
class ChartRecord:
    """A run as the iteration chart reads it (``RecordLike``): blocks per side."""

    samples: dict[str, list[ChartBlock]] = field(default_factory=lambda: {"eager": [], "compiled": []})


async def footer_whole(pilot: Any, app: CompileLabApp) -> str:
    """The footer's line at the bottom of an 80-column screen, once drawn; asserts it ends with the palette's key
    and shows every key of the screen's footer with its words (a cut one left a stray letter before)."""
    import re

    from textual.geometry import Region

    from terminal_model import TerminalModel

    terminal = TerminalModel(app)
    row = app.size.height - 1
    await wait_until(pilot, lambda: "palette" in terminal.text(Region(0, row, 80, 1)), what="the footer")
    footer = terminal.text(Region(0, row, 80, 1)).rstrip()
    assert footer.endswith("^p palette"), footer
    shown = {b.binding.description for b in app.screen.active_bindings.values() if b.binding.show}
    for description in shown:
        assert re.search(rf"\S+ {re.escape(description)}( |$)", footer), (description, footer)
    return footer
