"""The ``compile-lab`` command line's argparse parser: the app's flags and every subcommand's."""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterator
from typing import Any

from tui import __version__
from tui.cli.compare import add_compare_parser
from tui.cli.artifacts import PRUNE_ALLOWED
from tui.cli.history import add_history_parser
from tui.cli.parse import PROG, UsageError
from tui.cli.report import add_report_parser
from tui.cli.run_flags import add_run_flags
from tui.cli.tune import NOT_TAKEN as TUNE_NOT_TAKEN, add_tune_parser
from tui.cli.usage import number_flag
from tui.engine.cluster.address import CPUS_ALLOWED

__all__ = ["build_parser"]


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and raise instead of exiting."""

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        """argparse's own, but an unrecognized flag is guessed among the flags of the command it was given to."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            raise UsageError(_with_guess("unrecognized arguments: " + " ".join(extras), self,
                                         getattr(parsed, "command", None)))
        return parsed

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(_with_hint(" ".join(message.split())))


_MISSING_VALUE = re.compile(r"argument (--[\w-]+)(?:/\S+)?: expected one argument$")


def _with_hint(message: str) -> str:
    """argparse's message, with how to write a value that starts with ``-`` where a flag found none.

    argparse reads ``--budget -5s`` as a flag without its value (``-5s`` looks like an option; only a plain
    negative number does not), so the field's own check, which would name what is allowed, never sees it.
    """
    found = _MISSING_VALUE.search(message)
    if found is None:
        return message
    return f"{message} (if the value starts with '-', write {found.group(1)}=VALUE)"


_NOT_TAKEN = {"tune": TUNE_NOT_TAKEN}
"""Per command, the flags it takes none of on purpose (another command's), and why."""


def _with_guess(message: str, parser: argparse.ArgumentParser, command: str | None) -> str:
    """``unrecognized arguments`` with, for each misspelt flag, the nearest flag ``command`` takes (the app's own
    without one): ``--itres: did you mean --iters?``; for a flag the command takes none of on purpose, why
    (``--mode: the search tries the modes itself (--space modes)``)."""
    flags = set(_long_flags(_command_parser(parser, command)))
    why_not = _NOT_TAKEN.get(command or "", {})
    guesses = []
    for word in message.split(": ", 1)[1].split():
        flag = word.split("=", 1)[0]
        if flag in why_not:
            guesses.append(f"{flag}: {why_not[flag]}")
        elif flag.startswith("--") and flag not in flags:
            guesses += [f"{flag}: did you mean {near[0]}?"
                        for near in [difflib.get_close_matches(flag, sorted(flags), n=1, cutoff=0.75)] if near]
    return message + (f" ({'; '.join(guesses)})" if guesses else "")


def _command_parser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The parser of ``command`` (``parser`` itself for none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser


def _long_flags(parser: argparse.ArgumentParser) -> Iterator[str]:
    """Every ``--flag`` of ``parser`` (not of its commands)."""
    for action in parser._actions:
        yield from (option for option in action.option_strings if option.startswith("--"))


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
    parser.add_argument("--cluster-cpus", dest="app_cluster_cpus", metavar="N",
                        type=number_flag("--cluster-cpus", CPUS_ALLOWED),
                        help="app: with --cluster, the CPUs each run asks Ray for (default 1)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = sub.add_parser(
        "run", help="benchmark one configuration", description="Benchmark one configuration: eager vs torch.compile."
    )
    add_run_flags(run, sweep=False)
    sweep = sub.add_parser(
        "sweep",
        help="benchmark every combination of lists",
        description=(
            "Benchmark every combination of the listed modes, fullgraph, dynamic, backends, dtypes, "
            "precisions and parameter values, one after another (combinations a backend ignores run once)."
        ),
    )
    add_run_flags(sweep, sweep=True)
    add_tune_parser(sub)
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
    for flag, metavar, helped in (("--keep-last", "N", "prune all but the N most recent runs"),
                                  ("--older-than", "DAYS", "prune runs older than DAYS days"),
                                  ("--max-size", "GB", "prune the oldest runs until the rest fit in GB")):  # fmt: skip
        read = number_flag(flag, PRUNE_ALLOWED[flag], integer=flag == "--keep-last")
        prune.add_argument(flag, type=read, metavar=metavar, help=helped)
    prune.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    add_history_parser(sub)
    add_compare_parser(sub)
    add_report_parser(sub)
    for command in sub.choices.values():  # --debug after the command too (``compile-lab run --debug``)
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=_DEBUG_HELP)
    return parser
