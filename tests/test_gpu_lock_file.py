"""The GPU's lock file: the pid goes into compile-lab's own file, never through a link into a file of the user's."""

from __future__ import annotations

import asyncio
import os

import pytest

from fakes import fake_worker_argv
from tui import paths
from tui.engine.options import RunOptions
from tui.engine.run.session import RunSession
from tui.engine.runner.gpu_lock import acquire_gpu_lock, lock_name, release_gpu_lock
from tui.engine.runner.worker_runner import WorkerRunner
from tui.telemetry.fake import FakeSource


async def _never_busy() -> None:
    raise AssertionError("the lock was free")


def test_the_lock_holds_its_holders_pid(compile_lab_home):
    fd = asyncio.run(acquire_gpu_lock("GPU-abc", _never_busy))
    try:
        assert (paths.locks_dir() / lock_name("GPU-abc")).read_text() == f"{os.getpid()}\n"
    finally:
        release_gpu_lock(fd)


@pytest.mark.parametrize("planted", ["link", "fifo"])
def test_a_lock_path_that_is_a_link_or_no_file_is_refused_and_left_alone(compile_lab_home, tmp_path, planted):
    victim = tmp_path / "notes.txt"
    victim.write_text("the user's notes")
    lock = paths.locks_dir() / lock_name("GPU-abc")
    lock.parent.mkdir(parents=True, exist_ok=True)
    if planted == "link":
        lock.symlink_to(victim)
    else:
        os.mkfifo(lock)
    with pytest.raises(OSError, match="is a link" if planted == "link" else "is not a regular file") as caught:
        asyncio.run(acquire_gpu_lock("GPU-abc", _never_busy))
    assert str(lock) in str(caught.value) and "remove it" in str(caught.value)
    assert victim.read_text() == "the user's notes"


async def test_a_cuda_run_whose_lock_is_a_link_is_a_failed_row_naming_it(compile_lab_home, tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    telemetry = FakeSource(gpus=1, vary=False)
    victim = tmp_path / "notes.txt"
    victim.write_text("the user's notes")
    lock = paths.locks_dir() / lock_name(telemetry.uuids[0])
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.symlink_to(victim)
    session = RunSession(lambda lane: WorkerRunner(fake_worker_argv(), keep_spare=False, telemetry=telemetry,
                                                   sample_host=False))
    (record,) = session.submit([RunOptions(workload="pointwise", device="cuda:0", iters=8, block_size=4)])
    await session.wait_settled()
    await session.aclose()
    assert (record.status, record.error_kind) == ("failed", "setup_error")  # the machine's, not the configuration's
    assert record.error_message == f"the GPU's lock could not be taken: {lock} is a link: compile-lab leaves it " \
                                   "alone; remove it"
    assert victim.read_text() == "the user's notes"


async def test_a_locks_dir_that_cannot_be_made_is_a_failed_row_naming_the_path(compile_lab_home, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    telemetry = FakeSource(gpus=1, vary=False)
    paths.locks_dir().parent.mkdir(parents=True, exist_ok=True)
    paths.locks_dir().write_text("a file where the locks' folder goes")
    session = RunSession(lambda lane: WorkerRunner(fake_worker_argv(), keep_spare=False, telemetry=telemetry,
                                                   sample_host=False))
    (record,) = session.submit([RunOptions(workload="pointwise", device="cuda:0", iters=8, block_size=4)])
    await session.wait_settled()
    await session.aclose()
    assert (record.status, record.error_kind) == ("failed", "setup_error")
    assert record.error_message == f"the GPU's lock could not be taken: File exists ({paths.locks_dir()})"
