"""Drive benchmark runs in worker processes: spawn, stream, timeout, cancel, warm spare, GPU lock.

One fresh worker process per configuration (``python -m tui.engine.worker``), its typed events
(:mod:`tui.engine.protocol`) applied to the run's ``RunRecord`` as they arrive. The package,
by responsibility:

* :mod:`.worker_runner` -- :class:`WorkerRunner`, which composes the rest and owns a run's
  policy (timeout, cancel, how a dead worker is reported);
* :mod:`.process` -- one worker process: spawn, read its streams, signal, stop, reap;
* :mod:`.gpu_lock` -- which GPU a CUDA run uses, and the per-GPU file lock;
* :mod:`.spare` -- the warm spare, paused while a run measures;
* :mod:`.launch` -- a worker's command line and environment;
* :mod:`.sampling` -- the machine while the run measures: the GPU, and the CPU use of other processes.

Nothing here imports torch or textual.
"""

from tui.engine.runner.launch import make_package_importable
from tui.engine.runner.process import KILL_GRACE_S, STDERR_TAIL_BYTES, STREAM_LIMIT
from tui.engine.runner.worker_runner import EXIT_GRACE_S, EventCallback, WorkerRunner

__all__ = ["WorkerRunner", "EventCallback", "make_package_importable", "STDERR_TAIL_BYTES", "KILL_GRACE_S",
           "EXIT_GRACE_S", "STREAM_LIMIT"]
