"""tui.engine.store.history: append-only JSONL, per-run sample files, tolerant loading."""

from __future__ import annotations

import json
import os
import time

import pytest

from tui import paths
from tui.engine.store.columns import RAW_COLUMNS
from tui.engine.store.export import samples_left_out, write_json, write_raw_csv
from tui.engine.store.history import SCHEMA, History, HistoryError
from tui.engine.options import RunOptions
from tui.engine.protocol import make_event
from tui.engine.store.results import RunRecord, SamplesUnavailable


def _record(speed: float = 2.0, fail: str | None = None, blocks: int = 3) -> RunRecord:
    record = RunRecord.new(RunOptions(workload="pointwise", params={"n": 32}).validated())
    record.apply(make_event("started", 0, env={"torch": "2.13.0"}))
    for i in range(blocks):
        record.apply(make_event("block", 1, side="eager", stage="measure", index=i, clock="perf_counter",
                                ms=[speed, speed * 1.1, speed * 0.9] * 4, host_ms_per_call=speed,
                                labels=["b=1", "b=2", "b=1"] * 4))  # fmt: skip
        record.apply(make_event("block", 1, side="compiled", stage="measure", index=i, clock="perf_counter",
                                ms=[1.0, 1.1, 0.9] * 4, host_ms_per_call=1.0))  # fmt: skip
    if fail:
        record.fail(fail, f"{fail} happened")
    else:
        record.apply(make_event("measured", 2, warnings=[]))
        record.apply(make_event("finished", 2))
    return record


def _history(tmp_path) -> History:
    return History(tmp_path / "data" / "history.jsonl")


def test_default_locations_follow_paths(compile_lab_home):
    history = History()
    assert history.path == paths.history_file() and history.runs_dir == paths.runs_dir()
    history.append(_record())
    assert paths.history_file().is_file()
    assert str(paths.history_file()).startswith(str(compile_lab_home))


def test_append_and_load(tmp_path):
    history = _history(tmp_path)
    first, second = _record(2.0), _record(3.0, fail="timeout")
    history.append(first)
    history.append(second)
    lines = history.path.read_bytes().splitlines()
    assert len(lines) == 2
    line = json.loads(lines[0])
    assert line["schema"] == SCHEMA and line["run_id"] == first.run_id
    assert "samples" not in line and line["samples_file"] == f"{first.run_id}.json"
    assert (history.runs_dir / line["samples_file"]).is_file()

    records, problems = history.load()
    assert problems == []
    assert [r.run_id for r in records] == [first.run_id, second.run_id]
    loaded = records[0]
    assert not loaded.samples_loaded  # lazily: nothing read yet
    assert loaded.to_row() == first.to_row()
    assert loaded.summary().per_label["b=1"].speedup == first.summary().per_label["b=1"].speedup
    assert records[1].status == "failed" and records[1].error_kind == "timeout"

    history.load_samples(loaded)
    assert loaded.samples_loaded
    assert list(loaded.raw_rows()) == list(first.raw_rows())
    assert loaded.to_row() == first.to_row()  # recomputed from the samples: the same


def test_samples_load_on_demand(tmp_path):
    history = _history(tmp_path)
    original = _record()
    history.append(original)
    [record], _ = history.load()
    target = write_raw_csv([record], tmp_path / "raw.csv")  # raw rows pull the samples in
    assert record.samples_loaded
    assert len(target.read_text().splitlines()) == 1 + 3 * 12 * 2


def test_a_run_without_samples(tmp_path):
    history = _history(tmp_path)
    record = RunRecord.new(RunOptions())
    record.fail("bad_options", "unknown backend")
    history.append(record)
    assert record.samples_file is None
    [back], problems = history.load()
    assert problems == [] and back.error_message == "unknown backend"
    assert list(back.raw_rows()) == []


def test_only_ended_runs_are_appended(tmp_path):
    record = RunRecord.new(RunOptions())
    record.apply(make_event("phase", 0, phase="measuring"))
    with pytest.raises(ValueError, match="measuring"):
        _history(tmp_path).append(record)


def test_missing_samples_file_is_reported(tmp_path):
    history = _history(tmp_path)
    history.append(_record())
    [record], _ = history.load()
    os.remove(history.samples_path(record))
    with pytest.raises(SamplesUnavailable, match=record.run_id):
        history.load_samples(record)
    # Exported with its stored summary and without the samples, the run named in the export's lines.
    assert write_raw_csv([record], tmp_path / "raw.csv").read_text() == ",".join(RAW_COLUMNS) + "\n"
    runs = json.loads(write_json([record], tmp_path / "runs.json").read_text())["runs"]
    assert runs[0]["samples"] is None and runs[0]["summary"]["speedup"] == 2.0
    [line] = samples_left_out([record])
    assert record.run_id in line and "No such file" in line
    assert line.endswith("exported without its per-iteration samples")
    assert record.summary().speedup == 2.0  # the stored summary still stands


def test_a_reader_meeting_an_append_in_progress_waits_for_its_line_and_reports_nothing(tmp_path):
    """An append holds the lock from its first byte to its fsync: a load meanwhile sees the line whole or not."""
    import fcntl
    import threading

    history = _history(tmp_path)
    history.append(_record())
    line = history.path.read_bytes()
    loaded: list[tuple[list[RunRecord], list[str]]] = []
    reader = threading.Thread(target=lambda: loaded.append(history.load()))
    fd = os.open(history.path, os.O_WRONLY | os.O_APPEND)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as History._append_bytes does
        os.write(fd, line[: len(line) // 2])
        reader.start()
        reader.join(timeout=0.5)  # without the shared lock the reader is done by now, with half a line
        os.write(fd, line[len(line) // 2 :])
    finally:
        os.close(fd)  # the lock goes with it
    reader.join()
    [(records, problems)] = loaded
    assert problems == [f"{history.path} line 2: run {records[0].run_id} appears again; the later line is kept"]
    assert len(records) == 1


def test_a_reader_waits_for_a_stuck_append_a_bounded_time_then_reads_the_file_as_it_is(tmp_path, monkeypatch):
    """A compile-lab stopped mid-append (or a hung fsync) held every reader: the app's history stayed empty and
    its quit waited until the lock went."""
    import fcntl

    import tui.engine.store.history as module

    monkeypatch.setattr(module, "LOCK_WAIT_S", 0.2)
    history = _history(tmp_path)
    history.append(_record())
    line = history.path.read_bytes()
    fd = os.open(history.path, os.O_WRONLY | os.O_APPEND)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line[:100])  # half an append, and its writer stopped
        began = time.monotonic()
        records, problems = history.load()
        waited = time.monotonic() - began
    finally:
        os.close(fd)
    assert len(records) == 1 and 0.2 <= waited < 5
    assert problems == [f"{history.path} line 2: incomplete last line (another compile-lab may be writing it, or "
                        "a write was interrupted), skipped"]


def test_torn_last_line_is_skipped_and_the_next_append_survives(tmp_path):
    history = _history(tmp_path)
    history.append(_record())
    history.append(_record())
    with open(history.path, "ab") as f:
        f.write(b'{"schema": 1, "run_id": "torn", "stat')  # a crash mid-write
    before = history.path.read_bytes()
    records, problems = history.load()
    assert len(records) == 2
    assert len(problems) == 1 and "line 3" in problems[0] and "incomplete" in problems[0]
    later = _record(5.0)
    history.append(later)
    after = history.path.read_bytes()
    assert after.startswith(before)  # appended, never rewritten
    records, problems = history.load()
    assert [r.run_id for r in records][-1] == later.run_id
    assert len(problems) == 1 and "line 3" in problems[0] and "not valid JSON" in problems[0]


def test_garbage_middle_line(tmp_path):
    history = _history(tmp_path)
    history.append(_record())
    with open(history.path, "ab") as f:
        f.write(b"\x00\xffgarbage\n[1, 2]\n\n")
    history.append(_record())
    records, problems = history.load()
    assert len(records) == 2
    assert any("line 2" in p and "not valid JSON" in p for p in problems)
    assert any("line 3" in p and "not a run record" in p for p in problems)
    assert len(problems) == 2  # the blank line is not a problem


def test_unreadable_file_is_a_problem_not_a_crash(tmp_path):
    history = History(tmp_path / "history.jsonl")
    history.path.mkdir()  # reading a directory fails like an unreadable file
    records, problems = history.load()
    assert records == [] and len(problems) == 1 and str(history.path) in problems[0]


def test_missing_file_is_an_empty_history(tmp_path):
    assert _history(tmp_path).load() == ([], [])


def test_other_schemas_are_read_best_effort(tmp_path):
    history = _history(tmp_path)
    history.path.parent.mkdir(parents=True)
    old = {"run_id": "old-1", "status": "done", "options": {"workload": "matmul"}}
    future = {"schema": 99, "run_id": "new-1", "status": "done", "shiny": True}
    history.path.write_text("\n".join(json.dumps(x) for x in (old, {**old, "run_id": "old-2"}, future)) + "\n")
    records, problems = history.load()
    assert [r.run_id for r in records] == ["old-1", "old-2", "new-1"]
    assert records[0].options.workload == "matmul"
    assert any("line 1 and 1 more" in p and "schema None" in p and "older" in p for p in problems)
    assert any("line 3" in p and "schema 99" in p and "newer" in p for p in problems)


def test_load_never_modifies_the_file(tmp_path):
    history = _history(tmp_path)
    for _ in range(3):
        history.append(_record())
    with open(history.path, "ab") as f:
        f.write(b"junk\n{\"run_id\": \"x\", \"schema\": 0}\n{broken")
    before = history.path.read_bytes()
    stat = os.stat(history.path)
    records, _ = history.load()
    for record in records:
        history.load_samples(record)
        record.summary()
    assert history.path.read_bytes() == before
    assert os.stat(history.path).st_mtime_ns == stat.st_mtime_ns


def test_append_failure_is_one_line(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory should be")
    history = History(blocker / "history.jsonl")
    with pytest.raises(HistoryError) as info:
        history.append(_record())
    assert str(blocker) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.perf  # a CPU-time bound
def test_loading_thousands_of_runs_is_fast(tmp_path):
    history = _history(tmp_path)
    history.append(_record())
    line = history.path.read_bytes()
    item = json.loads(line)
    with open(history.path, "ab") as f:
        for i in range(2000):
            f.write(json.dumps({**item, "run_id": f"run-{i}"}).encode() + b"\n")
    started = time.process_time()
    records, problems = history.load()
    elapsed = time.process_time() - started
    assert len(records) == 2001 and problems == []
    assert elapsed < 2.0, f"loading 2001 runs took {elapsed:.2f} s of CPU"


# ----- chunks (issue 11, item 7: a reader with a UI shows the first runs while the rest is read) ----


def _history_of(tmp_path, count: int) -> tuple[History, list[str]]:
    history = _history(tmp_path)
    records = [_record(2.0 + i / 10) for i in range(count)]
    for record in records:
        history.append(record)
    return history, [r.run_id for r in records]


def test_iter_load_gives_the_runs_in_chunks_the_first_one_smaller(tmp_path):
    history, run_ids = _history_of(tmp_path, 13)
    chunks = list(history.iter_load(chunk=5, first=2))
    assert [len(records) for records, _ in chunks] == [2, 5, 5, 1]
    assert [r.run_id for records, _ in chunks for r in records] == run_ids
    assert all(problems == [] for _, problems in chunks)
    assert [r.run_id for r in history.load()[0]] == run_ids
    assert [len(records) for records, _ in history.iter_load(chunk=20)] == [13]


def test_iter_load_yields_a_run_seen_again_and_says_the_later_line_is_kept(tmp_path):
    history, run_ids = _history_of(tmp_path, 4)
    lines = history.path.read_bytes().splitlines(keepends=True)
    history.path.write_bytes(b"".join(lines) + lines[0])  # run 0 again, as line 5
    chunks = list(history.iter_load(chunk=2))
    assert [[r.run_id for r in records] for records, _ in chunks] == [run_ids[:2], run_ids[2:], [run_ids[0]]]
    assert chunks[2][1] == [f"{history.path} line 5: run {run_ids[0]} appears again; the later line is kept"]
    records, problems = history.load()
    assert [r.run_id for r in records] == run_ids[1:] + run_ids[:1] and problems == chunks[2][1]


def test_iter_load_problems_come_with_the_chunk_of_their_line(tmp_path):
    history, run_ids = _history_of(tmp_path, 4)
    lines = history.path.read_bytes().splitlines(keepends=True)
    old = json.dumps({"run_id": "old-1", "status": "done", "options": {"workload": "matmul"}}).encode() + b"\n"
    history.path.write_bytes(b"".join(lines[:3]) + b"{garbage\n" + old + lines[3] + b'{"torn')
    chunks = list(history.iter_load(chunk=2))
    assert [[r.run_id for r in records] for records, _ in chunks] == [run_ids[:2], [run_ids[2], "old-1"], [run_ids[3]]]
    assert chunks[0][1] == []
    assert chunks[1][1] == [f"{history.path} line 4: not valid JSON, skipped"]
    last = chunks[2][1]
    assert "line 7: incomplete last line" in last[0] and "line 5" in last[1] and "schema None" in last[1]


def test_iter_load_reads_the_file_as_it_was_when_it_began(tmp_path):
    history, run_ids = _history_of(tmp_path, 3)
    chunks = history.iter_load(chunk=1)
    first, _ = next(chunks)
    later = _record(9.0)
    history.append(later)  # a run that ends while the history is being read
    rest = [r.run_id for records, _ in chunks for r in records]
    assert [first[0].run_id, *rest] == run_ids
    assert [r.run_id for r in history.load()[0]] == [*run_ids, later.run_id]


def test_iter_load_keeps_what_it_read_when_the_disk_fails_half_way(tmp_path, monkeypatch):
    import tui.engine.store.history as module

    history, run_ids = _history_of(tmp_path, 3)
    lines = module._lines

    def failing(handle, remaining):
        for number, (line_number, raw, torn) in enumerate(lines(handle, remaining)):
            if number == 2:
                raise OSError(5, "Input/output error")
            yield line_number, raw, torn

    monkeypatch.setattr(module, "_lines", failing)
    records, problems = history.load()
    assert [r.run_id for r in records] == run_ids[:2]
    assert problems == [f"cannot read {history.path}: Input/output error; the runs read before are kept"]


def test_stored_samples_can_be_released_and_loaded_again_with_the_same_summary(tmp_path):
    history = _history(tmp_path)
    live = _record()
    history.append(live)
    assert live.release_samples() is False  # this session's blocks exist only in memory
    (stored,), _ = history.load()
    before = live.summary()
    blocks = stored.loaded_samples()
    assert [b.ms for b in blocks["eager"]] == [b.ms for b in live.samples["eager"]]
    assert stored.release_samples() is True
    assert not stored.samples_loaded and stored.samples == {"eager": [], "compiled": []}
    assert stored.summary().speedup == before.speedup and stored.summary().verdict == before.verdict
    assert stored.release_samples() is False  # already released
    # A reader that took the blocks keeps them whatever a release does afterwards.
    again = stored.loaded_samples()
    stored.release_samples()
    assert [b.ms for b in again["compiled"]] == [b.ms for b in live.samples["compiled"]]
    assert len(list(stored.raw_rows())) == len(list(live.raw_rows()))


def test_a_run_whose_code_cannot_be_written_keeps_its_line_and_says_so(tmp_path, monkeypatch):
    """The history's line is the run: a code file that cannot be written costs the code, not the line."""
    from tui.engine.explain.artifacts import capped_code
    from tui.engine.protocol import GraphCoded
    from tui.engine.store import history as history_module

    def no_room(folder, graphs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(history_module, "store_code", no_room)
    record = RunRecord.new(RunOptions(workload="pointwise", params={"n": 32}).validated())
    record.apply(make_event("started", 0, env={"torch": "2.13.0"}))
    record.apply(GraphCoded(graph=capped_code(0, "0/0", "# AOT ID: ['0_inference']\n", 10**7)))
    record.apply(make_event("measured", 2, warnings=[]))
    record.apply(make_event("finished", 2))
    history = _history(tmp_path)
    history.append(record)
    (stored,), problems = history.load()
    assert not problems and stored.run_id == record.run_id
    warning = "code: the generated code was not kept (cannot write to "
    assert any(w.startswith(warning) and w.endswith("No space left on device); the history has the run without it")
               for w in stored.warnings), stored.warnings
    assert record.artifacts.graphs[0].code is not None  # still in memory: this process's exports have it
