"""``python -m tui.engine.worker``: claim the event channel first, then import torch and run."""

from __future__ import annotations

import gc
import sys
import time


def _run() -> int:
    t0 = time.perf_counter()
    from tui.engine.worker.channel import become_subreaper, open_channel, set_parent_death_signal

    set_parent_death_signal()
    become_subreaper()  # a daemon the workload starts stays in this tree, where the runner finds it
    channel = open_channel(t0)
    from tui.engine.worker.affinity import pin_to_lane_cpus

    # Before torch: its thread pool and inductor's compile workers size themselves from the mask.
    problem = pin_to_lane_cpus()
    from tui.engine.worker.main import main

    code = main(channel, problem)
    # The run has been reported. Leave the objects alive now (torch's, dynamo's, inductor's) out
    # of the collections the interpreter's shutdown runs: walking them took 1.5 to 3 s after
    # every run on 2 busy cores, a wait the runner pays before the next run (0.2 s with this).
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(_run())
