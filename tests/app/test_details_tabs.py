"""The details screen's tabs: every tab at 80x24, keys that switch them, and fields a person can read.

Issue 13 item 7 (the tabs) and issue 14 item 5 (details agree with themselves): human labels with
units instead of internal names, one interval format, rounded figures.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

import pytest
from rich.console import Console
from textual.app import App
from textual.widgets import Static, Tab

from fakes.records import cuda_run_record, full_group, full_record
from fakes.timed import timed_run
from tui.app.components.details import TABS, DetailsScreen, render_details, render_tab, tab_ids
from tui.app.components.help import HelpScreen
from tui.engine.explain.kernels import Profile, side_profile
from tui.engine.explain.profile_types import RawEvent
from tui.engine.payloads import Diagnostics, Env
from tui.present.format import fmt_ms
from tui.telemetry.model import RunTelemetry

INTERNAL_NAMES = ("max_abs_err", "fail_on_recompile_stance", "calls_captured", "frames_ok", "frames_total",
                  "cudagraph_skip_reasons", "compile_times_s", "sm_clock_mean_mhz", "other_cpu_cores",
                  "python_executable", "kernels_per_call", "exclusive_ms_per_call")  # fmt: skip


def _text(renderable, width: int = 78) -> str:
    console = Console(width=width, record=True, file=open(os.devnull, "w"), color_system=None)
    console.print(renderable)
    return console.export_text()


class _Host(App):
    def __init__(self, record) -> None:
        super().__init__()
        self.record = record

    def on_mount(self) -> None:
        self.push_screen(DetailsScreen(self.record))


def test_the_processes_table_keeps_each_process_on_one_line_at_80_columns():
    # the run ids came second and took the width: every speedup interval wrapped onto a second line, and every
    # run id read "20261205-2336…", the same for all
    from tui.engine.store.repeats import group_rows

    [row] = group_rows(full_group(scales=(1.0, 1.06, 0.97)))
    lines = _text(render_tab(row, "summary"), width=76).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#  status"))
    rows = lines[start + 1:start + 4]
    assert [line.split()[0] for line in rows] == ["1", "2", "3"]
    assert all(re.search(r"\d\.\d\d× \[\d\.\d\d, \d\.\d\d\]", line) for line in rows), rows
    assert len({line.split()[-1] for line in rows}) == 3  # each run id tells its process apart


def test_a_groups_processes_that_warn_alike_are_one_warning_in_its_summary():
    from tui.engine.store.repeats import group_rows

    group = full_group()
    for number, member in enumerate(group, 1):
        member.warnings.append(f"eager time spread IQR/median {10 + 9 * number}% > 10%: a wide distribution")
    [row] = group_rows(group)
    text = " ".join(_text(render_tab(row, "summary"), width=140).split())
    assert "processes 1–3 of 3: eager time spread IQR/median 19–37% > 10%" in text
    assert "process 2 of 3: eager time spread" not in text


def test_every_tab_shows_labels_not_internal_names():
    record = full_record("20261201-101010-aaaaaa", failed=False)
    for tab in tab_ids():
        text = _text(render_tab(record, tab))
        for name in INTERNAL_NAMES:  # as a label (the fake's values are made of field names)
            assert not re.search(rf"^\s*{name}\b", text, re.M), (tab, name)
    assert "largest absolute error" in _text(render_tab(record, "summary"))
    assert "measured with recompiles refused" in _text(render_tab(record, "graphs"))
    assert "SM clock, mean" in _text(render_tab(record, "telemetry"))
    assert "interpreter" in _text(render_tab(record, "environment"))


def test_one_interval_format_and_no_unrounded_figures():
    text = _text(render_details(full_record("20261201-101010-aaaaaa", failed=False)), width=140)
    assert re.search(r"\[\d+\.\d\d, \d+\.\d\d\]", text)  # the speedup's interval
    assert not re.search(r"\d–\d", text)  # the old [low–high] form
    assert not re.search(r"\d\.\d{6,}", text), re.search(r".*\d\.\d{6,}.*", text).group(0)


def test_the_graphs_tab_says_when_torch_counted_no_frames_and_recorded_no_skip_reason():
    record = cuda_run_record()
    record.diagnostics = Diagnostics(calls_captured=8, unique_graphs=1, frames_total=0, frames_ok=0,
                                     cudagraph_skips=1, cudagraph_skip_reasons=())
    text = _text(render_tab(record, "graphs"))
    assert "frames" in text and "not counted" in text and "0 of 0" not in text
    assert "1 counted, but this torch recorded no reason" in text


def test_the_kernels_tab_shows_both_sides_and_the_diff():
    record = full_record("20261201-101010-aaaaaa", failed=False)
    profile = record.profile
    text = _text(render_tab(record, "kernels"), width=120)
    assert "Top kernels, eager" in text and "Top kernels, compiled" in text
    assert profile.compiled.kernels[0].name in text and profile.diff[0].kernel in text
    record.profile = replace(profile, available=False, why="skipped (profile: false)")
    assert "no profile: skipped (profile: false)" in _text(render_tab(record, "kernels"))
    # the Host time tab says the same, not that the profile pass recorded no host split
    host = " ".join(_text(render_tab(record, "host"), width=100).split())
    assert "not known: no profile: skipped (profile: false)" in host and "recorded no host split" not in host


def test_the_kernels_tab_says_the_profiler_s_overhead_and_shows_the_measured_medians():
    """Issue 26: profiled times of 21.19 / 6.256 ms beside medians of 0.105 / 0.063 ms, with no word why."""
    record = full_record("20261201-101010-aaaaaa", failed=False)
    summary, profile = record.summary(), record.profile
    text = " ".join(_text(render_tab(record, "kernels"), width=80).split())
    eager, compiled = summary.eager.iter.median, summary.compiled.iter.median
    assert f"median, measured {fmt_ms(eager)} ms {fmt_ms(compiled)} ms {compiled / eager:.2f}×" in text
    assert "wall time, profiled" in text and "the profiler's overhead is in these times" in text
    factor = profile.eager.wall_ms_per_call / eager
    assert f"{factor:.3g}× eager" in text


def test_the_kernels_tab_does_not_advise_comparing_sides_the_profiler_weighed_unequally():
    """A new user's trial: 13.9× eager, 2× compiled, and the tab said "compare the sides with each other"."""
    from tui.app.components.details.why import UNEVEN_OVERHEAD

    record = full_record("20261201-101010-aaaaaa", failed=False)
    summary, profile = record.summary(), record.profile
    eager, compiled = summary.eager.iter.median, summary.compiled.iter.median
    for eager_factor, advice in ((1.5, "compare the sides with each other"),
                                 (13.9, "the profiler weighed the sides unequally, so compare each side's shares")):
        sides = {"eager": replace(profile.eager, wall_ms_per_call=eager * eager_factor),
                 "compiled": replace(profile.compiled, wall_ms_per_call=compiled * 2.0)}
        record.profile = replace(profile, **sides)
        text = " ".join(_text(render_tab(record, "kernels"), width=80).split())
        assert f"(profiled wall time / measured median: {eager_factor:.3g}× eager, 2× compiled): {advice}" in text
        assert (eager_factor / 2.0 > UNEVEN_OVERHEAD) == ("unequally" in text)


def test_a_cpu_run_s_summary_says_its_host_speedup_once():
    """On the CPU one loop times both clocks: no host columns that repeat the per-call ones."""
    text = _text(render_tab(timed_run("cpu", jitter=0.05), "summary"), width=100)
    assert "one loop times both" in text
    assert "(host)" not in text and "eager (perf_counter)" in text
    gpu = _text(render_tab(timed_run("gpu", host=(2.5, 1.5)), "summary"), width=100)
    assert "compiled (host)" in gpu and "one loop times both" not in gpu


def test_telemetry_and_environment_say_na_when_nothing_was_recorded():
    record = cuda_run_record()
    record.set_telemetry(RunTelemetry())
    record.env = Env()
    assert "nothing was sampled" in _text(render_tab(record, "telemetry"))
    assert "n/a" in _text(render_tab(record, "environment")) and "Options" in _text(render_tab(record, "environment"))


async def test_tabs_fit_80x24_and_switch_with_digits_and_arrows():
    app = _Host(full_record("20261201-101010-aaaaaa", failed=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DetailsScreen) and screen.active_tab == "summary"
        for tab in screen.query(Tab):  # every title whole and on screen
            assert tab.region.right <= 80 and tab.region.width >= len(str(tab.label)), tab.label
        assert len(screen.query(Tab)) == len(TABS)
        await pilot.press("4")
        assert screen.active_tab == "graphs"
        assert app.focused is screen.query_one("#details-graphs-body")  # arrow keys scroll the tab shown
        await pilot.press(*["right"] * (len(TABS) - 3))
        assert screen.active_tab == "summary"  # wraps around
        await pilot.press("left")
        assert screen.active_tab == TABS[-1].id
        await pilot.press("down")  # scrolls, does not switch
        assert screen.active_tab == TABS[-1].id


async def test_every_tab_has_its_digit_and_the_help_lists_each_with_its_key():
    """TABS is the one list: the n-th tab is on the key n, and the help names it after that key."""
    assert 1 < len(TABS) <= 9 and len(set(tab_ids())) == len(TABS)
    app = _Host(full_record("20261201-101010-aaaaaa", failed=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DetailsScreen)
        for number, tab in reversed(list(enumerate(TABS, 1))):
            await pilot.press(str(number))
            assert screen.active_tab == tab.id
        await app.push_screen(HelpScreen([]))
        await pilot.pause()
        help_text = " ".join(_text(app.screen.query_one("#help-content", Static).content, width=1000).split())
    listed = ", ".join(f"{n} {tab.help}" for n, tab in enumerate(TABS[:-1], 1)) + f" and {len(TABS)} {TABS[-1].help}."
    assert listed in help_text, help_text
    assert "1 Summary, 2 Kernels (what ran per call on each side" in help_text  # the words, as shipped


CODE = (
    "# AOT ID: ['0_inference']\nimport torch\n\n\ncpp_fused_add_mul_sin_0 = async_compile.cpp_pybinding(['float*'], "
    "'''\n"
    "extern \"C\" void kernel(float* out) {}\n''')\n\n\ndef call(args):\n    return (buf0, )\n"
)


def code_record():
    """A CPU run whose two graphs' code the record holds (as a fresh run's does before it is stored)."""
    from tui.engine.explain.artifacts import RunArtifacts, capped_code

    record = cuda_run_record("20250101-000000-code01")
    second = CODE.replace("0_inference", "1_inference").replace("add_mul_sin_0", "sub_1")
    record.artifacts = RunArtifacts(graphs=(capped_code(0, "0/0", CODE, 2**20), capped_code(1, "1/0", second, 2**20)))
    return record


async def test_the_code_tab_reads_the_code_in_a_thread_and_steps_through_graphs():
    from tui.app.components.details.code import CodeView

    app = _Host(code_record())
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        view = screen.query_one(CodeView)
        assert view.listing is None  # nothing read before the tab is shown
        await pilot.press("5")
        assert screen.active_tab == "code"
        for _ in range(200):
            if view.listing is not None:
                break
            await pilot.pause(0.01)
        header = _text(screen.query_one("#code-header").content)
        assert "graph 1 of 2: graph 0 (0/0, 0_inference)" in header and "1 kernel(s)" in header
        assert "cpp_fused_add_mul_sin_0" in _text(screen.tab_content("code"))
        await pilot.press("right_square_bracket")
        assert "graph 2 of 2: graph 1 (1/0, 1_inference)" in _text(screen.query_one("#code-header").content)
        assert "cpp_fused_sub_1" in _text(screen.tab_content("code"))
        await pilot.press("left_square_bracket")
        assert "graph 1 of 2" in _text(screen.query_one("#code-header").content)


def test_render_details_carries_the_code_and_says_why_when_there_is_none():
    assert "cpp_fused_sub_1" in _text(render_details(code_record()), width=140)
    record = cuda_run_record()
    assert "no generated code was kept" in _text(render_tab(record, "code"))


async def test_the_summary_gives_the_command_that_reproduces_the_run_and_y_copies_it():
    from tui.cli.parser import build_parser

    record = cuda_run_record()
    text = _text(render_tab(record, "summary"), width=200)
    line = next(line for line in text.splitlines() if line.startswith("compile-lab run"))
    assert "--mode reduce-overhead" in line and "--device cuda" in line
    parsed = build_parser().parse_args(line.split()[1:])
    assert parsed.mode == "reduce-overhead"
    app = _Host(record)
    async with app.run_test(size=(80, 24)) as pilot:
        copied = []
        app.copy_to_clipboard = copied.append
        await pilot.press("y")
        assert copied == [line.strip()]


def test_a_pooled_run_says_its_host_its_cores_and_how_many_ran_beside_it():
    record = full_record("20261201-101010-pooled", failed=False)
    record.env = replace(record.env, node="gpu-box-7", cpu_affinity="8-15")
    record.concurrent_runs = 0
    environment = _text(render_tab(record, "environment"))
    assert re.search(r"^host\s+gpu-box-7\s*$", environment, re.M)
    assert re.search(r"^CPU cores pinned\s+8-15\s*$", environment, re.M)
    assert "ran beside" not in _text(render_tab(record, "summary"), width=200)  # it ran alone
    record.concurrent_runs = 3
    summary = _text(render_tab(record, "summary"), width=200)
    assert re.search(r"^beside\s+ran beside 3 other runs of this session, each on its own GPU", summary, re.M)


async def test_at_80x24_the_details_footer_fits_whole(make_app):
    """The app's keys overflowed the details footer at 80 columns: it ended in a stray letter ("^p paletteo")."""
    from terminal_model import TerminalModel
    from textual.geometry import Region

    from app_helpers import wait_until

    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        terminal = TerminalModel(app)
        app.inject_record(full_record("20261201-101010-aaaaaa", failed=False))
        await wait_until(pilot, lambda: app.table.row_count == 1, what="the row")
        app.table.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailsScreen), what="the details")
        await pilot.pause()
        footer = terminal.text(Region(0, 23, 80, 1)).rstrip()
        assert footer.endswith("^p palette"), footer
        for words in ("←→ Tab", "esc Back", "r Reload", "y Copy command", "f1 Help"):
            assert words in footer, footer
        await pilot.press("h")  # a key off the footer still works here
        await wait_until(pilot, lambda: not app.main_screen.show_history, what="the history hidden")


async def test_at_80x24_the_main_footer_fits_whole(make_app):
    """At 80 columns the main screen's footer ended in a bare key ("h History s ▏^p palette"): every key it
    shows keeps its words."""
    from app_helpers import footer_whole

    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        footer = await footer_whole(pilot, app)
        assert len(footer.split("▏")[0].split()) >= 16  # eight keys, each with its word


def test_the_title_names_the_tune_and_the_inductor_options_a_run_differs_by():
    record = full_record("20261201-101010-aaaaaa", failed=False)
    record.options = replace(record.options, inductor_options={"freezing": True, "cpp.simdlen": 256})
    text = _text(render_tab(record, "summary"))
    assert "run 20261201-101010-aaaaaa  device cuda:0\ntune 20261201-101000-70e001 (confirmation)\n" in text
    assert "inductor options  cpp.simdlen=256, freezing=True" in text
    record.tune_stage = None  # a line written before runs said their stage
    assert "tune 20261201-101000-70e001\n" in _text(render_tab(record, "summary"))
    record.tune_id, record.options = None, replace(record.options, inductor_options={})
    text = _text(render_tab(record, "summary"))
    assert "tune" not in "".join(text.splitlines()[1:3]) and "inductor options" not in text


@pytest.mark.parametrize("stage", ["screening", "stage 2", "confirmation", None])
async def test_at_80x24_a_tune_runs_details_say_its_tune_and_stage_on_one_line(make_app, stage):
    """A candidate's screening run and its confirmation runs share their options: the details' head says which
    part of the search ran the one shown, beside the tune's id, whole within 80 columns; a run outside a tune
    shows no tune line."""
    from terminal_model import TerminalModel
    from textual.geometry import Region

    from app_helpers import wait_until

    record = full_record("20261201-101010-aaaaaa", failed=False)
    record.tune_stage = stage
    if stage is None:
        record.tune_id = None
    app = make_app(load_history=False)
    async with app.run_test(size=(80, 24)) as pilot:
        terminal = TerminalModel(app)
        app.inject_record(record)
        await wait_until(pilot, lambda: app.table.row_count == 1, what="the row")
        app.table.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailsScreen), what="the details")
        await pilot.pause()
        head = [line.strip() for line in terminal.text(Region(0, 0, 80, 8)).splitlines()]
    assert "run 20261201-101010-aaaaaa  device cuda:0" in head, head
    tune_lines = [line for line in head if line.startswith("tune ")]
    if stage is None:
        assert tune_lines == [], head
    else:
        assert tune_lines == [f"tune 20261201-101000-70e001 ({stage})"], head


def test_the_details_of_a_cancelled_run_say_cancelled_once():
    from rich.console import Group

    from tui.app.components.details.summary import error
    from tui.engine.options import RunOptions
    from tui.engine.store.results import RunRecord

    record = RunRecord.new(RunOptions(workload="matmul", params={"n": 64}).validated())
    record.fail("cancelled", "cancelled")
    text = _text(Group(*error(record)), width=80)
    assert "cancelled: cancelled" not in text and "Cancelled" in text and "Error" not in text
    assert "cancelled before it finished" in text  # under its heading the word alone said nothing more
    record.fail("cancelled", "by the user (x)")
    assert "cancelled: by the user (x)" in _text(Group(*error(record)), width=80)


@pytest.mark.parametrize("cuda", [False, True], ids=["cpu-run", "cuda-run"])
def test_the_kernels_tab_counts_a_kernel_per_call_not_over_the_profiled_calls(cuda):
    """A kernel run 162 times a call, over 5 profiled calls (810 runs in the profile): the tab says 162 under
    "per call", on the CPU and the GPU alike, and never the 810 of the profile."""
    calls = 5
    device = "cuda" if cuda else "cpu"
    step = [RawEvent("aten::mul", device=device, self_us=1.0, total_us=1.0, top_op=not cuda)] * 162
    step += [RawEvent("aten::sin", device=device, self_us=50.0, total_us=50.0, top_op=not cuda)]
    side = side_profile(step * calls, calls, cuda=cuda)
    record = cuda_run_record() if cuda else timed_run("cpu", jitter=0.05)
    record.profile = Profile(available=True, activities=("cpu", "cuda") if cuda else ("cpu",), calls=calls,
                             eager=side, compiled=side)
    text = _text(render_tab(record, "kernels"), width=80)
    assert re.search(r"^ *kernels +163\.0 +163\.0 ", text, re.M)
    assert re.search(r"^ *kernel +per call +profiled ms", text, re.M)
    assert re.search(r"^ *aten::mul +162 +0\.1620 +", text, re.M)
    assert re.search(r"^ *aten::sin +1 +0\.0500 +", text, re.M)
    assert "810" not in text and f"{calls} profiled calls" in " ".join(text.split())


def test_a_long_warning_folds_under_its_own_text_at_80_columns():
    record = full_record("20261201-101010-aaaaaa", failed=False)
    record.warnings[:] = ["stall: one eager iteration took 20.09 ms, 527x its median (0.03808 ms): the worker was "
                          "paused or the machine was busy; re-run"]
    lines = _text(render_tab(record, "summary")).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  ! stall:"))
    assert lines[at + 1].startswith("    ") and lines[at + 1].strip().endswith("busy; re-run"), lines[at:at + 2]


_PRECISION = dict(tf32_matmul=False, tf32_cudnn=True, float32_matmul_precision="highest", fp32_precision_matmul="none",
                  fp32_precision_cudnn="none", fp32_precision_mkldnn_matmul="bf16", fp32_precision_mkldnn_conv="none")


@pytest.mark.parametrize("device", ["cpu", "cuda:0"])
async def test_the_environment_tab_shows_the_precision_settings_of_the_runs_device(device):
    """At 80x24: a CPU run shows the float32 matmul precision and oneDNN's settings, not TF32 or cuDNN (they change
    nothing on a CPU); a CUDA run the TF32 and cuDNN ones, not oneDNN's. ``none`` of torch's new API reads "not set"."""
    record = timed_run("20261201-101010-env" + device[:3])
    record.env = replace(record.env, device=device, **_PRECISION)
    app = _Host(record)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.screen.action_show_tab("environment")
        tab = app.screen.query_one("#details-environment", Static)
        await pilot.pause()
        text = "\n".join(tab.render_line(y).text.rstrip() for y in range(tab.size.height))
    assert re.search(r"^float32 matmul precision +highest$", text, re.M), text
    cpu = (r"^oneDNN fp32, matmul +bf16$", r"^oneDNN fp32, conv +not set$")
    cuda = (r"^TF32 matmuls +no$", r"^TF32 cuDNN +yes$", r"^fp32 precision, matmul +not set$",
            r"^fp32 precision, cuDNN +not set$")
    shown, hidden = (cpu, cuda) if device == "cpu" else (cuda, cpu)
    for line in shown:
        assert re.search(line, text, re.M), (line, text)
    for line in hidden:
        assert not re.search(line.split(" +")[0], text, re.M), (line, text)


def test_the_speedup_line_agrees_with_an_inconclusive_or_no_change_verdict():
    # 0.96x [0.95, 0.983]: the interval excludes 1 but its high end lies in the 2% band, so the verdict reads
    # inconclusive; the line beside the speedup read "significant: compiled is slower" under it
    from tui.app.components.details.summary import _significance
    from tui.engine.measure.summary import RunSummary

    def line(verdict: str, low: float, high: float) -> str:
        return _significance(RunSummary(speedup=0.96, speedup_ci_low=low, speedup_ci_high=high, significant=True,
                                        verdict=verdict), 0.02)

    assert line("inconclusive", 0.95, 0.983) == ("the interval excludes 1 but reaches into the ±2% band: not shown "
                                                 "slower by more than 2%")
    assert line("no change", 0.985, 0.995) == "the interval excludes 1 but lies inside the ±2% band: not slower by " \
                                              "more than 2%"
    assert line("slower", 0.94, 0.97) == "significant: compiled is slower"


def test_the_compile_phases_leave_out_a_phase_that_did_not_run():
    """A CPU run listed ``triton 0.00 s`` among its compile phases: the CPU runs no triton."""
    from tui.engine.payloads import CompileTimes

    record = full_record("20250101-000000-phases", failed=False)
    times = CompileTimes(dynamo=1.8, aot_autograd=1.73, triton=0.0)
    record.diagnostics = replace(record.diagnostics, compile_times_s=times)
    text = " ".join(_text(render_tab(record, "graphs"), width=200).split())
    assert "compile time by phase dynamo 1.80 s, AOT autograd 1.73 s (each includes the next)" in text
    assert "triton" not in text and "kernel compile" not in text


@pytest.mark.parametrize(("device", "label"), [("cpu", "kernel compile (C++) 1.02 s"),
                                                ("cuda", "kernel compile (triton) 1.02 s")])
def test_the_kernels_compile_phase_is_named_for_the_device(device, label):
    """A new user's CPU run read "triton 1.02 s" where ``compile-lab env`` said triton is not installed: torch
    counts its wait for the C++ kernels' compile under triton's name."""
    from tui.engine.payloads import CompileTimes

    record = full_record("20250101-000000-kernel", failed=False)
    record.options = replace(record.options, device=device)
    times = CompileTimes(dynamo=3.5, inductor_code_gen=1.92, triton=1.02)
    record.diagnostics = replace(record.diagnostics, compile_times_s=times)
    text = " ".join(_text(render_tab(record, "graphs"), width=200).split())
    assert f"inductor code generation 1.92 s, {label} (each" in text
