"""The parsed command line read into run options, sweeps, repeats and clusters (one line per refusal).

The parser itself is :mod:`tui.cli.parser`; the subcommands' modules import what they need from here,
below the parser, so that nothing in ``tui.cli`` imports in a circle.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from typing import Any

from tui.cli.run_flags import table_options
from tui.cli.usage import UsageError
from tui.engine.catalog import echo
from tui.engine.cluster.address import CPUS_ALLOWED, DEFAULT_CPUS, MAX_CPUS, ClusterError, parse_address
from tui.engine.option_table import SPECS
from tui.engine.options import (
    DEFAULT_MODE, OptionsError, RunOptions, check_compile_settings, comma_items, mode_applies, parse_key_values,
)  # fmt: skip
from tui.engine.run.sweep import AXES_BY_FIELD, SWEEP_AXES, SweepAxis, expand

__all__ = ["PROG", "UsageError", "options_from_args", "configs_from_args", "repeat_from_args",
           "precisions_from_args", "axis_values", "check_cluster", "cluster_cpus", "MAX_PROBLEMS_SHOWN",
           "problem_warnings"]

PROG = "compile-lab"
MAX_PROBLEMS_SHOWN = 5
"""Problems reading runs or a history printed as warnings before ``and N more``."""


def problem_warnings(problems: Sequence[str], what: str = "the runs") -> list[str]:
    """The warning lines for problems reading ``what``: the first :data:`MAX_PROBLEMS_SHOWN`, then how many more."""
    lines = [f"{PROG}: warning: {line}" for line in problems[:MAX_PROBLEMS_SHOWN]]
    if len(problems) > MAX_PROBLEMS_SHOWN:
        lines.append(f"{PROG}: warning: and {len(problems) - MAX_PROBLEMS_SHOWN} more problems reading {what}")
    return lines


def split_list(text: str | None, field_name: str) -> list[str] | None:
    """A flag's comma list (None: not given); an empty item is an OptionsError naming ``field_name``."""
    if text is None:
        return None
    return comma_items(text, field_name)


def options_from_args(args: argparse.Namespace, sweep: bool = False) -> RunOptions:
    """A RunOptions from the parsed flags (not validated; sweep axes are left at their defaults)."""
    given: dict[str, Any] = table_options(args)
    for name in ("workload", "device"):
        if getattr(args, name, None) is not None:
            given[name] = getattr(args, name)
    if getattr(args, "trace", None) is not None:
        given["trace"] = True
    if getattr(args, "tlparse", False):
        given["torch_trace"] = True
    if not sweep:
        for axis in SWEEP_AXES:
            values = axis_values(args, axis, sweep=False)
            if values is not None:
                given[axis.field] = axis.read(values[0])
        if args.param:
            given["params"] = parse_key_values(args.param, "params")
    return RunOptions(**given)


def axis_values(args: argparse.Namespace, axis: SweepAxis, sweep: bool) -> list[Any] | None:
    """A sweep axis's flag (:data:`tui.engine.run.sweep.SWEEP_AXES`): ``run``'s value as a list of one, ``sweep``'s
    list (a comma list, or a word of the axis's), and its alias switch (``--tf32``: ``--precision tf32``); None:
    not given.

    The values are checked where the options are (RunOptions.validated, the sweep); an alias beside another
    value is an OptionsError naming both.
    """
    flag = SPECS[axis.field].flag
    text = getattr(args, SPECS[axis.field].dest, None)
    values = None if text is None else (_listed(axis, text) if sweep else [text])
    alias = axis.alias
    if alias is not None and getattr(args, alias[0].lstrip("-").replace("-", "_"), None):
        if values is not None and values != [alias[1]]:
            raise OptionsError(axis.field, f"{alias[0]} (the same as {flag} {alias[1]}) contradicts {flag} {text} "
                                           "(allowed: one of the two)")
        values = [alias[1]]
    return values


def _listed(axis: SweepAxis, text: str) -> list[Any] | None:
    """``sweep``'s text of an axis: a word of its own (``both``) or a comma list."""
    if axis.words is None:
        return split_list(text, axis.field)
    choice = text.strip().lower()
    if choice not in axis.words:
        raise OptionsError(axis.field, f"{text!r} is not allowed (allowed: {', '.join(axis.words)})")
    return list(axis.words[choice])


def precisions_from_args(args: argparse.Namespace, sweep: bool) -> list[str] | None:
    """``--precision`` (a comma list with ``sweep``), ``--tf32`` read as ``--precision tf32``; None: neither."""
    return axis_values(args, AXES_BY_FIELD["precision"], sweep)


def repeat_from_args(args: argparse.Namespace) -> int | str:
    """``--repeat``: a count of processes per configuration or ``"auto"`` (OptionsError, one line)."""
    from tui.engine.store.repeats import parse_repeat

    from tui.engine.store.repeats import DEFAULT_REPEAT

    value = getattr(args, "repeat", None)
    if value is None:
        return DEFAULT_REPEAT
    try:
        return parse_repeat(value)
    except ValueError as exc:
        raise OptionsError("repeat", str(exc)) from None


def configs_from_args(args: argparse.Namespace) -> list[RunOptions]:
    """The validated configurations of a parsed ``run`` (one) or ``sweep`` (every combination).

    Raises OptionsError (one line: ``field: what is allowed``) for the first bad value.
    """
    check_cluster(args)
    args.device_pool = () if getattr(args, "cluster", None) else device_pool_from_args(args)
    configs = [options_from_args(args).validated()] if args.command == "run" else _sweep_configs(args)
    if not getattr(args, "cluster", None):
        _refuse_cuda_on_a_cpu_build(configs)
    return configs


def _refuse_cuda_on_a_cpu_build(configs: list[RunOptions]) -> None:
    """A ``cuda`` device for runs in this interpreter, whose torch is a CPU build by its version: OptionsError
    (field ``device``), as ``tune`` refuses it, rather than a failed run a configuration. Runs in another
    interpreter (``--python``) or on a cluster are not judged here: their worker says."""
    from tui.engine.runner.torch_probe import cpu_build_here, no_cuda

    devices = [config.device for config in configs if config.python is None and config.device.startswith("cuda")]
    version = cpu_build_here() if devices else None
    if version is not None:
        raise OptionsError("device", no_cuda(devices[0], version))


#: What a cluster run cannot do yet, each with the reason its refusal gives.
_NOT_ON_A_CLUSTER = (
    ("trace", "--trace", "its files would be written on the node"),
    ("torch_trace", "--torch-trace", "its files would be written on the node"),
    ("tlparse", "--tlparse", "its files would be written on the node"),
    ("python", "--python", "the worker runs in the node's interpreter"),
    ("each_gpu_kind", "--each-gpu-kind", "Ray picks each run's node; asking it for every kind is not built yet"),
)


def check_cluster(args: argparse.Namespace) -> None:
    """``--cluster``: its address, and the flags a cluster run refuses (UsageError, one line)."""
    address, cpus = getattr(args, "cluster", None), getattr(args, "cluster_cpus", None)
    if address is None:
        if cpus is not None:
            raise UsageError("--cluster-cpus applies with --cluster only")
        return
    try:
        args.cluster = parse_address(address)
    except ClusterError as exc:
        raise UsageError(str(exc)) from None
    for dest, flag, why in _NOT_ON_A_CLUSTER:
        if getattr(args, dest, None):
            raise UsageError(f"--cluster: {flag} is not supported with a cluster ({why})")
    if (getattr(args, "device", None) or RunOptions().device) not in ("cpu", "cuda"):
        raise UsageError(f"--cluster: --device {args.device} is not allowed (allowed: cpu, or cuda: Ray gives each "
                         "run its GPU)")
    args.cluster_cpus = cluster_cpus(cpus)


def cluster_cpus(cpus: float | None) -> float:
    """``--cluster-cpus``, checked (UsageError, one line); the default when not given."""
    if cpus is not None and not (0 < cpus <= MAX_CPUS):
        raise UsageError(f"--cluster-cpus: {cpus:g} is not allowed (allowed: {CPUS_ALLOWED})")
    return DEFAULT_CPUS if cpus is None else cpus


def device_pool_from_args(args: argparse.Namespace, gpu_count: Any = None) -> tuple[str, ...]:
    """``--device cuda:all`` / ``cuda:0,cuda:3``: the GPUs (``args.device`` becomes the first); else ().

    ``gpu_count`` (a number, or a function giving it) is asked only for ``cuda:all`` or to check a
    list; by default the GPUs this process can see (CUDA_VISIBLE_DEVICES, else NVML).
    """
    from tui.engine.run.placement import is_pool, parse_device_pool

    text = getattr(args, "device", None)
    if not text or not is_pool(text):
        return ()
    if gpu_count is None:
        from tui.engine.runner.gpu_lock import visible_gpu_count

        gpu_count = visible_gpu_count
    pool = parse_device_pool(text, gpu_count() if callable(gpu_count) else gpu_count)
    args.device = pool[0]
    return pool


def _refuse_what_no_backend_reads(backends: list[str], modes: list[str], inductor_options: dict[str, Any]) -> None:
    """``--mode`` or ``--option`` typed for a sweep none of whose backends reads them: refused as ``run`` does.

    Beside inductor, another backend runs once without them (:func:`~tui.engine.run.sweep.expand`); with no
    inductor among the backends they would be dropped from every run without a word.
    """
    if any(mode_applies(backend) for backend in backends):
        return
    for mode in modes or [DEFAULT_MODE]:
        check_compile_settings(backends[0], mode, inductor_options)


def _sweep_configs(args: argparse.Namespace) -> list[RunOptions]:
    base = options_from_args(args, sweep=True)
    grid: dict[str, list[Any]] = {}
    for item in args.param or ():
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise OptionsError("params", f"{echo(item)} is not key=value[,value...] (allowed: key=value, e.g. n=512 or "
                                         "n=512,1024 to sweep it)")
        if not values.strip():
            raise OptionsError("params", f"{key} has no value")
        parts = comma_items(values, "params", about=f"{key}: ")
        grid.setdefault(key, [])
        for part in parts:
            grid[key].append(parse_key_values([f"{key}={part}"], "params")[key])
    lists = {axis.field: axis_values(args, axis, sweep=True) for axis in SWEEP_AXES}
    _refuse_what_no_backend_reads(lists["backend"] or [base.backend], lists["mode"] or [], base.inductor_options)
    pythons = lists["python"]
    if pythons is not None and len(pythons) > 1:
        from tui.engine.run.ab import check_interpreter

        base = dataclasses.replace(base, python=None)
        for python in dict.fromkeys(pythons):
            check_interpreter(python)
    return expand(base, params_grid=grid or None, **{axis.keyword: lists[axis.field] for axis in SWEEP_AXES})
