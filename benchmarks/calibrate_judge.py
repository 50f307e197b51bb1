"""``calibrate.py judge``: re-judge stored runs under rule sets and print the calibration table.

Rule sets: ``before`` (today's rules until calibration, frozen in ``calibrate_before.py``) and
``after`` (the engine's own code: a run's verdict is :meth:`RunRecord.summary`'s, a group's
:func:`tui.engine.store.repeats.summarize_group`'s). Per configuration and verdict (``time``: the CPU's
or the device's clock; ``host``: the host-inclusive time of a launch-bound GPU run) and rule set:

quiet / busy
    runs of each tag (``judge --max-quiet-load`` drops quiet runs whose other processes used more
    CPU than that), with the median of the other processes' CPU use measured over each run.
median
    the quiet median m: the median of the quiet runs' speedups (the reference of every figure).
decisive
    the share of quiet runs with ``faster``, ``slower`` or ``no change``.
agreement
    the share of quiet runs that give the quiet runs' most common word.
false noisy
    quiet runs called ``noisy`` although their interval contains m and gives the quiet runs' most
    common interval word (the issue's "all N intervals overlap and agree", run by run: a run whose
    interval is off is not counted as falsely noisy).
coverage
    the share of runs (quiet and busy) whose interval contains m; ``x3 quiet`` and ``x3 busy``: of
    ``--repeat 3`` groups of quiet runs and of busy runs, their interval across processes. The groups
    are ``judge --groups N`` combinations of three runs of one tag drawn at random (seeded), or with
    ``--groups 0`` the stored runs three at a time in the order they ran. The busy groups' figure is
    apart because a loaded machine changes the speedup itself: a busy group that misses m is right
    to be ``noisy`` (confident-wrong counts the ones that are not).
confident-wrong
    busy runs (and ``x3`` busy groups) with a decisive word whose interval excludes m by more than
    the threshold t: lo > m (1 + t) or hi < m (1 - t).
decisive x3
    the share of quiet ``x3`` groups with a decisive word (a launch-bound host verdict is decisive
    only across processes).
decisive auto
    CPU configurations: the share of quiet runs that end decisive under ``--repeat auto``'s CPU rule
    (:func:`tui.engine.store.repeats.wants_another_process`): a run that reads ``inconclusive`` is
    grouped with the next quiet runs (in the order they ran, wrapping round), one at a time, until the
    group is decisive or has :data:`~tui.engine.store.repeats.AUTO_CPU_MAX_PROCESSES`; ``–`` on a GPU.
quiet off
    quiet runs with a decisive word whose interval excludes m by more than t: the word may be right,
    the number is one process's (the issue counts confident-wrong on busy runs only; this is the
    same test on quiet ones).

A second table counts, per rule set, how often each kind of reason made a quiet or a busy run
``noisy`` (or, after, ``inconclusive`` for a reason) and how many busy runs it alone kept from a
confident-wrong word.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import calibrate_before as before

from tui.engine.protocol import SIDES
from tui.engine.store.repeats import AUTO_CPU_MAX_PROCESSES, summarize_group
from tui.engine.store.results import RunRecord
from tui.engine.measure.stats import summarize

DECISIVE = ("faster", "slower", "no change")
REASON_KINDS = (
    ("spread", ("spread", "IQR/median")),
    ("outliers", ("outliers", "3-IQR fence", "block medians beyond")),
    ("stall", ("stall",)),
    ("drift", ("drift",)),
    ("machine", ("machine", "other processes used")),
    ("wide interval", ("wide interval", "too wide")),
    ("one process", ("one process",)),
)


@dataclass
class Judged:
    """One run (or group) judged under one rule set, for one verdict (time or host)."""

    tag: str
    load: float | None
    point: float | None
    low: float | None
    high: float | None
    word: str
    reasons: tuple[str, ...] = ()


@dataclass
class Stored:
    """One stored run: its wrapper's facts and the engine's record."""

    config: str
    tag: str
    started: float
    load: float | None
    record: RunRecord
    path: Path = field(default_factory=Path)


# ----- loading ---------------------------------------------------------------------------------


def load_runs(dirs: Iterable[str], max_quiet_load: float | None, fill_load: bool) -> list[Stored]:
    """Every done run under ``dirs`` (``*/*.json`` written by collect), in the order they ran."""
    runs = []
    for folder in dirs:
        for path in sorted(Path(folder).glob("*/*.json")):
            wrapper = json.loads(path.read_text())
            export = wrapper.get("export") or {}
            if not export.get("runs"):
                continue
            record = RunRecord.from_json(export["runs"][0])
            if record.status != "done":
                continue
            load = wrapper["machine"].get("other_cpu_cores")
            if fill_load and record.telemetry.other_cpu_cores is None and load is not None:
                # Runs collected before the engine measured short windows: the load over the whole run.
                record.set_telemetry(replace(record.telemetry, other_cpu_cores=load))
            if wrapper["tag"] == "quiet" and max_quiet_load is not None and (load or 0) > max_quiet_load:
                continue
            runs.append(Stored(wrapper["config"], wrapper["tag"], wrapper["machine"]["started"], load, record, path))
    return sorted(runs, key=lambda r: r.started)


def records_by_config(folder: str, tag: str) -> dict[str, list[RunRecord]]:
    """The done runs of one collection with ``tag`` (quiet, busy), by configuration, in the order they ran."""
    by_config: dict[str, list[RunRecord]] = {}
    for run in load_runs([folder], None, fill_load=True):
        if run.tag == tag:
            by_config.setdefault(run.config, []).append(run.record)
    return by_config


# ----- judging one run -------------------------------------------------------------------------


def _blocks(record: RunRecord, side: str, which: str) -> list[list[float]]:
    measured = [b for b in record.loaded_samples()[side] if b.stage == "measure" and b.ms]
    if which == "iter":
        return [list(b.ms) for b in measured]
    return [[b.host_ms_per_call] for b in measured if b.host_ms_per_call is not None]


def _old_sides(record: RunRecord, which: str) -> tuple[before.Side, before.Side] | None:
    sides = []
    for side in SIDES:
        blocks = _blocks(record, side, which)
        values = [x for b in blocks for x in b]
        if not values:
            return None
        stats = summarize(values)
        sides.append(before.Side(side, blocks, stats.median, stats.q1, stats.q3, stats.max))
    return sides[0], sides[1]


def _old_machine(record: RunRecord, which: str) -> list[str]:
    machine = record.machine()
    return before.machine_reasons(machine.other_cpu_cores, machine.other_gpu_processes, machine.gpu, which == "host")


def _interval(record: RunRecord, which: str) -> tuple[float | None, float | None, float | None]:
    summary = record.summary()
    if which == "iter":
        return summary.speedup, summary.speedup_ci_low, summary.speedup_ci_high
    return summary.host_speedup, summary.host_speedup_ci_low, summary.host_speedup_ci_high


def judge_run(run: Stored, which: str, rules: str) -> Judged | None:
    """One run's verdict of ``which`` (iter or host) under ``rules``; None when it has none."""
    record = run.record
    summary = record.summary()
    if which == "host" and not summary.launch_bound:
        return None
    point, low, high = _interval(record, which)
    if rules == "after":
        word = summary.verdict if which == "iter" else summary.host_verdict
        reasons = summary.noise_reasons if which == "iter" else summary.host_noise_reasons
        return Judged(run.tag, run.load, point, low, high, word or "inconclusive", tuple(reasons))
    sides = _old_sides(record, which)
    if sides is None:
        return None
    word, reasons = before.verdict(sides, low, high, _old_machine(record, which))
    return Judged(run.tag, run.load, point, low, high, word, tuple(reasons))


def judge_group(runs: Sequence[Stored], which: str, rules: str) -> Judged | None:
    """A ``--repeat`` group of ``runs`` (one configuration, one tag) under ``rules``."""
    group = summarize_group([_as_member(r.record, runs[0].record.run_id, i) for i, r in enumerate(runs)])
    if which == "host" and not group.launch_bound:
        return None
    if which == "iter":
        point, low, high = group.speedup, group.speedup_xproc_ci_low, group.speedup_xproc_ci_high
    else:
        point, low, high = group.host_speedup, group.host_speedup_xproc_ci_low, group.host_speedup_xproc_ci_high
    load = max((r.load or 0.0) for r in runs)
    if rules == "after":
        word = group.verdict if which == "iter" else group.host_verdict
        reasons = group.noise_reasons if which == "iter" else group.host_noise_reasons
        return Judged(runs[0].tag, load, point, low, high, word or "inconclusive", tuple(reasons))
    processes = []
    for run in runs:
        sides = _old_sides(run.record, which)
        if sides is not None:
            processes.append((sides, _old_machine(run.record, which)))
    word, reasons = before.group_verdict(processes, low, high)
    return Judged(runs[0].tag, load, point, low, high, word, tuple(reasons))


def _as_member(record: RunRecord, group_id: str, repeat: int) -> RunRecord:
    record.group_id, record.repeat = group_id, repeat
    return record


def groups_of(runs: Sequence[Stored], size: int, samples: int = 0, seed: int = 0) -> list[list[Stored]]:
    """Groups of ``size`` runs of one tag: ``samples`` combinations of each tag's runs drawn at random
    (all of them when there are fewer), or with ``samples`` 0 consecutive runs (a short tail left out)."""
    by_tag: dict[str, list[Stored]] = defaultdict(list)
    for run in runs:
        by_tag[run.tag].append(run)
    if not samples:
        return [members[i:i + size] for members in by_tag.values() for i in range(0, len(members) - size + 1, size)]
    rng = random.Random(seed)
    groups = []
    for members in by_tag.values():
        combos = [list(c) for c in itertools.combinations(members, size)]
        groups += combos if len(combos) <= samples else rng.sample(combos, samples)
    return groups


def decisive_auto(runs: Sequence[Stored]) -> tuple[int, int]:
    """Quiet CPU runs that end decisive under ``--repeat auto``'s CPU rule (see the module docstring)."""
    quiet = [r for r in runs if r.tag == "quiet" and r.record.options.device == "cpu"]
    decisive = 0
    for start, run in enumerate(quiet):
        word = run.record.summary().verdict
        size = 1
        while word == "inconclusive" and size < min(AUTO_CPU_MAX_PROCESSES, len(quiet)):
            size += 1
            members = [quiet[(start + k) % len(quiet)] for k in range(size)]
            word = judge_group(members, "iter", "after").word
        decisive += word in DECISIVE
    return decisive, len(quiet)


# ----- figures ---------------------------------------------------------------------------------


def covers(j: Judged, m: float, slack: float = 0.0) -> bool:
    """The interval contains m (widened by ``slack`` of m on each side)."""
    return j.low is not None and j.high is not None and j.low <= m * (1 + slack) and j.high >= m * (1 - slack)


def share(count: int, total: int) -> str:
    """``k/n (p%)``, or a dash for nothing."""
    return "–" if not total else f"{count}/{total} ({count / total:.0%})"


@dataclass
class Figures:
    """The table row of one configuration, verdict and rule set."""

    quiet: int = 0
    busy: int = 0
    quiet_load: float | None = None
    busy_load: float | None = None
    median: float | None = None
    decisive: tuple[int, int] = (0, 0)
    agreement: tuple[int, int] = (0, 0)
    false_noisy: tuple[int, int] = (0, 0)
    coverage: tuple[int, int] = (0, 0)
    coverage3: tuple[int, int] = (0, 0)
    coverage3_busy: tuple[int, int] = (0, 0)
    wrong: tuple[int, int] = (0, 0)
    wrong3: tuple[int, int] = (0, 0)
    busy_decisive: tuple[int, int] = (0, 0)
    decisive3: tuple[int, int] = (0, 0)
    decisive_auto: tuple[int, int] = (0, 0)
    quiet_off: tuple[int, int] = (0, 0)
    reasons: Counter = field(default_factory=Counter)


def _modal(words: Sequence[str]) -> str | None:
    return Counter(words).most_common(1)[0][0] if words else None


def _median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def figures(runs: list[Judged], groups: list[Judged], threshold: float) -> Figures:
    """Every figure of one row from its judged runs and groups."""
    quiet = [j for j in runs if j.tag == "quiet"]
    busy = [j for j in runs if j.tag == "busy"]
    m = _median(j.point for j in quiet)
    f = Figures(quiet=len(quiet), busy=len(busy), quiet_load=_median(j.load for j in quiet),
                busy_load=_median(j.load for j in busy), median=m)
    if m is None:
        return f
    words = [j.word for j in quiet]
    f.decisive = (sum(w in DECISIVE for w in words), len(quiet))
    f.agreement = (words.count(_modal(words)), len(quiet))
    interval_words = [before.interval_word(j.low, j.high, threshold) for j in quiet]
    modal_interval = _modal(interval_words)
    f.false_noisy = (sum(j.word == "noisy" and covers(j, m) and w == modal_interval
                         for j, w in zip(quiet, interval_words, strict=True)), len(quiet))
    f.coverage = (sum(covers(j, m) for j in runs), len(runs))
    quiet_groups = [g for g in groups if g.tag == "quiet"]
    busy_groups = [g for g in groups if g.tag == "busy"]
    f.coverage3 = (sum(covers(g, m) for g in quiet_groups), len(quiet_groups))
    f.coverage3_busy = (sum(covers(g, m) for g in busy_groups), len(busy_groups))
    f.wrong = (sum(j.word in DECISIVE and not covers(j, m, threshold) for j in busy), len(busy))
    f.wrong3 = (sum(g.word in DECISIVE and not covers(g, m, threshold) for g in busy_groups), len(busy_groups))
    f.busy_decisive = (sum(j.word in DECISIVE for j in busy), len(busy))
    f.decisive3 = (sum(g.word in DECISIVE for g in quiet_groups), len(quiet_groups))
    f.quiet_off = (sum(j.word in DECISIVE and not covers(j, m, threshold) for j in quiet), len(quiet))
    for j in runs:
        for kind in {kind_of(r) for r in j.reasons}:
            f.reasons[(j.tag, kind)] += 1
    return f


def kind_of(reason: str) -> str:
    """The kind of a noise reason (before's short names or the engine's sentences)."""
    for kind, needles in REASON_KINDS:
        if any(n in reason for n in needles):
            return kind
    return "other"


# ----- the table -------------------------------------------------------------------------------

HEADER = ("| configuration | rules | quiet runs (others' CPU) | busy runs (others' CPU) | quiet median | decisive "
          "| agreement | false noisy | coverage | coverage x3 quiet | coverage x3 busy | confident-wrong "
          "| confident-wrong x3 | decisive x3 | decisive auto | quiet off |")


def _load(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def row(name: str, rules: str, f: Figures) -> str:
    """One Markdown row."""
    cells = [name, rules, f"{f.quiet} ({_load(f.quiet_load)})", f"{f.busy} ({_load(f.busy_load)})",
             "–" if f.median is None else f"{f.median:.3g}x", share(*f.decisive), share(*f.agreement),
             share(*f.false_noisy), share(*f.coverage), share(*f.coverage3), share(*f.coverage3_busy),
             share(*f.wrong), share(*f.wrong3), share(*f.decisive3), share(*f.decisive_auto), share(*f.quiet_off)]
    return "| " + " | ".join(cells) + " |"


def _add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return a[0] + b[0], a[1] + b[1]


def overall(rows: list[Figures]) -> Figures:
    """The pooled figures of several rows."""
    total = Figures()
    for f in rows:
        total.quiet += f.quiet
        total.busy += f.busy
        for name in (
            "decisive",
            "agreement",
            "false_noisy",
            "coverage",
            "coverage3",
            "coverage3_busy",
            "wrong",
            "wrong3",
            "busy_decisive",
            "decisive3",
            "decisive_auto",
            "quiet_off",
        ):
            setattr(total, name, _add(getattr(total, name), getattr(f, name)))
        total.reasons.update(f.reasons)
    return total


def reason_table(per_rules: dict[str, Figures]) -> list[str]:
    """How often each kind of reason tripped, per rule set, on quiet and busy runs."""
    kinds = [k for k, _ in REASON_KINDS] + ["other"]
    lines = ["| rules | " + " | ".join(kinds) + " |", "|---|" + "---|" * len(kinds)]
    for rules, f in per_rules.items():
        cells = [f"{f.reasons[('quiet', k)]} / {f.reasons[('busy', k)]}" for k in kinds]
        lines.append(f"| {rules} (quiet / busy runs) | " + " | ".join(cells) + " |")
    return lines


def judge(args: argparse.Namespace) -> int:
    """Print the before/after table of the runs under ``args.dirs``."""
    runs = load_runs(args.dirs, args.max_quiet_load, args.fill_load)
    if not runs:
        print("judge: no done runs under " + ", ".join(args.dirs), file=sys.stderr)
        return 1
    by_config: dict[str, list[Stored]] = defaultdict(list)
    for run in runs:
        by_config[run.config].append(run)
    threshold = runs[0].record.options.noise_threshold
    lines = [HEADER, "|---|---|" + "---:|" * (HEADER.count("|") - 3)]
    totals: dict[str, list[Figures]] = defaultdict(list)
    for config, members in by_config.items():
        groups = groups_of(members, args.group, args.groups)
        for which in ("iter", "host"):
            for rules in args.rules:
                judged = [j for r in members if (j := judge_run(r, which, rules)) is not None]
                if not judged:
                    continue
                grouped = [g for members3 in groups if (g := judge_group(members3, which, rules)) is not None]
                f = figures(judged, grouped, threshold)
                if which == "iter" and rules == "after":
                    f.decisive_auto = decisive_auto(members)
                totals[rules].append(f)
                lines.append(row(config + (" host" if which == "host" else ""), rules, f))
    for rules, rows_ in totals.items():
        lines.append(row("**all**", rules, overall(rows_)))
    print("\n".join(lines))
    print()
    print("Reasons that made runs noisy (runs with at least one reason of the kind):")
    print()
    print("\n".join(reason_table({rules: overall(rows_) for rules, rows_ in totals.items()})))
    return 0
