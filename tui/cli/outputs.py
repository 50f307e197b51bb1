"""Every path a command writes, checked by one rule before anything runs or is read (one line per refusal).

An output is refused when no export may write it (:func:`tui.engine.store.export.check_output`), when it
names the same file as another output, and when it names the same file as one of the command's own
inputs: ``compare``'s BASE and NEW files, ``report``'s RUNS files, the user workload file and the
``--python`` interpreters of ``run`` and ``sweep``. An input written over would be lost (a baseline
export replaced by the comparison of itself), so it is refused whether or not the run would succeed.
"""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence

from tui.cli.parse import UsageError, split_list

__all__ = ["export_flags", "check_exports", "check_home", "check_outputs", "input_files", "run_inputs",
           "selection_inputs"]


def export_flags() -> tuple[tuple[str, str], ...]:
    """The export formats' output flags and the attribute each fills, in the order they are written."""
    from tui.engine.store.export import EXPORT_FORMATS

    return tuple((fmt.flag, fmt.name) for fmt in EXPORT_FORMATS)

INPUT_ALLOWED = "a file other than the command's inputs"
"""What a refusal of an output onto an input allows."""


def input_files(named: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """``(what, path)`` pairs as same-file key -> what (the first name of a file kept); None paths left out."""
    from tui.engine.store.export import same_file_key

    found: dict[str, str] = {}
    for what, path in named:
        if path:
            found.setdefault(same_file_key(path), what)
    return found


def selection_inputs(named: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """The files among ``(what, selection text)`` pairs (compare's and report's selections), as :func:`input_files`.

    A None text (compare's NEW with ``--across``) is left out, and so is a selection that does not
    parse: reading it says why.
    """
    from tui.engine.compare.selection import SelectionError, parse_selection

    files: list[tuple[str, str | None]] = []
    for what, text in named:
        if text is None:
            continue
        try:
            selection = parse_selection(text)
        except SelectionError:
            continue
        if selection.kind == "file":
            files.append((what, selection.path))
    return input_files(files)


def run_inputs(args: argparse.Namespace) -> dict[str, str]:
    """The files ``run`` or ``sweep`` reads, as :func:`input_files`: the user workload file, the interpreters.

    An interpreter without a directory is the one on PATH that the worker would start.
    """
    from tui.engine.catalog import is_user_workload, split_user_workload

    named: list[tuple[str, str | None]] = []
    workload = getattr(args, "workload", None)
    if workload and is_user_workload(workload):
        named.append(("the --workload file", os.path.expanduser(split_user_workload(workload)[0])))
    python = getattr(args, "python", None)
    pythons = (split_list(python, "python") if args.command == "sweep" else [python]) if python else []
    for path in pythons or ():
        named.append(("a --python interpreter", path if os.sep in path else shutil.which(path)))
    return input_files(named)


def check_home(args: argparse.Namespace) -> None:
    """Refuse, before anything runs, a data dir (the history) or compile cache this machine cannot write
    (:func:`tui.paths.home_problem`; UsageError, one line): each run would fail inside inductor instead. With
    ``--no-history`` the data dir is not written; with ``--cluster`` the runs compile on the nodes."""
    from tui import paths

    problem = paths.home_problem(needs_data=not getattr(args, "no_history", False),
                                 needs_cache=not getattr(args, "cluster", None))
    if problem is not None:
        raise UsageError(problem)


def check_exports(args: argparse.Namespace) -> None:
    """Refuse, before anything runs, an output path ``run`` or ``sweep`` may not write (UsageError, one line).

    An empty path; a symbolic link, directory, device, named pipe or socket; compile-lab's
    history, runs or config; a directory that does not exist or that this user cannot write;
    two outputs naming one file, or an output naming an input (after resolving links). Only a
    full disk is found when the runs have ended and the files are written.
    """
    inputs = run_inputs(args)
    seen = check_outputs(args, export_flags(), inputs)
    value = getattr(args, "trace", None)
    if value is not None:  # a file for run, a directory for sweep
        _check_one("--trace", value, seen, inputs, directory=args.command == "sweep")


def check_outputs(args: argparse.Namespace, flags: Sequence[tuple[str, str]],
                  inputs: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each of ``flags`` (flag, dest) given in ``args`` checked by the one rule for outputs
    (:func:`tui.engine.store.export.check_output`), against the others and against ``inputs`` (same-file
    key -> what the input is, :func:`input_files`).

    UsageError (one line) for a path no export may write, two flags naming one file or a flag naming
    an input; returns the files seen (same-file key -> flag) for outputs checked after these.
    """
    seen: dict[str, str] = {}
    for flag, dest in flags:
        value = getattr(args, dest, None)
        if value is not None:
            _check_one(flag, value, seen, inputs or {})
    return seen


def _check_one(flag: str, value: str, seen: dict[str, str], inputs: Mapping[str, str], *,
               directory: bool = False) -> None:
    """One output: the export rules, then no other output's file and no input; added to ``seen``."""
    from tui.engine.store.export import ExportTargetError, check_output, same_file_key

    try:
        check_output(value, directory=directory)
    except ExportTargetError as exc:
        raise UsageError(f"{flag}: {exc}") from exc
    key = same_file_key(value)
    if key in inputs:
        raise UsageError(f"{flag}: {value} is {inputs[key]} (allowed: {INPUT_ALLOWED})")
    if key in seen:
        raise UsageError(f"{seen[key]}, {flag}: both name {key} (allowed: a different file for each output)")
    seen[key] = flag
