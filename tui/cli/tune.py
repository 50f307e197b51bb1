"""``compile-lab tune``: find the fastest torch.compile configuration of a workload on a device, and prove it.

The flags are ``run``'s run options (the option table's, :func:`tui.cli.run_flags.add_option_flags`)
without those the search sets (backend, mode, fullgraph, dynamic) or that it does not repeat per
run (the traces), then the search's own: ``--budget``, ``--space``, ``--objective``, ``--calls``,
``--max-memory``, and the exports. ``--option K=V`` pins an inductor option in every candidate.

The search (:class:`tui.engine.tune.driver.TuneDriver`) runs through a
:class:`~tui.engine.run.session.RunSession`, as ``run`` does: every run is in the history and the
exports, tagged with the tune's id. Ctrl-C (or SIGTERM/SIGHUP) kills the worker and ends the search
with the best so far, unconfirmed, once the cancelled runs have ended (a run stopped in its profile
pass keeps its measurement and is scored, as in the history); the exit code is 128 + the signal.
Otherwise 0, or 1 when an export could not be written or nothing was measured (every run failed: the
answer says why); 2 on bad usage (one line), and when the budget held no run at all or ended every run it started
before one was measured (one line naming ``--budget``; the runs are in the history and the exports).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from tui.cli.parse import PROG, UsageError, check_cluster, device_pool_from_args, options_from_args
from tui.cli.run_flags import add_cluster_flags, add_option_flags, add_output_flags
from tui.cli.usage import flag_of, usage_line
from tui.engine.cluster.address import ClusterError
from tui.engine.options import OptionsError, RunOptions
from tui.engine.run.session import RunSession, SessionListener
from tui.engine.tune.answer import NOTHING_MEASURED
from tui.engine.tune.objective import DEVICE, OBJECTIVES, Objective
from tui.engine.tune.probe import ask_torch
from tui.engine.tune.request import (
    BUDGET_MAX_S, SearchPlan, check_request, parse_budget, plan_refused, SPACE,
    plan_search, probe_keys,
)  # fmt: skip
from tui.engine.tune.space import SPACE_GROUPS
from tui.present.format import workload_word

__all__ = ["add_tune_parser", "cmd_tune", "parse_budget", "tune_settings", "BUDGET_MAX_S", "NOT_TAKEN"]

log = logging.getLogger(__name__)

SEARCHED = ("backend", "mode", "fullgraph", "dynamic", "trace", "torch_trace")
"""Run options ``tune`` takes no flag for: it searches them (inductor's), or runs no trace per candidate."""
NOT_TAKEN = {
    "--backend": "the search compiles with inductor",
    "--mode": "the search tries the modes itself (--space modes)",
    "--fullgraph": "the search tries it itself (--space axes)",
    "--no-fullgraph": "the search tries it itself (--space axes)",
    "--dynamic": "the search tries it itself (--space axes)",
    "--repeat": "the search sets each candidate's processes, and confirms the winner in 3 or more a side",
    "--trace": "a search runs no trace per candidate (trace its answer with compile-lab run --trace)",
    "--torch-trace": "a search runs no trace per candidate (trace its answer with compile-lab run --torch-trace)",
    "--tlparse": "a search runs no trace per candidate (trace its answer with compile-lab run --tlparse)",
    "--strict": "a search answers in its words (confirmed, unconfirmed, nothing beats the default), not its exit code",
    "--serial": "a search deals its runs to the pool's GPUs itself, its confirmation in matched pairs",
    "--each-gpu-kind": "a search tunes on GPUs of one kind (a pool of several kinds is refused)",
}
"""``run``'s flags that ``tune`` takes none of on purpose, and why: a user who gives one is told so, not only that it
is unrecognized."""
STOPPING_S = 5.0
"""How long a stopped search waits for the runs it cancelled to end before it answers, and for the session to close."""


def add_tune_parser(sub: Any) -> None:
    """The ``tune`` subcommand and its flags."""
    tune = sub.add_parser(
        "tune", help="find the fastest torch.compile configuration and confirm it",
        description="Race torch.compile configurations (modes, fullgraph, dynamic, inductor options) on one "
                    "workload and device in fresh processes, drop the clearly worse, and confirm the winner "
                    "against the default compile and eager in fresh processes (README: Tune).")
    groups = add_option_flags(tune, sweep=False, skip=SEARCHED)
    add_cluster_flags(groups["cluster"])
    search = tune.add_argument_group("search")
    search.add_argument("--budget", metavar="TIME", default="10m",
                        help="the search's wall-clock budget: 90s, 10m, 1h (default 10m); no run starts that the "
                             "estimate says would not fit")
    search.add_argument("--space", metavar="LIST",
                        help=f"what to try: a comma list of {', '.join(SPACE_GROUPS)} or knob names (default all)")
    search.add_argument("--objective", metavar="WHICH", default=DEVICE,
                        help=f"{', '.join(OBJECTIVES)}: device time per iteration (on the CPU the one clock), or the "
                             "host-inclusive time per call (launch-bound serving) (default device)")
    search.add_argument("--calls", metavar="N",
                        help="charge the compile time over a job of N calls (per-call time + compile time / N)")
    search.add_argument("--max-memory", metavar="GB",
                        help="leave out candidates whose peak memory (CUDA) is above GB; lower memory breaks ties")
    add_output_flags(groups["output"])


def tune_settings(args: argparse.Namespace) -> tuple[RunOptions, Objective, tuple[str, ...], float]:
    """The base options, the objective, the knobs and the budget of a parsed ``tune``; OptionsError or UsageError
    (one line). ``args.device_pool``: the GPUs of ``--device cuda:all`` or a list (``args.device`` their first)."""
    check_cluster(args)
    args.device_pool = () if args.cluster else device_pool_from_args(args)
    base = options_from_args(args).validated()
    request = check_request(args.objective, args.calls, args.max_memory, args.space, args.budget)
    return base, request.objective, request.knobs, request.budget_s


def cmd_tune(args: argparse.Namespace, make_runner: Callable[..., Any]) -> int:
    """``compile-lab tune``: check the flags (exit 2 with one line), then search; the exit code."""
    from tui.cli.outputs import check_exports, check_home

    try:
        settings = tune_settings(args)
        check_exports(args)
        check_home(args)
    except (OptionsError, UsageError) as exc:
        sys.stderr.write(f"{PROG}: error: {usage_line(exc)}\n")
        return 2
    return asyncio.run(_tune(args, settings, make_runner))


async def _tune(args: argparse.Namespace, settings: tuple[RunOptions, Objective, tuple[str, ...], float],
                make_runner: Callable[..., Any]) -> int:
    from rich.console import Console

    from tui.cli.run import _export, _runners, exported
    from tui.cli.terminal import TerminalFile, signals_deferred
    from tui.cli.tune_render import TuneLines, print_answer
    from tui.engine.store.repeats import group_rows
    from tui.engine.tune.driver import TuneDriver

    base, objective, knobs, budget = settings
    began = time.monotonic()  # the probe is part of the budget
    out, err_file = TerminalFile(sys.stdout), TerminalFile(sys.stderr)
    err = Console(file=err_file.as_io(), soft_wrap=True)
    telemetry = None if args.cluster else _telemetry(base)
    try:
        lanes, cluster = await _lanes(args, base, telemetry)
    except (ClusterError, OptionsError) as exc:
        err.print(f"{PROG}: error: {usage_line(exc)}", markup=False, highlight=False)
        return 2
    lines = TuneLines(err, quiet=args.quiet)
    plan, refusal = await _plan(args, settings, lines, lanes, cluster)
    if refusal is not None:  # found once torch has said what it has: nothing ran
        fault, why = refusal
        err.print(f"{PROG}: error: {'--space' if fault == SPACE else flag_of(fault)}: {why}", markup=False,
                  highlight=False)
        return 2
    history = None
    if not args.no_history:
        from tui.engine.store.history import History

        history = History()
    runner_for = await _runners(tuple(args.device_pool), make_runner, True, telemetry, cluster)
    # A search decides its next run only when a run ends, so nothing is queued when one starts: "runner" keeps the
    # runners' warm spare all the same, and the next candidate skips importing torch (what the app does too).
    session = RunSession(runner_for, history, _Saved(lines), spare="runner")
    driver = TuneDriver(session, base, plan.candidates, objective, budget, pinned=base.inductor_options,
                        modes=plan.modes, listener=lines, started=began, pool=lanes)
    driver.notes.extend(plan.notes)
    result, stopped_by = await _search(session, driver)
    if result.runs == 0 and result.incomplete is not None and not stopped_by:  # the budget held no run: nothing ran
        err.print(f"{PROG}: error: --budget: {_no_run_text(args.budget, result.elapsed_s)}", markup=False,
                  highlight=False)
        return 2
    json_extra = None
    if args.json:  # the answer as data goes into the JSON export alone
        from tui.present.tune_json import answer_json

        json_extra = {"tune": answer_json(result, plan.modes, kept=(args.json, history is not None))}
    stopped_before = len(stopped_by)
    with signals_deferred(stopped_by):  # a signal now waits until the exports and the answer are written whole
        export_failed = _export(group_rows(exported(session, args, err)), args, err, json_extra)
        if result.cut_before_measuring and not stopped_before:
            err.print(f"{PROG}: error: --budget: {_cut_text(args.budget)}", markup=False, highlight=False)
            return 2
        print_answer(result, Console(file=out.as_io(), soft_wrap=True), plan.modes, quiet=args.quiet,
                     kept=(None if export_failed else args.json, history is not None), said=lines.said)
    for stream in (out, err_file):
        stream.let_go()
    if stopped_by:
        return 128 + stopped_by[0]
    return 1 if export_failed or result.outcome == NOTHING_MEASURED else 0


async def _plan(args: argparse.Namespace, settings: tuple[RunOptions, Objective, tuple[str, ...], float],
                lines: Any, lanes: tuple[str, ...], cluster: Any) -> tuple[SearchPlan, tuple[str, str] | None]:
    """Ask the torch where the runs run which options it has, and say what the search will try (its notes); the
    plan, and why it cannot start (:func:`plan_refused`; the notes are held back where every run would fail)."""
    base, objective, knobs, budget = settings
    lines.note(f"tune: {workload_word(base)} on {base.device}, objective {objective.describe()}, budget {budget:g} s; "
               f"asking the worker's torch{' on a node of the cluster' if cluster else ''} which options it has")
    if lanes:
        lines.note(_lanes_text(lanes, args))
    found = await ask_torch(probe_keys(base), base.python, cluster, base.device)  # where the runs run
    plan = await asyncio.to_thread(plan_search, base, knobs, found)
    refusal = plan_refused(plan, base.device)
    for note in plan.notes if refusal is None or refusal[0] == SPACE else ():  # refused: the error alone
        lines.note(note)
    if cluster is not None:
        lines.note(_cluster_probe_text(plan))
    return plan, refusal


async def _search(session: RunSession, driver: Any) -> tuple[Any, list[int]]:
    """The driver's result once it ends; the signals that stopped it.

    A signal stops the driver, which then ends as the app's does, once the runs it cancelled have ended (within
    :data:`STOPPING_S`): a run stopped after its measurement ends done (:mod:`tui.engine.run.kept`) and is scored,
    so the answer reads it as the history and the exports do (:mod:`tui.engine.tune.runs`). A run still stopping
    after that is read as stopped."""
    from tui.cli.terminal import forget_cancel, signal_words, signals_stop

    stopped_by: list[int] = []
    with signals_stop(session, stopped_by):
        search = asyncio.ensure_future(driver.run())
        try:
            try:
                await asyncio.wait({search})  # a signal cancels this task, not the search's
            except asyncio.CancelledError:
                forget_cancel()
                driver.stop(signal_words(stopped_by[0] if stopped_by else signal.SIGINT))
                await asyncio.wait({search}, timeout=STOPPING_S)
            if not search.done():
                search.cancel()
                await asyncio.wait({search})
            result = driver.result() if search.cancelled() else search.result()
        finally:
            await session.aclose(timeout=STOPPING_S)
    return result, stopped_by


async def _lanes(args: argparse.Namespace, base: RunOptions, telemetry: Any) -> tuple[tuple[str, ...], Any]:
    """Where the search's runs go and the cluster link: a Ray cluster's lanes (``--cluster``), a GPU pool of one
    kind (``--device cuda:all`` or a list), or none (one run at a time); ClusterError or OptionsError (one line)."""
    from tui.cli.run import _cluster

    cluster = _cluster(args)
    if cluster is not None:
        return await cluster.lanes([base]), cluster
    pool = tuple(args.device_pool)
    if len(pool) <= 1:
        return (), None
    from tui.engine.runner.gpu_lock import pool_gpu_names
    from tui.engine.runner.wiring import one_kind_pool

    names = await asyncio.to_thread(pool_gpu_names, pool, telemetry)
    return one_kind_pool(pool, names), None


def _lanes_text(lanes: tuple[str, ...], args: argparse.Namespace) -> str:
    """What the progress says about the lanes: how many runs go at once, and where."""
    where = f"the Ray cluster at {args.cluster}" if args.cluster else ", ".join(lanes)
    return (f"{len(lanes)} runs at once on {where}, each candidate's run on the first free lane; the confirmation "
            "runs the winner and the default compile in matched pairs, side by side")


def _cluster_probe_text(plan: SearchPlan) -> str:
    """What ``--cluster`` means for the catalog: which torch was asked (a node's, or this machine's when the cluster
    could not be asked), and that a node whose torch differs fails the runs whose option it lacks."""
    if plan.torch is None:
        asked = f"{plan.asked} said nothing either, so the catalog is tried as it is" if plan.fallback else \
            f"{plan.asked} said nothing, so the catalog is tried as it is"
    elif plan.fallback:
        asked = f"the options tried are those {plan.asked} ({plan.torch}) has, not a node's"
    else:
        asked = f"the options tried are those {plan.asked} ({plan.torch}) has, asked on the cluster, where the runs run"
    if plan.fallback:
        return (f"{asked}; the cluster's nodes run their own torch, whose options may differ: a run whose option "
                "its node's torch lacks fails and is listed with its reason, and each run's record names the torch "
                "it ran with (give the nodes this torch)")
    return (f"{asked}; a run whose option its node's torch lacks (a node with another torch) fails and is listed "
            "with its reason, and each run's record names the torch it ran with (give every node one torch)")


def _no_run_text(budget: str, elapsed_s: float) -> str:
    """Why a search whose budget held no run ended, and what to give instead.

    No minimum is refused up front: a run's length (start-up, compile, measuring) is known only once
    one of this workload has run on this machine, and so is the torch probe's."""
    from tui.engine.tune.driver import CLOSING_S

    return (f"{budget} ran out before the first run could start ({elapsed_s:.0f} s went to asking torch "
            f"which options it has, {CLOSING_S:g} s are kept to close), so nothing ran; how long a run takes is known "
            "only once one has run: give room for several runs of this workload (the default is 10m)")


def _cut_text(budget: str) -> str:
    """Why a search whose budget ended every run it started before one was measured ended, and what to give."""
    return (f"{budget} ran out before any run was measured (the run it started reached the budget's end), "
            "so nothing can be judged: give room for several runs of this workload (the default is 10m)")


def _telemetry(base: RunOptions) -> Any:
    if not base.device.startswith("cuda"):
        return None
    from tui.telemetry.nvml import NvmlSource

    return NvmlSource()


class _Saved(SessionListener):
    """A run whose history line could not be written is said at once (the search goes on)."""

    def __init__(self, lines: Any) -> None:
        self.lines = lines

    def run_saved(self, record: Any, problem: str | None) -> None:
        if problem is not None:
            self.lines.error(problem)
