"""The app, headless, in a process of its own: what ``test_shutdown.py`` sends signals to.

Usage: ``python app_harness.py STATUS_FD BEHAVIOUR [WORKLOAD_FILE]``. The app (with its
SIGTERM/SIGHUP handlers, as ``compile-lab`` installs them) queues two runs through the fake
worker: a short ``ok`` run, then one whose fake worker behaves as BEHAVIOUR (``hang``,
``slow``...). With BEHAVIOUR ``real`` both runs go through the real worker instead, with the
app's warm spare: a tiny eager pointwise run, then the user workload WORKLOAD_FILE for 100,000
iterations. It reports on the file descriptor STATUS_FD, one JSON line each:

* ``{"appended": run_id, "status": ...}`` once a run is in the history;
* ``{"measuring": run_id, "pid": worker_pid}`` at the second run's first measured block.

The history and config live under ``COMPILE_LAB_HOME`` (inherited from the test). Exits with
the app's return code.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.fakes import fake_worker_argv  # noqa: E402
from tui.app.app import CompileLabApp  # noqa: E402  (needs the path above)
from tui.engine.store.history import History  # noqa: E402
from tui.engine.options import RunOptions  # noqa: E402
from tui.engine.protocol import BlockTimed  # noqa: E402
from tui.engine.runner import WorkerRunner  # noqa: E402
from tui.telemetry.fake import FakeSource  # noqa: E402

FAKE_WORKER = fake_worker_argv()


def main() -> int:
    status_fd, behaviour = int(sys.argv[1]), sys.argv[2]
    watched: list[str] = []

    def report(**fields) -> None:
        os.write(status_fd, (json.dumps(fields) + "\n").encode())

    class ReportingHistory(History):
        def append(self, record) -> None:
            super().append(record)
            report(appended=record.run_id, status=record.status)

    class ReportingRunner(WorkerRunner):
        async def run(self, record, on_event=None):
            told = []

            def forward(event):
                if isinstance(event, BlockTimed) and record.run_id in watched and not told:
                    told.append(True)
                    report(measuring=record.run_id, pid=self.last_pid)
                return on_event(event) if on_event is not None else None

            return await super().run(record, forward)

    class HarnessApp(CompileLabApp):
        def on_ready(self) -> None:
            super().on_ready()
            if behaviour == "real":
                runs = [
                    RunOptions(backend="eager", warmup=1, iters=4, block_size=2, profile=False).validated(),
                    RunOptions(
                        workload=sys.argv[3], backend="eager", warmup=1, iters=100_000, block_size=5
                    ).validated(),
                ]
            else:
                runs = [RunOptions(iters=10, block_size=5, params={"fake_behaviour": "ok"}),
                        RunOptions(iters=100_000, block_size=5, params={"fake_behaviour": behaviour})]
            watched.append(self.enqueue(runs)[1].run_id)

    telemetry = FakeSource(gpus=1, vary=False)
    telemetry.make_unavailable("no GPU in this test")
    if behaviour == "real":
        # As the app runs by default: the second run's worker imports torch while the first one runs,
        # and a spare for a third is waiting (or paused) when the app is killed: it must go too.
        runner = ReportingRunner(keep_spare=True)
    else:
        runner = ReportingRunner(worker_argv=FAKE_WORKER, keep_spare=False, env={"FAKE_WORKER_DELAY": "0.05"})
    app = HarnessApp(runner=runner, telemetry=telemetry, history=ReportingHistory(), install_signal_handlers=True)
    app.run(headless=True, size=(120, 40))
    return int(app.return_code or 0)


if __name__ == "__main__":
    raise SystemExit(main())
