"""``compile-lab compare BASE NEW``: its flags, the one-line refusals, and the run of a comparison.

Exit codes: 0 when the gate passes, 1 when nothing was compared, a matched pair is ``slower`` by more
than ``--fail-above`` percent, NEW's runs failed where BASE's did not, or NEW's compiled output failed the
accuracy check where BASE's passed (with ``--strict`` also a ``noisy`` or ``inconclusive`` pair, a side with no
done run, or a row on one side only), 2 on bad usage (one line naming the argument and what is allowed).

``compare SELECTION --across gpu_name|node [--across-base VALUE]`` takes one selection instead of
BASE and NEW and sets its GPU kinds (or nodes) side by side (:mod:`tui.engine.compare.across`):
the same flags, outputs and gate, each kind judged against the baseline kind.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from tui.cli.outputs import check_outputs, selection_inputs
from tui.cli.parse import PROG, UsageError, problem_warnings
from tui.engine.compare import (
    ACROSS_FIELDS, MATCH_FIELDS, METRIC_NAMES, SELECTION_HELP, Across, AcrossError, CompareSettings, Comparison,
    SelectionError, check_ignore, compare, compare_across, load_selection, parse_selection,
)  # fmt: skip
from tui.engine.measure.verdict import LIMIT_NAMES

__all__ = ["add_compare_parser", "settings_from_args", "check_across", "cmd_compare", "MAX_THRESHOLD"]

MAX_THRESHOLD = 0.5
"""The largest ``--threshold`` (50%)."""


def add_compare_parser(sub: Any) -> None:
    """The ``compare`` subcommand on ``sub`` (argparse subparsers)."""
    parser = sub.add_parser(
        "compare", help="compare two sets of runs and gate on a regression (for CI)",
        description="Compare NEW against BASE, configuration by configuration: the change of the compiled time (and "
                    "the eager time, the speedup, the host time) with a bootstrap interval and a verdict. Exit code 1 "
                    "when a pair is slower by more than --fail-above percent, NEW's runs failed where BASE's did not, "
                    "or NEW's compiled output failed the accuracy check where BASE's passed; 2 on bad usage. "
                    f"BASE and NEW: {SELECTION_HELP}. With --across, one selection's GPU kinds (or nodes) side by "
                    "side instead, each judged against the first (or --across-base).",
    )
    parser.add_argument("base", metavar="BASE", help="the runs to compare against (the baseline); with --across, "
                        "the one selection whose kinds are compared")
    parser.add_argument("new", metavar="NEW", nargs="?", help="the runs to judge (not with --across)")
    parser.add_argument("--across", metavar="FIELD",
                        help=f"compare one selection's {' or '.join(f'{w}s ({n})' for n, w in ACROSS_FIELDS.items())} "
                             "side by side: the first is the baseline, each other is judged against it (give BASE "
                             "only)")
    parser.add_argument("--across-base", metavar="VALUE",
                        help="with --across: the baseline, by its value or a part of it (default: the first found)")
    parser.add_argument("--metric", metavar="NAME", default="compiled",
                        help=f"the gated metric: {', '.join(METRIC_NAMES)} (default compiled: the compiled side's "
                             "per-iteration time, device time on a GPU)")
    parser.add_argument(
        "--threshold",
        metavar="T",
        default="0.02",
        help="the verdict's threshold: faster/slower only beyond it (a fraction, 0.02, or 2%%; default 2%%)",
    )
    parser.add_argument("--fail-above", metavar="PCT", default="5",
                        help="exit 1 when a pair is slower by more than PCT percent (default 5)")
    parser.add_argument("--ignore", action="append", metavar="FIELD[,FIELD]",
                        help=f"leave fields out of the match, e.g. backend, torch_version, gpu_name (of: "
                             f"{', '.join(MATCH_FIELDS)})")
    parser.add_argument("--noise-limit", action="append", metavar="NAME=VALUE",
                        help="change one limit of the noisy check, e.g. max_other_cpu_cores=1.5 (repeatable)")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 also on a noisy or inconclusive pair, a side with no done run, or an unmatched "
                             "row")
    parser.add_argument("--markdown", action="store_true", help="print a GitHub Markdown table (for a PR comment)")
    parser.add_argument("--csv", metavar="PATH", help="write one row per pair (and unmatched row)")
    parser.add_argument("--json", metavar="PATH", help="write the whole comparison")


def _number(text: str, flag: str, allowed: str, low: float, high: float, *, fraction: bool = False,
            above_low: bool = False) -> float:
    """A number in [low, high] (or (low, high] with ``above_low``) from ``text``; UsageError naming ``flag``.

    ``fraction``: ``2%`` reads as 0.02 (else as 2, the flag's unit being a percentage already).
    """
    raw = text.strip()
    try:
        value = float(raw[:-1]) / (100 if fraction else 1) if raw.endswith("%") else float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not low <= value <= high or (above_low and value == low):
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise UsageError(f"{flag}: {shown!r} is not allowed (allowed: {allowed})")
    return value


def _noise_limits(items: list[str] | None) -> dict[str, float]:
    limits: dict[str, float] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in LIMIT_NAMES:
            raise UsageError(f"--noise-limit: {item[:40]!r} is not allowed (allowed: NAME=VALUE with NAME one of "
                             f"{', '.join(LIMIT_NAMES)})")
        limits[name] = _number(value, "--noise-limit", f"{name}=a number above 0", 0, math.inf, above_low=True)
    return limits


def settings_from_args(args: argparse.Namespace) -> CompareSettings:
    """The comparison's settings from the parsed flags (UsageError, one line, for a bad one)."""
    metric = args.metric.strip().lower()
    if metric not in METRIC_NAMES:
        raise UsageError(f"--metric: {args.metric[:40]!r} is not allowed (allowed: {', '.join(METRIC_NAMES)})")
    threshold = _number(args.threshold, "--threshold", f"a fraction above 0 and at most {MAX_THRESHOLD} (default "
                        "0.02), or a percentage (2%)", 0, MAX_THRESHOLD, fraction=True, above_low=True)
    fail_above = _number(args.fail_above, "--fail-above", "a percentage from 0 to 1000 (default 5)", 0, 1000)
    try:
        ignore = check_ignore(part for item in args.ignore or () for part in item.split(","))
    except ValueError as exc:
        raise UsageError(f"--ignore: {exc}") from None
    return CompareSettings(metric=metric, threshold=threshold, fail_above=fail_above, ignore=ignore,
                           strict=args.strict, noise_limits=_noise_limits(args.noise_limit))  # fmt: skip


def check_across(args: argparse.Namespace) -> None:
    """BASE and NEW, or one selection with ``--across`` (UsageError, one line, for anything else)."""
    if args.across is None:
        if args.across_base is not None:
            raise UsageError("--across-base: only with --across (allowed: compare SELECTION --across FIELD "
                             "--across-base VALUE)")
        if args.new is None:
            raise UsageError("the following arguments are required: NEW (or --across FIELD to set one selection's "
                             "GPU kinds or nodes side by side)")
        return
    args.across = args.across.strip()
    if args.across not in ACROSS_FIELDS:
        raise UsageError(f"--across: {args.across[:40]!r} is not allowed (allowed: {', '.join(ACROSS_FIELDS)})")
    if args.new is not None:
        raise UsageError(f"--across: sets one selection's {ACROSS_FIELDS[args.across]}s side by side, but NEW "
                         f"{args.new[:40]!r} was given too (allowed: compare SELECTION --across {args.across}, or "
                         "compare BASE NEW)")


def _load_across(args: argparse.Namespace, settings: CompareSettings) -> Across:
    """The selection read and its kinds compared; UsageError naming BASE, --across or --across-base."""
    try:
        records, found = load_selection(parse_selection(args.base))
    except SelectionError as exc:
        raise UsageError(f"BASE: {exc}") from None
    try:
        return compare_across(records, args.across, settings, baseline=args.across_base, selection=args.base,
                              problems=list(dict.fromkeys(found)))  # fmt: skip
    except AcrossError as exc:
        flag = "--across-base" if exc.baseline else f"--across {args.across}"
        raise UsageError(f"{flag}: {exc}") from None


def _load(args: argparse.Namespace, settings: CompareSettings) -> Comparison:
    """Both sides read and compared; UsageError naming BASE or NEW when one cannot be read."""
    sides, problems = [], []
    for name, text in (("BASE", args.base), ("NEW", args.new)):
        try:
            records, found = load_selection(parse_selection(text))
        except SelectionError as exc:
            raise UsageError(f"{name}: {exc}") from None
        sides.append(records)
        problems += [f"{name}: {line}" for line in found]
    return compare(sides[0], sides[1], settings, base_name=args.base, new_name=args.new,
                   problems=list(dict.fromkeys(problems)))  # fmt: skip


def _write(args: argparse.Namespace, result: Comparison | Across, err: Any) -> bool:
    """The --csv and --json files; False when one could not be written (said on ``err``)."""
    from tui.engine.compare.output import write_compare_csv, write_compare_json
    from tui.engine.store.export import ExportError

    written = True
    for flag, path, writer in (("--csv", args.csv, write_compare_csv), ("--json", args.json, write_compare_json)):
        if path is None:
            continue
        try:
            writer(result, path)
        except ExportError as exc:
            written = False
            err.print(f"{PROG}: error: {flag}: {exc}", markup=False, highlight=False)
    return written


def _print(args: argparse.Namespace, result: Comparison | Across) -> None:
    """The table (rich or Markdown) and the gate's lines on stdout."""
    from rich.console import Console

    from tui.cli.compare_across import across_gate_lines, across_markdown_lines, print_across
    from tui.present.compare_render import gate_lines, markdown_lines, print_comparison

    if args.markdown:
        lines = across_markdown_lines(result) if isinstance(result, Across) else markdown_lines(result)
        sys.stdout.write("\n".join(lines) + "\n")
        return
    out = Console(file=sys.stdout, soft_wrap=False)
    if isinstance(result, Across):
        print_across(result, out)
    else:
        print_comparison(result, out)
    for line in across_gate_lines(result) if isinstance(result, Across) else gate_lines(result):
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def cmd_compare(args: argparse.Namespace) -> int:
    """Run ``compare``: the table (rich or Markdown) on stdout, files, the gate's line; the exit code.

    UsageError for bad usage (the caller prints it as one line and exits 2).
    """
    from rich.console import Console

    check_across(args)
    settings = settings_from_args(args)
    sides = selection_inputs((("the BASE file", args.base), ("the NEW file", args.new)))
    check_outputs(args, (("--csv", "csv"), ("--json", "json")), sides)
    result = _load_across(args, settings) if args.across else _load(args, settings)
    err = Console(file=sys.stderr, soft_wrap=True)
    for line in problem_warnings(result.problems):
        err.print(line, markup=False, highlight=False)
    written = _write(args, result, err)
    _print(args, result)
    return max(result.exit_code, 0 if written else 1)
