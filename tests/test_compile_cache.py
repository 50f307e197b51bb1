"""The workers' inductor cache: compile-lab's own folder, one per set of precision flags.

Inductor's autotuning cache keys a choice's timing by the float32 matmul precision alone, which reads the same
under PyTorch's defaults and under ``ieee``, so max-autotune's choices for one precision were served to runs under
the other (docs/BENCHMARKS.md §19). The CPU cannot autotune a convolution, so one test asks inductor's autotuning
cache directly, in fresh interpreters set up as the worker sets itself up; the last runs real workers: runs under
other flags compile in folders of their own, runs under the same flags share one, and nothing lands beside the
user's own caches."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

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


def test_a_run_leaves_the_cache_variables_as_it_found_them(monkeypatch, tmp_path):
    """A worker run inside another process (a test's) must not hand its folder to that process's later runs."""
    monkeypatch.setattr(compile_cache, "_root", tmp_path)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/somewhere/the/user/chose")
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    saved = compile_cache.saved_env()
    compile_cache.use(PYTORCH_FLAGS)
    os.environ["TRITON_CACHE_DIR"] = str(tmp_path / "cold" / "triton")  # what cold_compile sets
    compile_cache.restore_env(saved)
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == "/somewhere/the/user/chose"
    assert "TRITON_CACHE_DIR" not in os.environ


AUTOTUNE_LOOKUP = """
import json, sys
from torch._inductor.codecache import PersistentCache
from tui.engine.worker import compile_cache, precision

class Choice:
    def __init__(self, name):
        self.name = name

    def hash_key(self):
        return self.name

precision.apply(sys.argv[1])
if sys.argv[2] == "per-flags":
    compile_cache.use(precision.read_flags())
benchmarked = []

def benchmark(choices):
    benchmarked.append(len(choices))
    return {choice: 1.0 for choice in choices}

PersistentCache().lookup([Choice("aten"), Choice("triton")], "convolution", "inputs", benchmark)
print(json.dumps(bool(benchmarked)))
"""


def _benchmarked(precision: str, folders: str, cache_dir: str) -> bool:
    """Whether a fresh interpreter under ``precision`` benchmarked the choices (False: the cache answered)."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache_dir}
    done = subprocess.run([sys.executable, "-c", AUTOTUNE_LOOKUP, precision, folders], env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return bool(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.slow
@pytest.mark.torch
def test_autotuning_under_ieee_never_reads_the_choices_timed_under_pytorchs_flags(tmp_path):
    pytest.importorskip("torch")
    shared, split = str(tmp_path / "shared"), str(tmp_path / "split")
    # one folder for every precision, as inductor has it: the ieee run is served the default run's timings
    assert [_benchmarked(p, "shared", shared) for p in ("default", "ieee")] == [True, False], (
        "inductor's autotuning cache now tells the precisions apart: compile_cache may no longer be needed")
    # a folder per set of flags: ieee times its own choices, and a second default run reads the first one's
    assert [_benchmarked(p, "per-flags", split) for p in ("default", "ieee", "default")] == [True, True, False]


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


def test_env_says_where_the_compile_cache_is_and_how_big(monkeypatch, tmp_path):
    """Nothing prunes the workers' inductor caches, so ``compile-lab env`` shows their folder and its size."""
    import io

    from rich.console import Console

    from tui.cli.info import _EnvTable

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "chosen"))
    folder = tmp_path / "chosen" / "compile-lab" / "flags-0123456789ab" / "fxgraph"
    folder.mkdir(parents=True)
    (folder / "graph").write_bytes(b"x" * 3000)
    env = _EnvTable()
    env.compile_cache()
    out = io.StringIO()
    Console(file=out, width=1000).print(env.table)  # a long temporary path stays on one line
    assert str(tmp_path / "chosen" / "compile-lab") in out.getvalue() and "3.0 kB" in out.getvalue(), out.getvalue()
