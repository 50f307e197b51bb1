"""``compile-lab compare BASE NEW``: its flags, the one-line refusals, and the run of a comparison.

Exit codes: 0 when the gate passes, 1 when a matched pair is ``slower`` by more than ``--fail-above``
percent (with ``--strict`` also a ``noisy`` or ``inconclusive`` pair, a side with no done run, or a
row on one side only), 2 on bad usage (one line naming the argument and what is allowed).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from tui.cli.parse import PROG, UsageError, check_outputs
from tui.engine.compare import (
    MATCH_FIELDS, METRIC_NAMES, SELECTION_HELP, CompareSettings, Comparison, SelectionError, check_ignore, compare,
    load_selection, parse_selection,
)  # fmt: skip
from tui.engine.verdict import LIMIT_NAMES

__all__ = ["add_compare_parser", "settings_from_args", "cmd_compare", "MAX_THRESHOLD", "MAX_PROBLEMS_SHOWN"]

MAX_THRESHOLD = 0.5
"""The largest ``--threshold`` (50%)."""
MAX_PROBLEMS_SHOWN = 5
"""Loading problems printed before ``and N more``."""


def add_compare_parser(sub: Any) -> None:
    """The ``compare`` subcommand on ``sub`` (argparse subparsers)."""
    parser = sub.add_parser(
        "compare", help="compare two sets of runs and gate on a regression (for CI)",
        description="Compare NEW against BASE, configuration by configuration: the change of the compiled time (and "
                    "the eager time, the speedup, the host time) with a bootstrap interval and a verdict. Exit code 1 "
                    "when a pair is slower by more than --fail-above percent, 2 on bad usage. "
                    f"BASE and NEW: {SELECTION_HELP}.",
    )
    parser.add_argument("base", metavar="BASE", help="the runs to compare against (the baseline)")
    parser.add_argument("new", metavar="NEW", help="the runs to judge")
    parser.add_argument("--metric", metavar="NAME", default="compiled",
                        help=f"the gated metric: {', '.join(METRIC_NAMES)} (default compiled: the compiled side's "
                             "per-iteration time, device time on a GPU)")
    parser.add_argument("--threshold", metavar="T", default="0.02",
                        help="the verdict's threshold: faster/slower only beyond it (a fraction, 0.02, or 2%%; default 2%%)")
    parser.add_argument("--fail-above", metavar="PCT", default="5",
                        help="exit 1 when a pair is slower by more than PCT percent (default 5)")
    parser.add_argument("--ignore", action="append", metavar="FIELD[,FIELD]",
                        help=f"leave fields out of the match, e.g. backend, torch_version, gpu_name (of: "
                             f"{', '.join(MATCH_FIELDS)})")
    parser.add_argument("--noise-limit", action="append", metavar="NAME=VALUE",
                        help="change one limit of the noisy check, e.g. max_relative_iqr=0.2 (repeatable)")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 also on a noisy or inconclusive pair, a side that failed, or an unmatched row")
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
    threshold = _number(args.threshold, "--threshold", f"a fraction above 0 and at most {MAX_THRESHOLD} (0.02), "
                        "or a percentage (2%)", 0, MAX_THRESHOLD, fraction=True, above_low=True)
    fail_above = _number(args.fail_above, "--fail-above", "a percentage from 0 to 1000 (5)", 0, 1000)
    try:
        ignore = check_ignore(part for item in args.ignore or () for part in item.split(","))
    except ValueError as exc:
        raise UsageError(f"--ignore: {exc}") from None
    return CompareSettings(metric=metric, threshold=threshold, fail_above=fail_above, ignore=ignore,
                           strict=args.strict, noise_limits=_noise_limits(args.noise_limit))  # fmt: skip


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


def cmd_compare(args: argparse.Namespace) -> int:
    """Run ``compare``: the table (rich or Markdown) on stdout, files, the gate's line; the exit code.

    UsageError for bad usage (the caller prints it as one line and exits 2).
    """
    from rich.console import Console

    from tui.cli.compare_render import gate_lines, markdown_lines, print_comparison
    from tui.engine.compare.output import write_compare_csv, write_compare_json
    from tui.engine.export import ExportError

    settings = settings_from_args(args)
    check_outputs(args, (("--csv", "csv"), ("--json", "json")))
    comparison = _load(args, settings)
    err = Console(file=sys.stderr, soft_wrap=True)
    for line in comparison.problems[:MAX_PROBLEMS_SHOWN]:
        err.print(f"{PROG}: warning: {line}", markup=False, highlight=False)
    if len(comparison.problems) > MAX_PROBLEMS_SHOWN:
        err.print(f"{PROG}: warning: and {len(comparison.problems) - MAX_PROBLEMS_SHOWN} more problems reading the runs",
                  markup=False, highlight=False)
    failed_write = False
    for flag, path, writer in (("--csv", args.csv, write_compare_csv), ("--json", args.json, write_compare_json)):
        if path is None:
            continue
        try:
            writer(comparison, path)
        except ExportError as exc:
            failed_write = True
            err.print(f"{PROG}: error: {flag}: {exc}", markup=False, highlight=False)
    if args.markdown:
        sys.stdout.write("\n".join(markdown_lines(comparison)) + "\n")
    else:
        out = Console(file=sys.stdout, soft_wrap=False)
        print_comparison(comparison, out)
        for line in gate_lines(comparison):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
    return max(comparison.exit_code, 1 if failed_write else 0)
