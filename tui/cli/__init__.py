"""The ``compile-lab`` command line: run, sweep, tune, env, workloads, prune, history, compare, report; no subcommand
opens the app.

This package imports neither torch nor textual: runs happen in worker processes
(:class:`tui.engine.runner.WorkerRunner`) driven by a :class:`tui.engine.run.session.RunSession`,
the environment check's torch part runs in a subprocess (``python -m
tui.engine.worker.envcheck``), and it never imports the app: with no subcommand it calls the
``open_app`` it was given (:mod:`tui.launch`, the ``compile-lab`` entry point, gives the app's). Labels
and formats come from :mod:`tui.present`, which the app shares.

Modules: :mod:`~tui.cli.parse` (flags -> run options), :mod:`~tui.cli.run` (the run loop),
:mod:`~tui.cli.render` (the results table), :mod:`~tui.cli.info` (``env``, ``workloads``),
:mod:`~tui.cli.artifacts` (``--trace``, ``--torch-trace``/``--tlparse``, ``prune``), :mod:`~tui.cli.history`
(``history [RUNS]``: the stored runs and sessions, with the ids to select them), :mod:`~tui.cli.compare`
(``compare BASE NEW``, its own exit codes: 1 when the gate fails), :mod:`~tui.cli.report` (``report RUNS -o FILE``:
one HTML file to share; matplotlib is imported only then).

Exit codes: 0 when every run succeeded, 1 when one failed, 3 with ``--strict`` when every run
succeeded but one's verdict (or host verdict) is ``noisy`` or ``inconclusive`` or its compiled output
failed the accuracy check, 4 where it would be 0
or 3 but a run's history line could not be written (stderr names the file and why, as it happens;
the exports are written), 2 on bad usage (one line
``compile-lab: error: <field>: <what is allowed>`` on stderr; an output path no export may
write is bad usage too, refused before anything runs), 130 after Ctrl-C and
128 + N after signal N (the workers are killed first; runs that ended, cancelled ones
included, are still exported and in the history; with no run done or failed nothing is
exported and an existing file is left as it was).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from tui import __version__, logs
from tui.cli.outputs import check_exports, check_home
from tui.cli.parse import PROG, UsageError, configs_from_args, options_from_args, repeat_from_args
from tui.cli.usage import usage_line
from tui.cli.parser import build_parser
from tui.engine.options import OptionsError

__all__ = ["main", "build_parser", "options_from_args", "configs_from_args", "make_runner"]

log = logging.getLogger(__name__)


def make_runner(keep_spare: bool, telemetry: Any = None, env: Any = None) -> Any:
    """The WorkerRunner the CLI runs with (tests replace this to use a fake worker).

    ``env``: extra worker environment (a pooled GPU lane's CPU cores).
    """
    from tui.engine.runner import WorkerRunner

    return WorkerRunner(keep_spare=keep_spare, telemetry=telemetry, env=env)


AppOpener = Callable[..., int]
"""Opens the app: ``open_app(no_mouse=..., theme=..., cluster=...)`` -> exit code (:func:`tui.launch.open_app`)."""


def main(argv: Sequence[str] | None = None, open_app: AppOpener | None = None) -> int:
    """Run the command line; returns the exit code. With no subcommand, ``open_app`` opens the app."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except UsageError as exc:
        return _usage_error(str(exc))
    except SystemExit as exc:  # --help, --version
        return int(exc.code or 0)
    # The app draws on the terminal: under it --debug logs everything to the file only.
    logs.setup(debug=args.debug, stderr=args.command is not None)
    log.debug("%s %s: %s", PROG, __version__, " ".join(sys.argv[1:] if argv is None else argv))
    if args.command is None:
        return _open_app(args, open_app)
    if args.command == "workloads":
        from tui.cli.info import cmd_workloads

        return cmd_workloads()
    if args.command == "env":
        from tui.cli.info import cmd_env

        return cmd_env(args)
    if args.command == "prune":
        from tui.cli.artifacts import cmd_prune

        return cmd_prune(args)
    if args.command == "report":
        from tui.cli.report import cmd_report

        try:
            return cmd_report(args)
        except UsageError as exc:
            return _usage_error(str(exc))
    if args.command == "history":
        from tui.cli.history import cmd_history

        try:
            return cmd_history(args)
        except UsageError as exc:
            return _usage_error(str(exc))
    if args.command == "compare":
        from tui.cli.compare import cmd_compare

        try:
            return cmd_compare(args)
        except UsageError as exc:
            return _usage_error(str(exc))
    if args.command == "tune":
        from tui.cli.tune import cmd_tune

        # Looked up here, not imported: tests replace make_runner on this module.
        return cmd_tune(args, sys.modules[__name__].make_runner)
    try:
        configs = configs_from_args(args)
        args.repeat = repeat_from_args(args)
        check_exports(args)
        check_home(args)
    except (OptionsError, UsageError) as exc:
        return _usage_error(usage_line(exc))
    from tui.cli.run import run_configs

    # Looked up here, not imported: tests replace make_runner on this module.
    return asyncio.run(run_configs(configs, args, sys.modules[__name__].make_runner))


def _usage_error(message: str) -> int:
    sys.stderr.write(f"{PROG}: error: {message}\n")
    return 2


def _open_app(args: argparse.Namespace, open_app: AppOpener | None) -> int:
    if open_app is None:
        print(f"{PROG}: no app here (run `{PROG}` or `python -m tui` to open it); `{PROG} run --help` shows the "
              "command line")
        return 0
    try:
        cluster = _app_cluster(args)
    except UsageError as exc:
        return _usage_error(str(exc))
    return int(open_app(no_mouse=args.no_mouse, theme=args.theme, cluster=cluster) or 0)


def _app_cluster(args: argparse.Namespace) -> Any:
    """The app's ``--cluster``: a ClusterLink (not connected yet: Ray is imported at the first run), or None."""
    address, cpus = getattr(args, "app_cluster", None), getattr(args, "app_cluster_cpus", None)
    if address is None:
        if cpus is not None:
            raise UsageError("--cluster-cpus applies with --cluster only")
        return None
    from tui.engine.cluster.link import ClusterLink
    from tui.cli.parse import cluster_cpus
    from tui.engine.cluster.address import ClusterError, parse_address

    try:
        address = parse_address(address)
    except ClusterError as exc:
        raise UsageError(str(exc)) from None
    return ClusterLink(address, cluster_cpus(cpus))
