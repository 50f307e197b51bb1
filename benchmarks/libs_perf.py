"""Libraries where they serve (issue 25, item 6): the bootstrap with numpy, the history with msgspec.

Run from the repository root::

    python benchmarks/libs_perf.py bootstrap --before 3381abd   # this tree against a commit's
    python benchmarks/libs_perf.py history                       # needs msgspec for its last rows
    python benchmarks/libs_perf.py encoding                      # likewise

``bootstrap``: a hierarchical bootstrap of 5 processes x 50 blocks x 10 samples per side
(:func:`tui.engine.measure.stats.bootstrap_speedup_processes`, 2000 resamples, the project's default),
a single process's 50 blocks (:func:`~tui.engine.measure.stats.bootstrap_speedup`), the same 5 x 50 x 10
as a change between two sets of runs (:func:`tui.engine.measure.change_stats.bootstrap_change`) and
200,000 samples over 2,000 blocks. Each is timed in CPU seconds (the machine is shared; wall
time is not ours), the median of ``--repeats``. With ``--before REV`` the same script runs on
``git archive REV``'s ``tui`` in a fresh interpreter, and the two are compared: the same point
estimate, the same interval for the same seed within a tree, and interval ends that agree
within Monte-Carlo error (the mean over ``--seeds`` seeds of each end, the difference against
four standard errors).

``history``: a history of ``--lines`` lines written with the project's own writer
(``tests/app/big_history.py``: genuine lines of eight ended runs), then loaded with
:meth:`tui.engine.store.history.History.load`, and its parts: reading the lines, ``json.loads`` of
each, and the typed decode. With msgspec importable: ``msgspec.json.decode`` of each line
untyped, and decoded straight into :class:`tui.engine.store.stored_run.StoredRun` (strict: the
tolerant per-field defaults of the project's decoder are not reproduced), with how many
records equal the project's, and a sketch of a msgspec fast path to a
:class:`~tui.engine.store.results.RunRecord` (clean lines of the current schema only; others would
take the project's decoder).

``encoding``: one worker event through :func:`tui.engine.protocol.decode` and ``encode``, and one
run of 200,000 samples encoded as :func:`tui.engine.store.export.write_json` does (``json.dump`` to a
stream), with ``json.dumps``, and with msgspec when it is importable.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _cpu(function: Callable[[], Any], repeats: int) -> float:
    """The median CPU seconds of ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        started = time.process_time()
        function()
        times.append(time.process_time() - started)
    return statistics.median(times)


# ----- bootstrap ---------------------------------------------------------------------------


def _processes(seed: int, processes: int = 5, blocks: int = 50, size: int = 10) -> list[tuple[list, list]]:
    """``processes`` x ``blocks`` x ``size`` samples per side: eager about 2 ms, compiled about 1 ms,
    each process shifted by its own factor, each block drifting, each sample lognormal."""
    rng = random.Random(seed)
    result = []
    for _ in range(processes):
        shift = rng.lognormvariate(0, 0.03)
        sides = []
        for centre in (2.0, 1.0):
            sides.append([[centre * shift * (1 + 0.01 * math.sin(b / 5)) * rng.lognormvariate(0, 0.05)
                           for _ in range(size)] for b in range(blocks)])
        result.append((sides[0], sides[1]))
    return result


def bootstrap_figures(repeats: int, seeds: int) -> dict[str, Any]:
    """This tree's timings and intervals (``tui`` as imported)."""
    try:
        from tui.engine.measure.change_stats import bootstrap_change
        from tui.engine.measure.stats import bootstrap_speedup, bootstrap_speedup_processes
    except ImportError:  # a --before tree from before tui.engine had its subpackages
        from tui.engine.change_stats import bootstrap_change  # type: ignore[no-redef]
        from tui.engine.stats import bootstrap_speedup, bootstrap_speedup_processes  # type: ignore[no-redef]

    data = _processes(0)
    one = data[0]
    rng = random.Random(18)
    big = [[[rng.lognormvariate(0.7, 0.1) for _ in range(50)] for _ in range(2000)],
           [[rng.lognormvariate(0.0, 0.1) for _ in range(50)] for _ in range(2000)]]
    base = [e for e, _ in data]
    new = [c for _, c in _processes(1)]
    times = {
        "hierarchical 5 x 50 x 10": _cpu(lambda: bootstrap_speedup_processes(data, 2000, seed=0), repeats),
        "one process 50 x 10": _cpu(lambda: bootstrap_speedup(*one, 2000, seed=0), repeats),
        "change 5 x 50 x 10 per side": _cpu(lambda: bootstrap_change(base, new, 2000, seed=0), repeats),
        "one process 2,000 x 50 (200k)": _cpu(lambda: bootstrap_speedup(*big, 2000, seed=0), max(1, repeats // 2)),
    }
    intervals = [list(bootstrap_speedup_processes(data, 2000, seed=s)) for s in range(seeds)]
    again = list(bootstrap_speedup_processes(data, 2000, seed=0))
    return {"cpu_s": times, "intervals": intervals, "deterministic": again == intervals[0]}


def _tree_at(revision: str, into: Path) -> Path:
    """``git archive revision tui`` unpacked under ``into``."""
    command = ["git", "-C", str(ROOT), "archive", revision, "tui"]
    archive = subprocess.run(command, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into)
    return into


def _run_in(tree: Path, repeats: int, seeds: int) -> dict[str, Any]:
    """This script's ``bootstrap --json`` in a fresh interpreter that imports ``tree``'s ``tui``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, __file__, "bootstrap", "--json", "--repeats", str(repeats),
                          "--seeds", str(seeds)], check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def _agreement(before: list[list[float]], after: list[list[float]]) -> list[str]:
    """Point equal, and each end's mean over seeds within four standard errors."""
    lines = [f"point: before {before[0][0]:.6f}, after {after[0][0]:.6f}, equal: {before[0][0] == after[0][0]}"]
    for index, name in ((1, "low"), (2, "high")):
        b, a = [row[index] for row in before], [row[index] for row in after]
        sd_b, sd_a = statistics.stdev(b), statistics.stdev(a)
        error = math.sqrt(sd_b**2 / len(b) + sd_a**2 / len(a))
        difference = statistics.mean(a) - statistics.mean(b)
        verdict = "agree" if abs(difference) <= 4 * error else "DIFFER"
        lines.append(f"{name}: before {statistics.mean(b):.6f} (sd {sd_b:.6f} over seeds), after "
                     f"{statistics.mean(a):.6f} (sd {sd_a:.6f}); difference {difference:+.6f} = "
                     f"{difference / error:+.2f} standard errors: {verdict}")
    return lines


def bootstrap(args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(bootstrap_figures(args.repeats, args.seeds)))
        return
    after = _run_in(ROOT, args.repeats, args.seeds)
    rows = {"after": after}
    if args.before:
        with tempfile.TemporaryDirectory() as scratch:
            rows = {"before": _run_in(_tree_at(args.before, Path(scratch)), args.repeats, args.seeds), **rows}
    print("| case | " + " | ".join(f"{label} (CPU s)" for label in rows) + " |")
    print("|---|" + "---:|" * len(rows))
    for case in after["cpu_s"]:
        print(f"| {case} | " + " | ".join(f"{row['cpu_s'][case]:.3f}" for row in rows.values()) + " |")
    for label, row in rows.items():
        print(f"{label}: the same interval for the same seed: {row['deterministic']}")
    if "before" in rows:
        print("\n".join(_agreement(rows["before"]["intervals"], after["intervals"])))


# ----- history -----------------------------------------------------------------------------


def history(args: argparse.Namespace) -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "app")]
    from big_history import write_big_history

    from tui.engine.store.history import History
    from tui.engine.input_file import load_json
    from tui.engine.store.results import RunRecord

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "history.jsonl"
        started = time.process_time()
        write_big_history(path, args.lines)
        megabytes, seconds = path.stat().st_size / 1e6, time.process_time() - started
        print(f"wrote {args.lines} lines, {megabytes:.1f} MB, in {seconds:.2f} s CPU")
        raw = path.read_bytes().splitlines()
        figures = {
            "History.load (the whole load)": _cpu(lambda: History(path).load(), args.repeats),
            "read and split the lines": _cpu(lambda: path.read_bytes().splitlines(), args.repeats),
            "json.loads of each line (load_json)": _cpu(lambda: [load_json(line) for line in raw], args.repeats),
        }
        items = [json.loads(line) for line in raw]
        decode = _cpu(lambda: [RunRecord.decode(item) for item in items], args.repeats)
        figures["the typed decode (RunRecord.decode)"] = decode
        figures.update(_msgspec_figures(raw, items, args.repeats))
    for name, seconds in figures.items():
        print(f"| {name} | {seconds:.2f} |")


# JSON escapes of control characters, DEL, and C1 characters in UTF-8: a line without any has no string
# that printable() would change (a line with one would take the project's decoder).
_CONTROL = re.compile(rb"\\u00[0189][0-9a-fA-F]|\\u007[fF]|\x7f|\xc2[\x80-\x9f]")


def _msgspec_figures(raw: list[bytes], items: list[Any], repeats: int) -> dict[str, float]:
    try:
        import msgspec
    except ImportError:
        print("msgspec is not importable: its rows are left out")
        return {}
    from tui.engine.store.results import RunRecord
    from tui.engine.store.stored_run import StoredRun, stored_options
    from tui.typed import decode_fields

    @dataclasses.dataclass(frozen=True)
    class StoredLine(StoredRun):
        options: Any = None

    untyped, typed = msgspec.json.Decoder(), msgspec.json.Decoder(StoredRun)
    line_decoder = msgspec.json.Decoder(StoredLine)
    same = sum(typed.decode(line) == decode_fields(StoredRun, item, where="record")[0]
               for line, item in zip(raw, items, strict=True))
    print(f"msgspec {msgspec.__version__}: of {len(raw)} lines decoded strictly into StoredRun, {same} equal the "
          "project's decode_fields(StoredRun)")
    kept = [f.name for f in dataclasses.fields(StoredRun) if f.name not in ("summary", "samples", "warnings")]

    def fast_path(line: bytes) -> RunRecord | None:
        """A sketch of a msgspec fast path (what RunRecord.decode does, for a clean line of this schema)."""
        if not line.startswith(b'{"schema":3,') or _CONTROL.search(line):
            return None  # the project's decoder: older schemas, strings to make printable
        try:
            stored = line_decoder.decode(line)
        except msgspec.ValidationError:
            return None  # the project's decoder: it names the field and keeps the rest
        options, _ = stored_options(stored.options)
        record = RunRecord(options=options, warnings=list(stored.warnings), **{k: getattr(stored, k) for k in kept})
        record._samples_loaded = False
        record._stored_summary = stored.summary
        return record

    fast = [fast_path(line) for line in raw]
    print(f"the fast path's sketch took {sum(r is not None for r in fast)} of {len(raw)} lines")
    return {
        "msgspec.json.decode of each line (untyped)": _cpu(lambda: [untyped.decode(line) for line in raw], repeats),
        "msgspec.json.decode into StoredRun (strict)": _cpu(lambda: [typed.decode(line) for line in raw], repeats),
        "a msgspec fast path to RunRecord (sketch)": _cpu(lambda: [fast_path(line) for line in raw], repeats),
    }


# ----- the worker protocol and the JSON export ---------------------------------------------


def encoding(args: argparse.Namespace) -> None:
    """Per worker event: protocol.decode and encode; per export of one run of 200k samples: its encoding."""
    from tui.engine.protocol import BlockTimed, decode, encode, make_event

    event = make_event("block", 1.0, side="eager", stage="measure", index=3, clock="perf_counter",
                       ms=[1.0 + i / 1000 for i in range(10)], host_ms_per_call=1.01)
    line, count = encode(event), 20_000
    rows = {"protocol.decode of one block event (10 samples), us": _cpu(lambda: [decode(line) for _ in range(count)],
                                                                         args.repeats) / count * 1e6,
            "protocol.encode of one block event, us": _cpu(lambda: [encode(event) for _ in range(count)],
                                                           args.repeats) / count * 1e6}
    rng = random.Random(0)
    run = {"samples": {side: [{"index": b, "ms": [rng.lognormvariate(0, 0.1) for _ in range(50)]} for b in range(2000)]
                       for side in ("eager", "compiled")}}
    rows["json.dump to a stream (export.write_json) of 200k samples, ms"] = _cpu(
        lambda: json.dump(run, io.StringIO(), separators=(",", ":"), allow_nan=False), args.repeats) * 1e3
    rows["json.dumps of the same, ms"] = _cpu(
        lambda: json.dumps(run, separators=(",", ":"), allow_nan=False), args.repeats) * 1e3
    try:
        import msgspec
    except ImportError:
        print("msgspec is not importable: its rows are left out")
    else:
        decoder, encoder = msgspec.json.Decoder(BlockTimed), msgspec.json.Encoder()
        same = encoder.encode(run) == json.dumps(run, separators=(",", ":")).encode()
        print(f"msgspec {msgspec.__version__}: the event decodes equal: {decoder.decode(line) == event}; the run "
              f"encodes to json.dumps's bytes: {same}")
        rows["msgspec.json.decode into BlockTimed, us"] = _cpu(
            lambda: [decoder.decode(line) for _ in range(count)], args.repeats) / count * 1e6
        rows["msgspec.json.encode of the event, us"] = _cpu(
            lambda: [encoder.encode(event) for _ in range(count)], args.repeats) / count * 1e6
        rows["msgspec.json.encode of the 200k samples, ms"] = _cpu(lambda: encoder.encode(run), args.repeats) * 1e3
    for name, value in rows.items():
        print(f"| {name} | {value:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("part", choices=["bootstrap", "history", "encoding"])
    parser.add_argument("--before", help="a git revision to compare the bootstrap with")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=20, help="seeds for the Monte-Carlo agreement")
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    {"bootstrap": bootstrap, "history": history, "encoding": encoding}[args.part](args)


if __name__ == "__main__":
    main()
