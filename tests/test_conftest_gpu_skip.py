"""The suite's GPU skip: a GPU test whose fixtures cannot resolve errors on any machine."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester"]


def test_a_gpu_test_missing_a_fixture_errors_without_a_gpu_and_a_sound_one_is_skipped(pytester):
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
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:xdist")
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", outcomes.get("error")) == 1, result.stdout.str()
    # Skipped without CUDA; on the GPU machine it runs and passes.
    assert outcomes.get("skipped", 0) + outcomes.get("passed", 0) == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*fixture 'no_such_fixture' not found*"])
