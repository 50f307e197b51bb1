"""``python -m tui.engine.worker``: claim the event channel first, then import torch and run."""

from __future__ import annotations

import sys
import time


def _run() -> int:
    t0 = time.perf_counter()
    from tui.engine.worker.channel import open_channel, set_parent_death_signal

    set_parent_death_signal()
    channel = open_channel(t0)
    # imported only now: anything torch prints while loading goes to stderr
    from tui.engine.worker.main import main

    return main(channel)


if __name__ == "__main__":
    sys.exit(_run())
