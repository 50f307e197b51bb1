"""The benchmark engine: workloads, options, timing, statistics, export and the worker process.

The modules at this level are the vocabulary every part shares (options, events, payloads,
statuses, thresholds, file rules); the parts are ``explain`` (profiles, traces, generated code),
``measure`` (statistics and the verdict), ``store`` (a run as it is kept), ``compare``, ``run``
(sessions, lanes, placement), ``runner`` (the parent's side of a worker), ``cluster`` (Ray) and
``worker`` (the child process). docs/ARCHITECTURE.md draws the map; tests/test_import_graph.py
keeps the parts importing one way.

Nothing here imports textual. Only ``tui.engine.worker`` imports torch, and it runs in the worker process.
"""
