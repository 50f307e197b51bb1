"""Progress for a log: one line per run as it starts and as it ends, written and flushed at once.

When stderr is not a terminal (a log file, CI) a live progress bar is only drawn at the end, so a
long sweep would say nothing for minutes. :class:`RunLines` writes instead::

    [3/16] cnn batch=64 reduce-overhead dyn=true inductor fp32 cpu: started
    [3/16] cnn batch=64 reduce-overhead dyn=true inductor fp32 cpu: done 1.31× [1.28, 1.35] faster (12.4 s)

The fields that tell a sweep's runs apart come first, as in the results table
(:mod:`tui.present.option_fields`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tui.present.format import fmt_speedup, workload_names
from tui.present.option_fields import differing, option_words, params_text, workload_word
from tui.engine.options import RunOptions
from tui.engine.store.results import RunRecord
from tui.engine.measure.summary import RunSummary
from tui.engine.status import RunStatus, ended_reason

__all__ = ["RunCounter", "RunLines", "run_label", "ended_text", "failed_lines"]


def run_label(options: RunOptions, differs: frozenset[str] = frozenset(),
              names: Mapping[str, str] | None = None) -> str:
    """``cnn batch=64 reduce-overhead dyn=true inductor fp32 cpu``: workload, parameters, then the options' words
    (``names``: the listing's workload names, :func:`tui.present.format.workload_names`)."""
    words = [workload_word(options, names), params_text(options),
             *option_words(options, differs, skip=("workload", "params"))]
    return " ".join(word for word in words if word)


def _interval(speedup: float | None, low: float | None, high: float | None) -> str:
    if speedup is None:
        return ""
    return fmt_speedup(speedup, low, high)


def _done_text(summary: RunSummary) -> str:
    """``done 1.31× [1.28, 1.35] faster``; a launch-bound run adds its host-inclusive speedup."""
    parts = ["done", _interval(summary.speedup, summary.speedup_ci_low, summary.speedup_ci_high), summary.verdict or ""]
    text = " ".join(part for part in parts if part)
    if summary.launch_bound and summary.host_speedup is not None:
        host = _interval(summary.host_speedup, summary.host_speedup_ci_low, summary.host_speedup_ci_high)
        text += f", launch-bound: host {host} {summary.host_verdict or ''}".rstrip()
    return text


def ended_text(record: RunRecord) -> str:
    """What a run ended with: ``done 1.31× [1.28, 1.35] faster``, ``failed: compile_error: ...``, ``cancelled``."""
    if record.status == RunStatus.DONE:
        return _done_text(record.summary())
    reason = ended_reason(record.error_kind, record.error_message, after=str(record.status))
    return f"{record.status}: {reason}" if reason else str(record.status)


def failed_lines(records: Sequence[RunRecord]) -> list[str]:
    """A line per failed run of ``records``, as its progress line ends: its configuration (the fields that tell the
    runs apart first; ``process N`` of a group of several), then ``failed:``, the kind and the message. What
    ``run --quiet`` says on stderr instead of the table."""
    differs = differing(record.options for record in records)
    names = workload_names(record.options.workload for record in records)
    groups = Counter(record.group_id for record in records)
    lines = []
    for record in records:
        if record.status != RunStatus.FAILED:
            continue
        label = run_label(record.options, differs, names)
        if record.group_id is not None and groups[record.group_id] > 1:
            label += f" process {record.repeat + 1}"
        lines.append(f"{label}: {ended_text(record)}")
    return lines


class RunCounter:
    """The ``[i/N]`` before a run's description: runs in the order they start, out of those queued; under
    ``--repeat auto`` (``by_configuration``), configurations in the order their first process starts, out of those
    given. auto adds a configuration's processes as its answer needs them, so counting runs read ``[1/1] ...: done``
    for a first process that a second then followed as ``[2/2]``; each process after the first says its number.
    """

    def __init__(self, configurations: int, by_configuration: bool) -> None:
        self.configurations = configurations
        self.by_configuration = by_configuration
        self._numbers: dict[str, int] = {}
        self._keys: dict[str, str] = {}

    def started(self, record: RunRecord) -> None:
        """``record``'s run is starting: it takes the next number (its configuration's, by configuration)."""
        key = (record.group_id or record.run_id) if self.by_configuration else record.run_id
        self._keys[record.run_id] = key
        self._numbers.setdefault(key, len(self._numbers) + 1)

    def text(self, record: RunRecord, queued: int) -> str:
        """``[3/16]``; ``[-/16]`` for a run that never started. ``queued``: the runs queued so far."""
        number = self._numbers.get(self._keys.get(record.run_id, ""))
        total = self.configurations if self.by_configuration else queued
        return f"[{number if number is not None else '-'}/{total}]"

    def process(self, record: RunRecord) -> str | None:
        """``process 2`` for a run of a group: each process under ``--repeat K``, from the second on by
        configuration (``auto``: most configurations run once, and read as one run); None for a run alone."""
        if record.group_id is None or (self.by_configuration and record.repeat == 0):
            return None
        return f"process {record.repeat + 1}"


class RunLines:
    """Writes a run's start and end lines to ``stream`` (a log), each flushed at once.

    ``configs`` are the configurations submitted: the fields that differ among them are said
    first in each label. Runs are numbered in the order they start (``[3/16]``; :class:`RunCounter`), under
    ``--repeat auto`` by configuration; a run that never started (cancelled while queued) is ``[-/16]``.
    """

    def __init__(self, stream: Any, configs: Iterable[RunOptions], numbered: bool = True,
                 counter: RunCounter | None = None) -> None:
        self.stream = stream
        configs = list(configs)
        self.differs = differing(configs)
        self.names = workload_names(options.workload for options in configs)
        self.total = 0
        self.counter = counter or RunCounter(len(configs), by_configuration=not numbered)
        """The ``[i/N]`` and the process's number (the caller's, shared with its live bars; else one over
        ``configs``, by configuration unless ``numbered``)."""
        self._started_at: dict[str, float] = {}
        self._took: dict[str, float] = {}
        self._held: list[RunRecord] = []

    def started(self, record: RunRecord) -> None:
        """A run's worker is starting. While a run that ended waits for its summary, the line waits for that run's
        end line: the next run starts as the last one ends, and a log must not read as if the two overlapped."""
        self.counter.started(record)
        self._started_at[record.run_id] = time.monotonic()
        if self._took:
            self._held.append(record)
        else:
            self._write(record, "started")

    def finished(self, record: RunRecord) -> None:
        """A run ended (its summary follows): its time is taken now, not when it is saved."""
        start = self._started_at.pop(record.run_id, None)
        if start is not None:
            self._took[record.run_id] = time.monotonic() - start

    def saved(self, record: RunRecord) -> None:
        """A run ended and its final summary is computed: its end line, then the start lines it held."""
        took = self._took.pop(record.run_id, None)
        self._write(record, ended_text(record) + (f" ({took:.1f} s)" if took is not None else ""))
        if not self._took:
            held, self._held = self._held, []
            for waiting in held:
                self._write(waiting, "started")

    def _write(self, record: RunRecord, what: str) -> None:
        label = " ".join(filter(None, (run_label(record.options, self.differs, self.names),
                                       self.counter.process(record))))
        line = f"{self.counter.text(record, self.total)} {label}: {what}"
        # One line, whole: a log is read with grep, and nothing here is markup.
        self.stream.write(" ".join(line.split()) + "\n")
        self.stream.flush()
