"""The command line's parser: flags, and the run options they describe (one line per refusal)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from tui import __version__
from tui.engine.catalog import USER_WORKLOAD_HELP, WORKLOADS
from tui.engine.cluster.address import DEFAULT_CPUS, ClusterError, parse_address
from tui.engine.options import (
    BACKENDS,
    DTYPES,
    DYNAMIC_CHOICES,
    MODES,
    PRECISIONS,
    OptionsError,
    RunOptions,
    parse_dynamic,
    parse_key_values,
)

__all__ = ["PROG", "UsageError", "build_parser", "options_from_args", "configs_from_args", "repeat_from_args",
           "precisions_from_args", "check_cluster", "cluster_cpus"]

PROG = "compile-lab"


class UsageError(Exception):
    """Bad usage: the message is one line (without the ``compile-lab: error:`` prefix)."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and raise instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(" ".join(message.split()))


# ----------------------------------------------------------------------------------------------
# parser


def _add_run_flags(parser: argparse.ArgumentParser, sweep: bool) -> None:
    defaults = RunOptions()
    what = parser.add_argument_group("what to run")
    what.add_argument(
        "--workload",
        metavar="NAME",
        help=f"built-in workload ({', '.join(WORKLOADS)}) or {USER_WORKLOAD_HELP} (default {defaults.workload})",
    )
    if sweep:
        what.add_argument(
            "--param",
            action="append",
            metavar="K=V[,V...]",
            help="workload parameter; a comma list sweeps it (repeatable)",
        )
    else:
        what.add_argument(
            "--param", action="append", metavar="K=V", help="workload parameter, e.g. n=1024 (repeatable)"
        )
    what.add_argument(
        "--train", action="store_true", default=None, help="time a training step (cnn, mlp, transformer_block)"
    )
    what.add_argument(
        "--compile-optimizer", action="store_true", default=None, help="with --train: compile the optimizer step too"
    )
    what.add_argument(
        "--device",
        metavar="DEV",
        help=f"cpu, cuda, cuda:N or cuda:GPU-<uuid> (default {defaults.device}); "
        "cuda:all or a list (cuda:0,cuda:3): one worker per GPU at once, runs dealt to free GPUs",
    )
    what.add_argument("--each-gpu-kind", action="store_true",
                      help="with a GPU list of several kinds: every configuration on each kind, each on that kind's "
                           "GPUs only (then compare --across gpu_name)")
    what.add_argument("--serial", action="store_true",
                      help="with a GPU list: one run at a time (a launch-bound model's host time then has the "
                           "host to itself)")
    if sweep:
        what.add_argument(
            "--python",
            metavar="PATH[,PATH]",
            help="the interpreter the worker runs in (default: this one); "
            "a comma list is an A/B of torch builds, run interleaved and diffed",
        )
    else:
        what.add_argument("--python", metavar="PATH", help="the interpreter the worker runs in (default: this one)")

    cluster = parser.add_argument_group(
        "cluster", "Each run as a Ray task on a node (docs/CLUSTER.md; the compile-lab[cluster] extra)"
    )
    cluster.add_argument("--cluster", metavar="ADDRESS",
                         help="run on a Ray cluster: auto (the one this machine is configured for) or HOST:PORT "
                              "(its head's GCS address); one task per run, each asking for a GPU (cpu runs: "
                              "--cluster-cpus CPUs)")
    cluster.add_argument("--cluster-cpus", type=float, metavar="N",
                         help=f"with --cluster: the CPUs each run asks Ray for, and its torch threads (default "
                              f"{DEFAULT_CPUS:g}; a node's whole count gives each CPU run a node to itself)")

    comp = parser.add_argument_group("torch.compile")
    if sweep:
        comp.add_argument("--backend", metavar="LIST", help=f"comma list of backends, e.g. {','.join(BACKENDS[:2])}")
        comp.add_argument("--mode", metavar="LIST", help=f"comma list of modes ({', '.join(MODES)})")
        comp.add_argument("--fullgraph", metavar="WHICH", help="both, true or false")
        comp.add_argument("--dynamic", metavar="LIST", help=f"comma list of {', '.join(DYNAMIC_CHOICES)}")
        comp.add_argument("--dtype", metavar="LIST", help=f"comma list of dtypes ({', '.join(DTYPES)})")
    else:
        comp.add_argument(
            "--backend",
            metavar="NAME",
            help=f"{', '.join(BACKENDS)} or another registered backend (default {defaults.backend})",
        )
        comp.add_argument(
            "--mode", metavar="MODE", help=f"{', '.join(MODES)} (inductor only; default: {defaults.mode})"
        )
        comp.add_argument(
            "--fullgraph", action=argparse.BooleanOptionalAction, default=None, help="refuse graph breaks"
        )
        comp.add_argument("--dynamic", metavar="WHICH", help=f"{', '.join(DYNAMIC_CHOICES)} (default auto)")
        comp.add_argument("--dtype", metavar="DTYPE", help=f"{', '.join(DTYPES)} (default {defaults.dtype})")
    comp.add_argument(
        "--option", action="append", metavar="K=V", help="an inductor option, e.g. triton.cudagraphs=false (repeatable)"
    )
    if sweep:
        comp.add_argument("--precision", metavar="LIST", help=f"comma list of precisions ({', '.join(PRECISIONS)})")
    else:
        comp.add_argument("--precision", metavar="WHICH",
                          help=f"{', '.join(PRECISIONS)}: torch's TF32 flags untouched, TF32 off, or on for matmuls "
                               f"and cuDNN, both sides (default {defaults.precision})")
    comp.add_argument(
        "--tf32", action="store_true", default=None, help="the same as --precision tf32 (kept for scripts that use it)"
    )
    comp.add_argument(
        "--cold-compile",
        action="store_true",
        default=None,
        help="a fresh inductor/triton cache dir (true cold compile)",
    )

    timing = parser.add_argument_group("timing")
    timing.add_argument("--warmup", type=int, metavar="N",
                        help=f"warm-up calls per side, then more until the time settles; 0: only the "
                             f"3 compiled calls CUDA graphs need (default {defaults.warmup})")
    timing.add_argument(
        "--iters", type=int, metavar="N", help=f"measured iterations per side (default {defaults.iters})"
    )
    timing.add_argument(
        "--block-size", type=int, metavar="N", help=f"iterations per interleaved block (default {defaults.block_size})"
    )
    timing.add_argument("--time-budget", type=float, metavar="S", help="stop measuring after S seconds")
    timing.add_argument(
        "--l2-flush", action="store_true", default=None, help="flush the L2 cache between iterations (GPU)"
    )
    timing.add_argument(
        "--timeout", type=float, metavar="S", help=f"kill a run after S seconds (default {defaults.timeout_s:g})"
    )
    timing.add_argument("--no-profile", dest="profile", action="store_false", default=None,
                        help="skip the profile pass after measuring (kernels per call, the kernel diff; "
                             "never part of the timings)")
    timing.add_argument("--seed", type=int, metavar="N", help=f"random seed (default {defaults.seed})")
    timing.add_argument("--target-ci", type=float, metavar="F",
                        help="measure on (within --time-budget, else 60 s) until the speedup's 95%% interval is at "
                             "most F wide relative to it, e.g. 0.02")
    timing.add_argument("--repeat", metavar="K|auto",
                        help="run each configuration in K fresh worker processes, interleaved with the other "
                             "configurations; one row each, with an interval across processes. auto: one, and more "
                             "(up to 5) for launch-bound ones until that interval is within --target-ci (else 2%%); "
                             "a launch-bound host verdict needs two or more (default auto: CPU runs stay one)")
    timing.add_argument(
        "--memory-limit", type=float, metavar="GB",
        help="CPU runs: cap the worker's address space at GB gigabytes; a bigger allocation fails the run "
             "as out_of_memory instead of waking the system's OOM killer (default: no limit)",
    )

    verdict = parser.add_argument_group(
        "verdict", "faster / slower / no change / inconclusive / noisy: see the README's Verdict section"
    )
    verdict.add_argument(
        "--noise-threshold",
        type=float,
        metavar="T",
        help=f"faster when the interval's low end exceeds 1 + T (default {defaults.noise_threshold:g})",
    )
    verdict.add_argument("--noise-limit", action="append", metavar="NAME=VALUE",
                         help="change one limit of the noisy check, e.g. max_relative_iqr=0.2 (repeatable)")
    verdict.add_argument("--strict", action="store_true",
                         help="exit 3 when a run's verdict is noisy or inconclusive (for CI)")

    out = parser.add_argument_group(
        "output",
        "Exports write a regular file or create one; a link, directory, device, pipe or socket, "
        "compile-lab's own history, runs or config, and two outputs to one file are refused before anything runs.",
    )
    from tui.engine.export import EXPORT_FORMATS

    for fmt in EXPORT_FORMATS:
        out.add_argument(fmt.flag, metavar="PATH", help=f"write {fmt.contents}")
    trace_help = ("a directory, one file per configuration (NN-workload-options.json)" if sweep
                  else "a file (both sides in one trace)")
    out.add_argument("--trace", metavar="PATH",
                     help=f"write the profile pass as a Chrome/Perfetto trace (open it in ui.perfetto.dev) to PATH: "
                          f"{trace_help}; also kept in each run's data folder")
    out.add_argument("--torch-trace", action="store_true", default=None,
                     help="keep a TORCH_TRACE directory per run in its data folder (for tlparse); such a run starts "
                          "a fresh worker, and its compile time includes torch's structured logging")
    out.add_argument("--tlparse", action="store_true",
                     help="with --torch-trace (implied): run tlparse, if it is on PATH, on each run's logs afterwards "
                          "and print the report's path")
    out.add_argument("--no-history", action="store_true", help="do not append the runs to the history")
    out.add_argument("--quiet", action="store_true", help="no progress and no table (errors still go to stderr)")


_DEBUG_HELP = "log everything, to the log file and to stderr (`compile-lab env` names the file)"


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``compile-lab`` (errors raise UsageError instead of exiting)."""
    parser = _Parser(
        prog=PROG,
        description="Benchmarks eager PyTorch against torch.compile, honestly. Without a subcommand it opens the app.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--debug", action="store_true", help=_DEBUG_HELP)
    parser.add_argument("--no-mouse", action="store_true", help="app: do not capture the mouse")
    parser.add_argument("--theme", metavar="NAME", help="app: a Textual theme")
    parser.add_argument("--cluster", dest="app_cluster", metavar="ADDRESS",
                        help="app: every run goes to this Ray cluster (auto or HOST:PORT; docs/CLUSTER.md)")
    parser.add_argument("--cluster-cpus", dest="app_cluster_cpus", type=float, metavar="N",
                        help="app: with --cluster, the CPUs each run asks Ray for (default 1)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = sub.add_parser(
        "run", help="benchmark one configuration", description="Benchmark one configuration: eager vs torch.compile."
    )
    _add_run_flags(run, sweep=False)
    sweep = sub.add_parser(
        "sweep",
        help="benchmark every combination of lists",
        description=(
            "Benchmark every combination of the listed modes, fullgraph, dynamic, backends, dtypes, "
            "precisions and parameter values, one after another (combinations a backend ignores run once)."
        ),
    )
    _add_run_flags(sweep, sweep=True)
    env = sub.add_parser(
        "env",
        help="check torch, CUDA, triton, the C++ compiler and NVML",
        description="Check the environment compile-lab runs in.",
    )
    env.add_argument("--python", metavar="PATH", help="check this interpreter instead of this one")
    sub.add_parser(
        "workloads",
        help="list the built-in workloads",
        description="List the built-in workloads and how to use your own.",
    )
    prune = sub.add_parser(
        "prune", help="delete older runs' stored files (samples, code, traces)",
        description="Delete the files older runs keep beside the history (per-iteration samples, generated code, "
                    "traces), oldest first; the history lines stay, so every run still loads, its files marked "
                    "gone. Each rule given adds runs to prune.",
    )
    prune.add_argument("--keep-last", type=int, metavar="N", help="prune all but the N most recent runs")
    prune.add_argument("--older-than", type=float, metavar="DAYS", help="prune runs older than DAYS days")
    prune.add_argument("--max-size", type=float, metavar="GB", help="prune the oldest runs until the rest fit in GB")
    prune.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    from tui.cli.compare import add_compare_parser  # here: tui.cli.compare imports this module

    add_compare_parser(sub)
    from tui.cli.report import add_report_parser  # here: tui.cli.report imports this module

    add_report_parser(sub)
    for command in sub.choices.values():  # --debug after the command too (``compile-lab run --debug``)
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=_DEBUG_HELP)
    return parser


def split_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [part.strip() for part in text.split(",") if part.strip()]


def options_from_args(args: argparse.Namespace, sweep: bool = False) -> RunOptions:
    """A RunOptions from the parsed flags (not validated; sweep axes are left at their defaults)."""
    given: dict[str, Any] = {}
    for flag, name in (
        ("workload", "workload"),
        ("device", "device"),
        ("python", "python"),
        ("train", "train"),
        ("compile_optimizer", "compile_optimizer"),
        ("cold_compile", "cold_compile"),
        ("warmup", "warmup"),
        ("iters", "iters"),
        ("block_size", "block_size"),
        ("time_budget", "time_budget_s"),
        ("l2_flush", "l2_flush"),
        ("timeout", "timeout_s"),
        ("memory_limit", "memory_limit_gb"),
        ("seed", "seed"),
        ("profile", "profile"),
        ("torch_trace", "torch_trace"),
        ("target_ci", "target_ci"),
        ("noise_threshold", "noise_threshold"),
    ):
        value = getattr(args, flag, None)
        if value is not None:
            given[name] = value
    if getattr(args, "trace", None) is not None:
        given["trace"] = True
    if getattr(args, "tlparse", False):
        given["torch_trace"] = True
    if args.option:
        given["inductor_options"] = parse_key_values(args.option, "inductor_options")
    if getattr(args, "noise_limit", None):
        given["noise_limits"] = parse_key_values(args.noise_limit, "noise_limits")
    if not sweep:
        precisions = precisions_from_args(args, sweep=False)
        if precisions is not None:
            given["precision"] = precisions[0]
        for name in ("backend", "mode", "dtype", "fullgraph"):
            if getattr(args, name) is not None:
                given[name] = getattr(args, name)
        if args.dynamic is not None:
            given["dynamic"] = parse_dynamic(args.dynamic)
        if args.param:
            given["params"] = parse_key_values(args.param, "params")
    return RunOptions(**given)


def precisions_from_args(args: argparse.Namespace, sweep: bool) -> list[str] | None:
    """``--precision`` (a comma list with ``sweep``), ``--tf32`` read as ``--precision tf32``; None: neither.

    The values are checked where the options are (RunOptions.validated, the sweep); a ``--tf32``
    beside another precision is an OptionsError naming both.
    """
    text = getattr(args, "precision", None)
    values = split_list(text) if sweep else (None if text is None else [text])
    if getattr(args, "tf32", None):
        if values is not None and values != ["tf32"]:
            raise OptionsError("precision", f"--tf32 (the same as --precision tf32) contradicts --precision {text} "
                                            "(allowed: one of the two)")
        values = ["tf32"]
    return values


def repeat_from_args(args: argparse.Namespace) -> int | str:
    """``--repeat``: a count of processes per configuration or ``"auto"`` (OptionsError, one line)."""
    from tui.engine.repeats import parse_repeat

    from tui.engine.repeats import DEFAULT_REPEAT

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
    if args.command == "run":
        return [options_from_args(args).validated()]
    return _sweep_configs(args)


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
    if cpus is not None and not (0 < cpus <= 1024):
        raise UsageError(f"--cluster-cpus: {cpus:g} is not allowed (allowed: a number of CPUs above 0, at most 1024)")
    return DEFAULT_CPUS if cpus is None else cpus


def device_pool_from_args(args: argparse.Namespace, gpu_count: Any = None) -> tuple[str, ...]:
    """``--device cuda:all`` / ``cuda:0,cuda:3``: the GPUs (``args.device`` becomes the first); else ().

    ``gpu_count`` (a number, or a function giving it) is asked only for ``cuda:all`` or to check a
    list; by default the GPUs this process can see (CUDA_VISIBLE_DEVICES, else NVML).
    """
    from tui.engine.placement import is_pool, parse_device_pool

    text = getattr(args, "device", None)
    if not text or not is_pool(text):
        return ()
    if gpu_count is None:
        from tui.engine.runner.gpu_lock import visible_gpu_count

        gpu_count = visible_gpu_count
    pool = parse_device_pool(text, gpu_count() if callable(gpu_count) else gpu_count)
    args.device = pool[0]
    return pool


def _sweep_configs(args: argparse.Namespace) -> list[RunOptions]:
    from tui.engine.sweep import expand

    base = options_from_args(args, sweep=True)
    grid: dict[str, list[Any]] = {}
    for item in args.param or ():
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise OptionsError("params", f"{item!r} is not key=value[,value...]")
        parts = [v.strip() for v in values.split(",") if v.strip()]
        if not parts:
            raise OptionsError("params", f"{key} has no value")
        grid.setdefault(key, [])
        for part in parts:
            grid[key].append(parse_key_values([f"{key}={part}"], "params")[key])
    fullgraphs = None
    if args.fullgraph is not None:
        choice = args.fullgraph.strip().lower()
        table = {"both": [False, True], "true": [True], "false": [False]}
        if choice not in table:
            raise OptionsError("fullgraph", f"{args.fullgraph!r} is not allowed (allowed: both, true, false)")
        fullgraphs = table[choice]
    pythons = split_list(args.python)
    if pythons is not None and len(pythons) > 1:
        from tui.engine.ab import check_interpreter

        base = dataclasses.replace(base, python=None)
        for python in dict.fromkeys(pythons):
            check_interpreter(python)
    return expand(
        base,
        pythons=pythons,
        modes=split_list(args.mode),
        fullgraphs=fullgraphs,
        dynamics=split_list(args.dynamic),
        backends=split_list(args.backend),
        dtypes=split_list(args.dtype),
        precisions=precisions_from_args(args, sweep=True),
        params_grid=grid or None,
    )
