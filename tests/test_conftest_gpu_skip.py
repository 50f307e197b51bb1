"""The suite's GPU skip: a GPU test whose fixtures cannot resolve errors on any machine."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def torch_loaded():
    """torch, where it is installed, imported before pytester's snapshot of ``sys.modules``.

    The inner run's conftest imports torch to ask for CUDA, and pytester drops every module the inner
    run imported when it ends; an extension module (numpy's, under torch) cannot be imported a second
    time in one process, so a later test of this process would fail on its first numpy call.
    """
    if importlib.util.find_spec("torch") is not None:
        import torch  # noqa: F401


def test_a_gpu_test_missing_a_fixture_errors_without_a_gpu_and_a_sound_one_is_skipped(torch_loaded, pytester):
    here = Path(__file__).parent
    pytester.makeconftest((here / "conftest.py").read_text(encoding="utf-8"))
    # the conftest imports its sibling module
    pytester.makepyfile(css_cache=(here / "css_cache.py").read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nmarkers =\n    gpu: needs a CUDA GPU\n"
                     "    torch: needs torch\n")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.gpu
        def test_needs_a_fixture_nobody_defines(no_such_fixture):
            pass

        @pytest.mark.gpu
        def test_sound(tmp_path):
            pass
        """
    )
    # In this process, where torch (which the conftest's CUDA check imports) is loaded already: a pytest
    # subprocess would import it and every plugin again, seconds of CPU. textual-snapshot is left out: its
    # report folder is module state that belongs to this process's own session, and the inner one removes it.
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:xdist",
                                        "-p", "no:textual-snapshot")
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", outcomes.get("error")) == 1, result.stdout.str()
    # Skipped without CUDA; on the GPU machine it runs and passes.
    assert outcomes.get("skipped", 0) + outcomes.get("passed", 0) == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*fixture 'no_such_fixture' not found*"])
