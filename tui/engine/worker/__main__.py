"""``python -m tui.engine.worker``: claim the event channel first, then import torch and run."""

from __future__ import annotations

import logging
import os
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
    from tui.engine.worker import compile_cache

    compile_cache.root()  # before torch: inductor fills TORCHINDUCTOR_CACHE_DIR in when it first looks
    from tui.engine.worker.main import main

    return main(channel, problem)


def _leave(code: int) -> None:
    """Exit at once, without the interpreter's shutdown: the run was reported and its own files removed
    (``main`` returned), and what shutdown would do is teardown nobody waits for: collecting every object
    of torch, dynamo and inductor, closing inductor's compile workers, destroying the CUDA context, a user
    workload's ``atexit`` handlers. The runner pays for it before the next run: 1.5 to 3 s on 2 busy cores,
    and 3 s or more on a GPU (its runs' ``ending`` part), after which the runner stops the process group
    anyway. Logging's handlers (a ``--torch-trace`` log among them) and the standard streams are flushed
    first."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the parent closed the pipe: nobody is left to read it
            pass
    os._exit(code)


if __name__ == "__main__":
    _leave(_run())
