"""The workers' inductor cache: compile-lab's own folder, one per set of precision flags.

Inductor's autotuning cache keys a choice's timing by the float32 matmul precision alone, which reads the same
under PyTorch's defaults and under ``ieee``, so max-autotune's choices for one precision were served to runs under
the other (docs/BENCHMARKS.md §19). The last test runs real workers on the CPU: runs under other flags compile in
folders of their own, runs under the same flags share one, and nothing lands beside the user's own caches."""

from __future__ import annotations

import asyncio
import os

import pytest

from tui import paths
from tui.engine.options import RunOptions
from tui.engine.runner import WorkerRunner
from tui.engine.store.results import RunRecord
from tui.engine.worker import compile_cache

PYTORCH_FLAGS = {"tf32_matmul": False, "tf32_cudnn": True, "float32_matmul_precision": "highest",
                 "fp32_precision_matmul": "none", "fp32_precision_cudnn": "none"}


def test_the_same_flags_give_the_same_folder_and_any_other_flag_another(tmp_path):
    folder = compile_cache.folder_for(PYTORCH_FLAGS, tmp_path)
    assert folder.parent == tmp_path and folder.name.startswith("flags-")
    assert compile_cache.folder_for(dict(reversed(list(PYTORCH_FLAGS.items()))), tmp_path) == folder
    ieee = {**PYTORCH_FLAGS, "tf32_cudnn": False}
    unknown = {**PYTORCH_FLAGS, "tf32_cudnn": None}
    folders = {compile_cache.folder_for(flags, tmp_path) for flags in (PYTORCH_FLAGS, ieee, unknown)}
    assert len(folders) == 3


def test_the_caches_live_under_compile_labs_home_unless_the_user_chose_a_cache_dir(compile_lab_home, monkeypatch,
                                                                                  tmp_path):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    assert paths.compile_cache_dir() == compile_lab_home / "cache" / "inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "big-disk"))
    assert paths.compile_cache_dir() == tmp_path / "big-disk" / "compile-lab"


def test_the_root_is_read_once_so_inductors_own_default_cannot_move_it(monkeypatch, tmp_path):
    monkeypatch.setattr(compile_cache, "_root", None)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "chosen"))
    assert compile_cache.root() == tmp_path / "chosen" / "compile-lab"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/tmp/torchinductor_someone")  # what inductor writes back
    assert compile_cache.root() == tmp_path / "chosen" / "compile-lab"
    folder = compile_cache.use(PYTORCH_FLAGS)
    assert folder.parent == tmp_path / "chosen" / "compile-lab"
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(folder)


async def _runs(env: dict[str, str], *precisions: str) -> list[RunRecord]:
    runner = WorkerRunner(keep_spare=False, env=env)
    records = []
    try:
        for precision in precisions:
            options = RunOptions(workload="pointwise", params={"n": 64}, backend="inductor", precision=precision,
                                 warmup=1, iters=4, block_size=2, profile=False, time_budget_s=600.0)
            record = RunRecord.new(options.validated())
            await asyncio.wait_for(runner.run(record), 180)
            assert record.status == "done", record.error_message
            records.append(record)
    finally:
        await runner.aclose()
    return records


@pytest.mark.slow
@pytest.mark.torch
async def test_a_run_never_reads_a_graph_another_precision_compiled(tmp_path):
    pytest.importorskip("torch")
    chosen = tmp_path / "user-cache"
    first, ieee, again = await _runs({"TORCHINDUCTOR_CACHE_DIR": str(chosen)}, "default", "ieee", "default")
    hits = [record.diagnostics.fxgraph_cache_hit for record in (first, ieee, again)]
    assert hits[0] == 0 and hits[1] == 0, hits  # the ieee run compiled afresh
    assert hits[2] > 0, hits  # a run under the first run's flags shares its warm cache
    assert [p.name for p in chosen.iterdir()] == ["compile-lab"]  # nothing of ours beside the user's caches
    folders = sorted(p for p in (chosen / "compile-lab").iterdir())
    assert len(folders) == 2 and all((folder / "fxgraph").is_dir() for folder in folders), folders
