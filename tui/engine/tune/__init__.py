"""Tuning: the search for the fastest torch.compile configuration of a workload on a device, and its proof.

``space`` (the catalog of what is tried, as data), ``probe`` (which catalog options the worker's torch
has, asked in a subprocess), ``objective`` (a candidate's runs as one number with an interval),
``search`` (the racing, pure), ``driver`` (the stages driven through a
:class:`~tui.engine.run.session.RunSession` within a budget) and ``answer`` (the result, and the
winning configuration as code to paste).
"""
