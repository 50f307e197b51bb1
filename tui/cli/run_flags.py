"""The flags of ``compile-lab run`` and ``sweep``: the run options' from the option table, then the rest.

Every run option whose spec (``tui.engine.option_table``) is a plain flag (a value, a switch, a
``--no-`` switch, repeatable ``key=value`` pairs) gets its flag, metavar and help from the table,
and :func:`table_options` reads it back. The sweep axes' flags come from their table
(:data:`tui.engine.run.sweep.SWEEP_AXES`: ``run``'s and ``sweep``'s words, an alias switch), and
``tui.cli.parse`` reads them back from it. The few flags with a rule of their own (``--workload``,
``--param``, ``--device``, ``--trace``) are written here by hand, each in the option table's order.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from tui.engine.catalog import USER_WORKLOAD_HELP, WORKLOADS
from tui.engine.cluster.address import CPUS_ALLOWED, DEFAULT_CPUS
from tui.engine.option_table import CUSTOM, NEGATED, OPTIONS, PAIRS, SPECS, SWITCH, OptionSpec
from tui.cli.usage import UsageError, number_flag, refusal
from tui.engine.options import OptionsError, RunOptions, parse_int_option, parse_key_values, parse_number_option
from tui.engine.run.sweep import AXES_BY_FIELD, SweepAxis

__all__ = ["add_run_flags", "add_option_flags", "add_output_flags", "add_cluster_flags", "table_options",
           "is_table_flag"]

_Groups = dict[str, Any]
_DEFAULTS = RunOptions()


def is_table_flag(spec: OptionSpec) -> bool:
    """Whether the table alone writes and reads ``spec``'s flag (not a sweep axis, not CUSTOM)."""
    return spec.flag is not None and spec.cli != CUSTOM and not spec.sweep


def _help(spec: OptionSpec) -> str:
    default = getattr(_DEFAULTS, spec.name)
    shown = f"{default:g}" if isinstance(default, float) else str(default)
    return spec.help.replace("{default}", shown)


def _add_table_flag(group: Any, spec: OptionSpec) -> None:
    """``spec``'s flag as the table describes it (an unset flag reads None: the option keeps its default)."""
    flag, text = spec.flag or "", _help(spec)
    if spec.cli == SWITCH:
        group.add_argument(flag, action="store_true", default=None, help=text)
    elif spec.cli == NEGATED:
        group.add_argument(flag, dest=spec.dest, action="store_false", default=None, help=text)
    elif spec.cli == PAIRS:
        group.add_argument(flag, action="append", metavar=spec.metavar or "K=V", help=text)
    else:
        group.add_argument(flag, type=_flag_type(spec), metavar=spec.metavar, help=text)


def _flag_type(spec: OptionSpec) -> Callable[[str], Any] | None:
    """The flag's argparse type: a number read as the picker reads it, its refusal the field's own line (a
    UsageError passes through argparse, which would otherwise say only "invalid int value")."""
    if spec.parse is None:
        return None
    read = parse_int_option if spec.parse is int else parse_number_option if spec.parse is float else None
    if read is None:
        return spec.parse

    def parse(text: str) -> Any:
        try:
            return read(spec.name, text)
        except OptionsError as exc:
            raise UsageError(refusal(exc)) from None

    return parse


def table_options(args: argparse.Namespace) -> dict[str, Any]:
    """The run options the table's flags gave (RunOptions field -> value); the flags not given are left out."""
    given: dict[str, Any] = {}
    for spec in OPTIONS:
        value = getattr(args, spec.dest, None) if is_table_flag(spec) else None
        if value is None:
            continue
        given[spec.name] = parse_key_values(value, spec.name) if spec.cli == PAIRS else value
    return given


# ----- the flags written by hand, by RunOptions field ----------------------------------------


def _workload(groups: _Groups, sweep: bool) -> None:
    groups["what"].add_argument(
        "--workload", metavar="NAME",
        help=f"built-in workload ({', '.join(WORKLOADS)}) or {USER_WORKLOAD_HELP} (default {_DEFAULTS.workload})")


def _params(groups: _Groups, sweep: bool) -> None:
    if sweep:
        groups["what"].add_argument("--param", action="append", metavar="K=V[,V...]",
                                    help="workload parameter; a comma list sweeps it (repeatable)")
    else:
        groups["what"].add_argument("--param", action="append", metavar="K=V",
                                    help="workload parameter, e.g. n=1024 (repeatable)")


def _device(groups: _Groups, sweep: bool) -> None:
    groups["what"].add_argument(
        "--device", metavar="DEV",
        help=f"cpu, cuda, cuda:N or cuda:GPU-<uuid> (default {_DEFAULTS.device}); "
             "cuda:all or a list (cuda:0,cuda:3): one worker per GPU at once, runs dealt to free GPUs")


def _axis(axis: SweepAxis) -> Callable[[_Groups, bool], None]:
    """The writer of a sweep axis's flags (:data:`tui.engine.run.sweep.SWEEP_AXES`): one value for ``run``, a list
    for ``sweep``, and its alias switch (``--tf32``) for both."""

    def add(groups: _Groups, sweep: bool) -> None:
        group = groups[axis.group]
        group.add_argument(SPECS[axis.field].flag, **(axis.sweep_flag if sweep else axis.run_flag))
        if axis.alias is not None:
            flag, _, text = axis.alias
            group.add_argument(flag, action="store_true", default=None, help=text)

    return add


def _trace(groups: _Groups, sweep: bool) -> None:
    where = ("a directory, one file per configuration (NN-workload-options.json)" if sweep
             else "a file (both sides in one trace)")
    groups["output"].add_argument(
        "--trace", metavar="PATH",
        help=f"write the profile pass as a Chrome/Perfetto trace (open it in ui.perfetto.dev) to PATH: {where}; "
             "also kept in each run's data folder")


_BY_HAND: dict[str, Callable[[_Groups, bool], None]] = {
    "workload": _workload, "params": _params, "device": _device, "trace": _trace,
}  # fmt: skip
"""The run options whose flags neither the option table nor the sweep axes' table write, by field."""


# ----- the parser's groups ---------------------------------------------------------------------


def _groups(parser: argparse.ArgumentParser) -> _Groups:
    return {
        "what": parser.add_argument_group("what to run"),
        "cluster": parser.add_argument_group(
            "cluster", "Each run as a Ray task on a node (docs/CLUSTER.md; the compile-lab[cluster] extra)"),
        "compile": parser.add_argument_group("torch.compile"),
        "timing": parser.add_argument_group("timing"),
        "verdict": parser.add_argument_group(
            "verdict", "faster / slower / no change / inconclusive / noisy: see the README's Verdict section"),
        "output": parser.add_argument_group(
            "output",
            "Exports write a regular file or create one; a link, directory, device, pipe or socket, "
            "compile-lab's own history, runs or config, and two outputs to one file are refused before anything "
            "runs."),
    }


def add_run_flags(parser: argparse.ArgumentParser, sweep: bool) -> None:
    """The flags of ``run`` (``sweep`` False) or ``sweep``: every run option's, then the command's own."""
    groups = add_option_flags(parser, sweep)
    _add_command_flags(groups)


def add_option_flags(parser: argparse.ArgumentParser, sweep: bool, skip: tuple[str, ...] = ()) -> _Groups:
    """Every run option's flag but those of the ``skip`` fields (``tune`` searches some); the groups, by name."""
    groups = _groups(parser)
    for spec in OPTIONS:
        if spec.name in skip:
            continue
        if spec.name in AXES_BY_FIELD:
            _axis(AXES_BY_FIELD[spec.name])(groups, sweep)
        elif is_table_flag(spec):
            _add_table_flag(groups[spec.group], spec)
        else:
            _BY_HAND[spec.name](groups, sweep)
    return groups


def add_output_flags(out: Any) -> None:
    """The export flags (one per format of the registry), ``--no-history`` and ``--quiet``."""
    from tui.engine.store.export import EXPORT_FORMATS

    for fmt in EXPORT_FORMATS:  # the export formats' registry: a new format is an entry there
        out.add_argument(fmt.flag, metavar="PATH", help=f"write {fmt.contents}")
    out.add_argument("--no-history", action="store_true", help="do not append the runs to the history")
    out.add_argument("--quiet", action="store_true", help="no progress and no table (errors still go to stderr)")


def add_cluster_flags(cluster: Any) -> None:
    """``--cluster`` and ``--cluster-cpus`` (``run``, ``sweep`` and ``tune``)."""
    cluster.add_argument("--cluster", metavar="ADDRESS",
                         help="run on a Ray cluster: auto (the one this machine is configured for) or HOST:PORT "
                              "(its head's GCS address); one task per run, each asking for a GPU (cpu runs: "
                              "--cluster-cpus CPUs)")
    cluster.add_argument("--cluster-cpus", type=number_flag("--cluster-cpus", CPUS_ALLOWED), metavar="N",
                         help=f"with --cluster: the CPUs each run asks Ray for, and its torch threads (default "
                              f"{DEFAULT_CPUS:g}; a node's whole count gives each CPU run a node to itself)")


def _add_command_flags(groups: _Groups) -> None:
    """The flags that are not run options: where runs go, how many processes, the exports, the output."""
    what, cluster, timing, out = groups["what"], groups["cluster"], groups["timing"], groups["output"]
    what.add_argument("--each-gpu-kind", action="store_true",
                      help="with a GPU list of several kinds: every configuration on each kind, each on that kind's "
                           "GPUs only (then compare --across gpu_name)")
    what.add_argument("--serial", action="store_true",
                      help="with a GPU list: one run at a time (a launch-bound model's host time then has the "
                           "host to itself)")
    add_cluster_flags(cluster)
    timing.add_argument("--repeat", metavar="K|auto",
                        help="run each configuration in K fresh worker processes, interleaved with the other "
                             "configurations; one row each, with an interval across processes. auto (the default): "
                             "one, and more on a GPU (up to 5) for launch-bound ones until that interval is within "
                             "--target-ci (else 2%%), on the CPU (up to 3) while the verdict is inconclusive")
    groups["verdict"].add_argument("--strict", action="store_true",
                                   help="exit 3 when a run's verdict is noisy or inconclusive, or its compiled "
                                        "output failed the accuracy check (for CI)")
    add_output_flags(out)
    out.add_argument("--tlparse", action="store_true",
                     help="with --torch-trace (implied): run tlparse, if it is on PATH, on each run's logs afterwards "
                          "and print the report's path")
