"""compile-lab's command line on the fake worker, in a process of its own (``test_cli_terminal.py``).

Usage: ``python cli_harness.py ARG...`` with the CLI's own arguments (``sweep --param n=64,128
--csv ...``). Runs go through ``tests/fakes/fake_worker.py``; its ``FAKE_WORKER_*`` knobs and
``COMPILE_LAB_HOME`` come from the environment. With ``CLI_HARNESS_CTTY=1`` (start it in a new
session) its stdout becomes its controlling terminal first, so that closing the terminal's
other end hangs it up as a closed terminal window does: the kernel sends SIGHUP, and every
write to the terminal fails with EIO from then on. Exits with the CLI's exit code.
"""

from __future__ import annotations

import fcntl
import os
import sys
import termios
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.fakes import fake_worker_argv  # noqa: E402
from tui import cli  # noqa: E402  (needs the path above)
from tui.engine.runner import WorkerRunner  # noqa: E402

FAKE_WORKER = fake_worker_argv()


def make_runner(keep_spare: bool, telemetry: Any = None) -> WorkerRunner:
    return WorkerRunner(worker_argv=FAKE_WORKER, keep_spare=keep_spare)


if __name__ == "__main__":
    if os.environ.get("CLI_HARNESS_CTTY") == "1":
        fcntl.ioctl(1, termios.TIOCSCTTY, 0)
    cli.make_runner = make_runner
    raise SystemExit(cli.main(sys.argv[1:]))
