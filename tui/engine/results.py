"""RunRecord: the one place that turns worker events into results.

The app and the CLI both feed every event of a run to :meth:`RunRecord.apply` and read
:meth:`RunRecord.summary`, :meth:`RunRecord.to_row` (the CSV row), :meth:`RunRecord.to_json`
and :meth:`RunRecord.raw_rows` (one row per timed iteration).

Timing data
    Per side (``"eager"``, ``"compiled"``) the record keeps every timing block in arrival
    order (:class:`Block`). Only ``stage == "measure"`` blocks enter the statistics.
    ``iter`` statistics use the per-iteration clock (CUDA events on a GPU, perf_counter
    on the CPU). ``host`` statistics use each block's ``wall_ms_per_call`` (wall time of a
    synchronised block / its calls): **one value per block, unweighted**, so its ``n`` is
    the number of blocks. Blocks are equal-sized apart from the last one, so weighting
    would change little, and ``n`` stays the number of independent host measurements.

Summary (a dict, cached until the record changes; treat it as read-only)
    ``eager`` / ``compiled``: ``{"iter": Stats | None, "host": Stats | None}``;
    ``clock``; ``speedup`` = eager iter median / compiled iter median;
    ``speedup_ci_low`` / ``speedup_ci_high`` / ``significant`` from
    :func:`tui.engine.stats.bootstrap_speedup` (seed 0, 2000 resamples), computed once the
    record has ended (done, failed or cancelled): while it runs they are None and
    ``live`` is True, so a summary at 10 Hz stays cheap and never steals CPU from a
    CPU benchmark running next to it; ``launch_bound`` (CUDA-event clock only: the host
    median exceeds the per-iteration median by more than 1.25x on either side; None on
    the CPU); ``break_even_calls`` = ceil(compile_s / (eager median - compiled median)),
    None unless compiled is faster; ``per_label`` (dynamic shapes:
    ``{label: {"eager", "compiled", "speedup"}}``); ``tflops`` / ``gbps`` from the
    compiled median (None when the worker counted no FLOPs or bytes: never a fake 0);
    ``warnings`` (stability, the worker's, telemetry).

CSV columns: :data:`CSV_COLUMNS` and the raw CSV's :data:`RAW_COLUMNS` come from
:mod:`tui.engine.columns`, whose docstring documents each column and the number format.
"""

from __future__ import annotations

import dataclasses
import math
import secrets
import time
from array import array
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

from tui.engine.columns import CSV_COLUMNS, RAW_COLUMNS, csv_row, format_value, raw_float, throttled_reasons, to_float
from tui.engine.options import OptionsError, RunOptions
from tui.engine.protocol import PHASES
from tui.engine.stats import SampleAccumulator, Stats, bootstrap_speedup, is_significant

__all__ = [
    "RunRecord",
    "Block",
    "SamplesUnavailable",
    "STATUSES",
    "TERMINAL_STATUSES",
    "SIDES",
    "CSV_COLUMNS",
    "RAW_COLUMNS",
    "format_value",
    "new_run_id",
    "samples_to_json",
    "samples_from_json",
]

SIDES = ("eager", "compiled")
TERMINAL_STATUSES = frozenset({"done", "failed", "cancelled"})
STATUSES = ("queued", "starting", *PHASES, "done", "failed", "cancelled")

UNSTABLE_RELATIVE_IQR = 0.10
MIN_SAMPLES = 10
LAUNCH_BOUND_RATIO = 1.25
CUDA_EVENT_FLOOR_MS = 0.01
BOOTSTRAP_RESAMPLES = 2000


class SamplesUnavailable(LookupError):
    """A record's per-iteration samples were stored apart and could not be loaded."""


def new_run_id(now: float | None = None) -> str:
    """A sortable, file-name-safe id: ``YYYYmmdd-HHMMSS-xxxxxx`` (UTC, 6 random hex digits)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(3)}"


@dataclass
class Block:
    """One timing block of one side as the worker streamed it."""

    stage: str
    index: int
    clock: str
    ms: array  # array('d'): 8 bytes per iteration
    wall_ms_per_call: float | None = None
    labels: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (non-finite times become null)."""
        return {
            "stage": self.stage,
            "index": self.index,
            "clock": self.clock,
            "ms": [x if math.isfinite(x) else None for x in self.ms],
            "wall_ms_per_call": _finite_or_none(self.wall_ms_per_call),
            "labels": self.labels,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], intern: Callable[[str], str] = str) -> "Block":
        """Build from an event or :meth:`to_json` dict; ValueError/TypeError when malformed."""
        ms = _float_array(data.get("ms"))
        labels = data.get("labels")
        if labels is not None:
            labels = [intern(str(x)) for x in labels]
            if len(labels) != len(ms):
                labels = None
        return cls(
            stage=str(data.get("stage") or "measure"),
            index=int(data.get("index") or 0),
            clock=str(data.get("clock") or ""),
            ms=ms,
            wall_ms_per_call=_finite_or_none(to_float(data.get("wall_ms_per_call"))),
            labels=labels,
        )


def _finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _float_array(values: Any) -> array:
    if not isinstance(values, (list, tuple)):
        raise TypeError("ms is not a list")
    try:
        return array("d", values)
    except TypeError:
        # null (a non-finite time) inside: keep position out of it, drop it.
        return array("d", (float(v) for v in values if v is not None))


def _new_samples() -> dict[str, list[Block]]:
    return {side: [] for side in SIDES}


class _Live:
    """Incremental statistics over a record's measure blocks (rebuilt when samples are replaced)."""

    def __init__(self) -> None:
        self.iter = {side: SampleAccumulator() for side in SIDES}
        self.host = {side: SampleAccumulator() for side in SIDES}
        self.labels: dict[str, dict[str, SampleAccumulator]] = {}
        self.blocks: dict[str, list[array]] = {side: [] for side in SIDES}
        self.host_blocks: dict[str, list[tuple[float, ...]]] = {side: [] for side in SIDES}
        self.consumed = {side: 0 for side in SIDES}
        self.clock: str | None = None
        self.ci: tuple[tuple[int, int], Any] | None = None
        self.host_ci: tuple[tuple[int, int], Any] | None = None

    def feed(self, samples: dict[str, list[Block]]) -> None:
        for side in SIDES:
            start = self.consumed[side]
            # A snapshot: a block appended meanwhile (another thread) is picked up next time.
            new_blocks = samples[side][start:]
            self.consumed[side] = start + len(new_blocks)
            for block in new_blocks:
                if block.stage != "measure" or not block.ms:
                    continue
                self.clock = self.clock or block.clock
                self.iter[side].add(block.ms)
                self.blocks[side].append(block.ms)
                if block.wall_ms_per_call is not None:
                    self.host[side].add((block.wall_ms_per_call,))
                    self.host_blocks[side].append((block.wall_ms_per_call,))
                if block.labels:
                    by_label: dict[str, list[float]] = {}
                    for label, value in zip(block.labels, block.ms):
                        by_label.setdefault(label, []).append(value)
                    for label, values in by_label.items():
                        acc = self.labels.setdefault(label, {s: SampleAccumulator() for s in SIDES})
                        acc[side].add(values)

    def interval(self) -> Any:
        key = (len(self.blocks["eager"]), len(self.blocks["compiled"]))
        if self.ci is None or self.ci[0] != key:
            result = bootstrap_speedup(self.blocks["eager"], self.blocks["compiled"], BOOTSTRAP_RESAMPLES, seed=0)
            self.ci = (key, result)
        return self.ci[1]

    def host_interval(self) -> Any:
        """The host-inclusive speedup's interval: one value per block, paired block by block."""
        key = (len(self.host_blocks["eager"]), len(self.host_blocks["compiled"]))
        if self.host_ci is None or self.host_ci[0] != key:
            result = bootstrap_speedup(self.host_blocks["eager"], self.host_blocks["compiled"],
                                       BOOTSTRAP_RESAMPLES, seed=0)
            self.host_ci = (key, result)
        return self.host_ci[1]


def _ratio(top: Stats | None, bottom: Stats | None) -> float | None:
    if top is None or bottom is None or bottom.median <= 0:
        return None
    return top.median / bottom.median


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


@dataclass(eq=False)
class RunRecord:
    """Everything known about one run, built from the worker's events.

    Create one with :meth:`new` (or ``RunRecord(run_id, options)``), feed it every event
    with :meth:`apply`, end it with :meth:`fail` when the runner decides the run failed.
    ``samples[side]`` lists the :class:`Block` s of ``"eager"`` / ``"compiled"`` in
    arrival order. ``telemetry`` is filled by the runner's GPU sampler (use
    :meth:`set_telemetry`). ``samples_file`` names the file holding the samples when
    the record came from the history; they are then loaded on demand.
    """

    run_id: str
    options: RunOptions = field(default_factory=RunOptions)
    created: float = field(default_factory=time.time)
    status: str = "queued"
    env: dict[str, Any] = field(default_factory=dict)
    compile_s: float | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)
    accuracy: dict[str, Any] = field(default_factory=dict)
    memory: dict[str, Any] = field(default_factory=dict)
    flops_per_call: float | None = None
    bytes_per_call: float | None = None
    warnings: list[str] = field(default_factory=list)
    error_kind: str | None = None
    error_message: str | None = None
    error_detail: str | None = None
    telemetry: dict[str, Any] = field(default_factory=dict)
    samples: dict[str, list[Block]] = field(default_factory=_new_samples)
    samples_file: str | None = None

    def __post_init__(self) -> None:
        self._version = 0
        self._cache: tuple[tuple, dict[str, Any]] | None = None
        self._live = _Live()
        self._labels: dict[str, str] = {}
        self._measured_iters = 0
        self._measured_s = 0.0
        self._stored_summary: dict[str, Any] | None = None
        self._samples_loaded = True
        self._samples_loader: Callable[["RunRecord"], dict[str, list[Block]]] | None = None

    # ----- construction -------------------------------------------------

    @classmethod
    def new(cls, options: RunOptions, run_id: str | None = None) -> "RunRecord":
        """A queued record for ``options`` with a fresh run id."""
        return cls(run_id=run_id or new_run_id(), options=options)

    # ----- events ---------------------------------------------------------

    @property
    def finished(self) -> bool:
        """True once the record is done, failed or cancelled."""
        return self.status in TERMINAL_STATUSES

    def set_status(self, status: str) -> None:
        """Set a status by hand (the runner: "starting"); ValueError for an unknown one."""
        if status not in STATUSES:
            raise ValueError(f"status {status!r} is not one of {', '.join(STATUSES)}")
        self.status = status
        self._version += 1

    def apply(self, event: dict[str, Any]) -> None:
        """Update the record from one protocol event, in place.

        Unknown events and events after the record ended are ignored; malformed fields
        are skipped (a malformed block adds a warning) rather than raising.
        """
        if not isinstance(event, dict) or self.finished:
            return
        handler = getattr(self, f"_on_{event.get('event')}", None)
        if handler is None:
            return
        handler(event)
        self._version += 1

    def _on_ready(self, event: dict[str, Any]) -> None:
        if self.status == "queued":
            self.status = "starting"

    def _on_started(self, event: dict[str, Any]) -> None:
        env = event.get("env")
        if not isinstance(env, dict):
            env = {k: v for k, v in event.items() if k not in ("v", "event", "t")}
        self.env.update(env)
        if self.status == "queued":
            self.status = "starting"

    def _on_phase(self, event: dict[str, Any]) -> None:
        if event.get("phase") in PHASES:
            self.status = event["phase"]

    def _on_warning(self, event: dict[str, Any]) -> None:
        message = event.get("message")
        if message:
            self._warn(" ".join(str(message).split()))

    def _on_compiled(self, event: dict[str, Any]) -> None:
        value = to_float(event.get("compile_s"))
        if value is not None:
            self.compile_s = value
        self._merge_diagnostics(event.get("diagnostics"))

    def _on_block(self, event: dict[str, Any]) -> None:
        side = event.get("side")
        if side not in SIDES:
            self._warn(f"ignored a timing block of unknown side {side!r}")
            return
        try:
            block = Block.from_json(event, self._intern)
        except (TypeError, ValueError):
            self._warn("ignored a malformed timing block from the worker")
            return
        self.samples[side].append(block)
        if block.stage == "measure":
            self._measured_iters += len(block.ms)
            if block.wall_ms_per_call is not None:
                self._measured_s += block.wall_ms_per_call * len(block.ms) / 1000

    def _on_finished(self, event: dict[str, Any]) -> None:
        self._merge_diagnostics(event.get("diagnostics"))
        if self.compile_s is None:
            self.compile_s = to_float(event.get("compile_s"))
        for name in ("accuracy", "memory"):
            if isinstance(event.get(name), dict):
                setattr(self, name, dict(event[name]))
        for name in ("flops_per_call", "bytes_per_call"):
            value = to_float(event.get(name))
            if value is not None:
                setattr(self, name, value)
        for message in event.get("warnings") or ():
            self._warn(" ".join(str(message).split()))
        self.status = "done"

    def _on_failed(self, event: dict[str, Any]) -> None:
        self.fail(str(event.get("kind") or "crash"), str(event.get("message") or ""), str(event.get("detail") or ""))

    def _merge_diagnostics(self, diagnostics: Any) -> None:
        if isinstance(diagnostics, dict):
            self.diagnostics.update(diagnostics)

    def _warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def _intern(self, label: str) -> str:
        return self._labels.setdefault(label, label)

    def fail(self, kind: str, message: str, detail: str = "") -> None:
        """End the record as failed (or cancelled when ``kind == "cancelled"``)."""
        self.error_kind = kind
        self.error_message = " ".join(message.split()) or kind.replace("_", " ")
        self.error_detail = detail
        self.status = "cancelled" if kind == "cancelled" else "failed"
        self._version += 1

    def set_telemetry(self, telemetry: dict[str, Any]) -> None:
        """Store the runner's GPU-sampler summary for this run."""
        self.telemetry = dict(telemetry or {})
        self._version += 1

    def set_samples(self, samples: dict[str, list[Block]]) -> None:
        """Replace every timing block (loading stored samples); statistics are recomputed."""
        self.samples = {side: list(samples.get(side, ())) for side in SIDES}
        self._samples_loaded = True
        self._live = _Live()
        measure = [b for side in SIDES for b in self.samples[side] if b.stage == "measure"]
        self._measured_iters = sum(len(b.ms) for b in measure)
        self._measured_s = sum(b.wall_ms_per_call * len(b.ms) / 1000 for b in measure if b.wall_ms_per_call)
        self._version += 1

    # ----- lazily stored samples -------------------------------------------

    @property
    def samples_loaded(self) -> bool:
        """False for a record read from the history whose samples are still on disk."""
        return self._samples_loaded

    def defer_samples(self, loader: Callable[["RunRecord"], dict[str, list[Block]]]) -> None:
        """Mark the samples as stored apart; ``loader(record)`` returns them on demand."""
        self._samples_loaded = False
        self._samples_loader = loader

    def ensure_samples(self) -> None:
        """Load deferred samples now (SamplesUnavailable when they cannot be)."""
        if self._samples_loaded:
            return
        if self._samples_loader is None:
            raise SamplesUnavailable(f"run {self.run_id}: its per-iteration samples were not stored")
        samples = self._samples_loader(self)
        if not self._samples_loaded:
            self.set_samples(samples)

    def set_samples_json(self, data: dict[str, Any]) -> None:
        """Replace every timing block from :func:`samples_to_json` output (malformed blocks dropped)."""
        self.set_samples(samples_from_json(data, self._intern))

    # ----- progress and summary -----------------------------------------------

    def progress(self) -> float:
        """0..1: measured iterations / (2 * options.iters), or the share of the time budget if larger."""
        if self.status == "done":
            return 1.0
        fraction = self._measured_iters / (2 * max(1, self.options.iters))
        budget = self.options.time_budget_s
        if budget:
            fraction = max(fraction, self._measured_s / float(budget))
        return min(1.0, fraction)

    def _fingerprint(self) -> tuple:
        # Direct attribute assignment (not through a method) still invalidates the cache.
        return (
            self._version,
            self.status,
            self.compile_s,
            len(self.warnings),
            id(self.telemetry),
            len(self.telemetry),
            self.flops_per_call,
            self.bytes_per_call,
            tuple(len(self.samples.get(side, ())) for side in SIDES),
        )

    def summary(self) -> dict[str, Any]:
        """The run's results (see the module docstring); cached until the record changes."""
        key = self._fingerprint()
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        if not self._samples_loaded and self._stored_summary is not None:
            result = _summary_from_json(self._stored_summary)
        else:
            result = self._compute_summary()
        self._cache = (key, result)
        return result

    def _compute_summary(self) -> dict[str, Any]:
        live = self._live
        live.feed(self.samples)
        sides = {side: {"iter": live.iter[side].stats(), "host": live.host[side].stats()} for side in SIDES}
        eager, compiled = sides["eager"]["iter"], sides["compiled"]["iter"]
        speedup = _ratio(eager, compiled)
        host_speedup = _ratio(sides["eager"]["host"], sides["compiled"]["host"])
        low = high = host_low = host_high = None
        if self.finished and speedup is not None:
            _, low, high = live.interval()
        if self.finished and host_speedup is not None:
            _, host_low, host_high = live.host_interval()
        result: dict[str, Any] = {
            **sides,
            "clock": live.clock,
            "speedup": speedup,
            "speedup_ci_low": low,
            "speedup_ci_high": high,
            "significant": is_significant(low, high),
            "host_speedup": host_speedup,
            "host_speedup_ci_low": host_low,
            "host_speedup_ci_high": host_high,
            "launch_bound": self._launch_bound(sides, live.clock),
            "break_even_calls": self._break_even(eager, compiled),
            "per_label": {
                label: {"eager": acc["eager"].stats(), "compiled": acc["compiled"].stats()}
                for label, acc in sorted(live.labels.items(), key=lambda item: _label_key(item[0]))
            },
            "tflops": _rate(self.flops_per_call, compiled, 1e12),
            "gbps": _rate(self.bytes_per_call, compiled, 1e9),
            "live": not self.finished,
        }
        for entry in result["per_label"].values():
            entry["speedup"] = _ratio(entry["eager"], entry["compiled"])
        result["warnings"] = self._summary_warnings(sides)
        if result["launch_bound"] and host_speedup is not None:
            # The headline speedup is device time; a loop that never synchronises pays host time.
            interval = f" [{host_low:.2f}, {host_high:.2f}]" if host_low is not None and host_high is not None else ""
            result["warnings"].append(
                f"launch-bound: the host needs more time per call than the GPU; host-inclusive "
                f"speedup {host_speedup:.2f}x{interval} (eager {sides['eager']['host'].median:.4g} ms, "
                f"compiled {sides['compiled']['host'].median:.4g} ms per call) is what a serving loop sees"
            )
        return result

    @staticmethod
    def _launch_bound(sides: dict[str, dict[str, Stats | None]], clock: str | None) -> bool | None:
        if clock != "cuda_event":
            return None
        known = False
        for side in SIDES:
            device, host = sides[side]["iter"], sides[side]["host"]
            if device is None or host is None or device.median <= 0:
                continue
            known = True
            if host.median > LAUNCH_BOUND_RATIO * device.median:
                return True
        return False if known else None

    def _break_even(self, eager: Stats | None, compiled: Stats | None) -> int | None:
        if self.compile_s is None or eager is None or compiled is None:
            return None
        saved_ms = eager.median - compiled.median
        if saved_ms <= 0:
            return None
        return math.ceil(self.compile_s * 1000 / saved_ms)

    def _summary_warnings(self, sides: dict[str, dict[str, Stats | None]]) -> list[str]:
        messages: list[str] = []
        for side in SIDES:
            stats = sides[side]["iter"]
            if stats is None:
                if self.status == "done":
                    messages.append(f"no {side} samples were measured")
                continue
            if stats.n < MIN_SAMPLES:
                messages.append(f"too few {side} samples (n = {stats.n} < {MIN_SAMPLES}): raise iters")
            spread = stats.relative_iqr
            if spread is not None and spread > UNSTABLE_RELATIVE_IQR:
                messages.append(
                    f"{side} spread IQR/median = {spread:.0%} > {UNSTABLE_RELATIVE_IQR:.0%}: unstable"
                    " (close other programs, raise iters or block size)"
                )
            if self._live.clock == "cuda_event" and stats.median < CUDA_EVENT_FLOOR_MS:
                messages.append(
                    f"{side} median {stats.median * 1000:.1f} us is close to the CUDA event resolution"
                    " (about 0.5 us): too fast to time, use a larger workload"
                )
        messages.extend(self.warnings)
        throttled = throttled_reasons(self.telemetry.get("throttle_reasons") if isinstance(self.telemetry, dict) else None)
        if throttled:
            messages.append(
                f"GPU clocks were throttled during the run ({', '.join(throttled)}):"
                " times may be slow; let the GPU cool or check its power limit"
            )
        return _dedupe(messages)

    # ----- rows and lines ---------------------------------------------------------

    def to_row(self) -> dict[str, str]:
        """The CSV row: every column of :data:`CSV_COLUMNS`, formatted (see :func:`format_value`)."""
        return csv_row(self)

    @property
    def timestamp(self) -> str:
        """``created`` as ISO 8601 UTC with a ``Z``, to the second."""
        moment = datetime.fromtimestamp(self.created, tz=timezone.utc)
        return moment.isoformat(timespec="seconds").replace("+00:00", "Z")

    def raw_rows(self) -> Iterator[dict[str, str]]:
        """One formatted row (:data:`RAW_COLUMNS`) per timed iteration of every block and stage."""
        self.ensure_samples()
        for side in SIDES:
            for block in self.samples[side]:
                host = raw_float(block.wall_ms_per_call)
                labels = block.labels
                for i, value in enumerate(block.ms):
                    yield {
                        "run_id": self.run_id,
                        "side": side,
                        "stage": block.stage,
                        "block": str(block.index),
                        "iteration": str(i),
                        "ms": raw_float(value),
                        "clock": block.clock,
                        "host_ms_per_call": host,
                        "label": labels[i] if labels else "",
                    }

    def summary_line(self) -> str:
        """One line for logs: configuration, status and the headline numbers."""
        head = f"{self.run_id} {self.options.workload} {self.options.label()} on {self.options.device}: {self.status}"
        if self.status in ("failed", "cancelled"):
            head += f" ({self.error_kind}: {self.error_message})"
        s = self.summary()
        parts = [head]
        for side in SIDES:
            stats = s[side]["iter"]
            if stats is not None:
                parts.append(f"{side} {stats.median:.4g} ms (n={stats.n})")
        if s["speedup"] is not None:
            text = f"speedup {s['speedup']:.3g}x"
            if s["speedup_ci_low"] is not None:
                text += f" [{s['speedup_ci_low']:.3g}, {s['speedup_ci_high']:.3g}]"
                text += "" if s["significant"] else " not significant"
            parts.append(text)
        if self.compile_s is not None:
            parts.append(f"compile {self.compile_s:.3g} s")
        if s["warnings"]:
            parts.append(f"{len(s['warnings'])} warning(s)")
        return ", ".join(parts)

    # ----- JSON -------------------------------------------------------------------

    def to_json(self, samples: bool = True) -> dict[str, Any]:
        """Everything as a JSON-ready dict; with ``samples`` the per-iteration times too."""
        data: dict[str, Any] = {
            "run_id": self.run_id,
            "created": self.created,
            "timestamp": self.timestamp,
            "options": self.options.to_dict(),
            "status": self.status,
            "env": self.env,
            "compile_s": self.compile_s,
            "diagnostics": self.diagnostics,
            "accuracy": self.accuracy,
            "memory": self.memory,
            "flops_per_call": self.flops_per_call,
            "bytes_per_call": self.bytes_per_call,
            "warnings": list(self.warnings),
            "error_kind": self.error_kind,
            "error_message": self.error_message,
            "error_detail": self.error_detail,
            "telemetry": self.telemetry,
            "summary": _summary_to_json(self.summary()),
        }
        if samples:
            self.ensure_samples()
            data["samples"] = samples_to_json(self.samples)
        return _finite(data)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "RunRecord":
        """Rebuild from :meth:`to_json` output; missing keys get defaults, bad ones are dropped.

        Without ``"samples"`` the stored ``"summary"`` is used until samples are set.
        """
        if not isinstance(data, dict):
            raise TypeError("a run record must be a JSON object")
        options, problem = _options_from_json(data.get("options"))
        record = cls(
            run_id=str(data.get("run_id") or new_run_id()),
            options=options,
            created=to_float(data.get("created")) or 0.0,
            status=data.get("status") if data.get("status") in STATUSES else "failed",
            env=_dict(data.get("env")),
            compile_s=to_float(data.get("compile_s")),
            diagnostics=_dict(data.get("diagnostics")),
            accuracy=_dict(data.get("accuracy")),
            memory=_dict(data.get("memory")),
            flops_per_call=to_float(data.get("flops_per_call")),
            bytes_per_call=to_float(data.get("bytes_per_call")),
            warnings=[str(w) for w in data.get("warnings") or () if w],
            error_kind=_str_or_none(data.get("error_kind")),
            error_message=_str_or_none(data.get("error_message")),
            error_detail=_str_or_none(data.get("error_detail")),
            telemetry=_dict(data.get("telemetry")),
            samples_file=_str_or_none(data.get("samples_file")),
        )
        if problem:
            record.warnings.append(problem)
        if isinstance(data.get("samples"), dict):
            record.set_samples_json(data["samples"])
        else:
            record._samples_loaded = False
            if isinstance(data.get("summary"), dict):
                record._stored_summary = data["summary"]
        return record


# ----- helpers for JSON and rows ---------------------------------------------------


def samples_to_json(samples: dict[str, list[Block]]) -> dict[str, list[dict[str, Any]]]:
    """Blocks per side as JSON-ready dicts."""
    return {side: [block.to_json() for block in samples.get(side, ())] for side in SIDES}


def samples_from_json(data: dict[str, Any], intern: Callable[[str], str] = str) -> dict[str, list[Block]]:
    """Blocks per side from :func:`samples_to_json` output; malformed blocks are dropped."""
    result = _new_samples()
    for side in SIDES:
        for item in data.get(side) or ():
            if not isinstance(item, dict):
                continue
            try:
                result[side].append(Block.from_json(item, intern))
            except (TypeError, ValueError):
                continue
    return result


def _summary_to_json(summary: dict[str, Any]) -> dict[str, Any]:
    def convert(value: Any) -> Any:
        if isinstance(value, Stats):
            return value.to_dict()
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        if isinstance(value, list):
            return [convert(v) for v in value]
        return value

    return convert(summary)


def _stats_or_none(value: Any) -> Stats | None:
    if not isinstance(value, dict):
        return None
    try:
        return Stats.from_dict(value)
    except (KeyError, TypeError):
        return None


def _summary_from_json(data: dict[str, Any]) -> dict[str, Any]:
    result = {
        key: data.get(key)
        for key in ("clock", "speedup", "speedup_ci_low", "speedup_ci_high", "significant", "host_speedup",
                    "host_speedup_ci_low", "host_speedup_ci_high", "launch_bound", "break_even_calls",
                    "tflops", "gbps")  # fmt: skip
    }
    for side in SIDES:
        entry = data.get(side) if isinstance(data.get(side), dict) else {}
        result[side] = {"iter": _stats_or_none(entry.get("iter")), "host": _stats_or_none(entry.get("host"))}
    per_label = data.get("per_label") if isinstance(data.get("per_label"), dict) else {}
    result["per_label"] = {
        str(label): {
            "eager": _stats_or_none(entry.get("eager")),
            "compiled": _stats_or_none(entry.get("compiled")),
            "speedup": entry.get("speedup"),
        }
        for label, entry in per_label.items()
        if isinstance(entry, dict)
    }
    result["warnings"] = [str(w) for w in data.get("warnings") or ()]
    result["live"] = False
    return result


def _options_from_json(data: Any) -> tuple[RunOptions, str | None]:
    if not isinstance(data, dict):
        return RunOptions(), "options were missing from the stored record"
    known = {f.name for f in dataclasses.fields(RunOptions)}
    kept = {k: v for k, v in data.items() if k in known}
    dropped = sorted(set(data) - known)
    try:
        options = RunOptions.from_dict(kept)
    except (OptionsError, TypeError, ValueError) as exc:
        return RunOptions(), f"stored options could not be read ({exc})"
    if dropped:
        return options, f"stored options had unknown fields, ignored: {', '.join(dropped)}"
    return options, None


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _label_key(label: str) -> tuple:
    # "batch=16" before "batch=128": compare the numbers inside labels as numbers.
    digits = "".join(c if c.isdigit() else " " for c in label).split()
    return (tuple(int(d) for d in digits), label)


def _rate(amount: float | None, compiled: Stats | None, unit: float) -> float | None:
    if not amount or amount <= 0 or compiled is None or compiled.median <= 0:
        return None
    return amount / (compiled.median / 1000) / unit


