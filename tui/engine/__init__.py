"""The benchmark engine: workloads, options, timing, statistics, export and the worker process.

Nothing here imports textual. Only ``tui.engine.worker`` imports torch, and it runs in the worker process.
"""
