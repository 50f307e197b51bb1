"""The benchmark worker: the only part of compile-lab that imports torch.

It runs as ``python -m tui.engine.worker``, one fresh process per configuration, and
talks to its parent through JSON-line events (:mod:`tui.engine.protocol`) on a private
duplicate of its original stdout. See docs/ARCHITECTURE.md, "The worker process".
"""
