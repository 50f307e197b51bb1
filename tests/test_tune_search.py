"""The tuner's pure parts: the race on constructed intervals, the space, the outcome, the code it prints."""

from __future__ import annotations

import dataclasses

import pytest

from tui.engine.options import RunOptions
from tui.engine.tune.answer import CONFIRMED, NOTHING_BEATS, UNCONFIRMED, Against, Confirmation, outcome_of
from tui.engine.tune.code import compile_call, config_form
from tui.engine.tune.durations import DurationModel
from tui.engine.tune.objective import Score, amortized
from tui.engine.tune.search import (
    Standing, ahead_of_default, clearly_worse, contenders, halve, judge_stage, leader, ranked, stage_plan, winner,
)  # fmt: skip
from tui.engine.tune.space import KNOBS, Candidate, SpaceError, candidates, combine, option_keys, parse_space

DEFAULT = Candidate()


def _c(*settings) -> Candidate:
    return Candidate(tuple(settings))


def _s(candidate: Candidate, value, low=None, high=None, out=None, peak=None, compile_s=None) -> Standing:
    return Standing(candidate, Score(value, low, high, processes=1, compile_s=compile_s, peak_mb=peak, out=out),
                    stage=0)


# ----- the race -------------------------------------------------------------------------------


def test_an_interval_wholly_below_the_incumbents_is_clearly_worse_and_an_overlapping_one_is_not():
    incumbent = Score(2.0, 1.9, 2.1)
    assert clearly_worse(Score(1.5, 1.4, 1.89), incumbent)
    assert not clearly_worse(Score(1.5, 1.4, 1.95), incumbent)  # overlaps: kept, however low its point
    assert not clearly_worse(Score(1.5, None, None), incumbent)  # no interval: no claim
    assert not clearly_worse(Score(1.5, 1.4, 1.89), incumbent, threshold=0.02)  # apart by under 2%: kept
    assert clearly_worse(Score(1.5, 1.4, 1.85), incumbent, threshold=0.02)


def test_judge_stage_drops_the_clearly_worse_and_puts_out_the_failed_with_their_reasons():
    fast, slow, broken = _c(("freezing", True)), _c(("mode", "max-autotune-no-cudagraphs")), _c(("cpp_wrapper", True))
    judged = judge_stage([_s(DEFAULT, 2.0, 1.95, 2.05), _s(fast, 2.8, 2.7, 2.9), _s(slow, 1.2, 1.1, 1.3),
                          _s(broken, None, out="failed: compile failed")])
    gone = {s.name: s.gone for s in judged}
    assert gone["freezing=True"] is None
    assert gone["default"].startswith("dropped: below freezing=True")
    assert gone["max-autotune-no-cudagraphs"].startswith("dropped: below freezing=True")
    assert gone["cpp_wrapper=True"] == "out: failed: compile failed"


def test_halving_keeps_the_better_half_and_at_least_two():
    field = [_s(_c(("k", i)), 1.0 + i / 10, 0.5, 3.0) for i in range(5)]
    kept = [s.name for s in halve(field, 1) if s.alive]
    assert set(kept) == {"k=4", "k=3", "k=2"}
    cut = [s.gone for s in halve(field, 1) if not s.alive]
    assert cut == ["cut: ranked 5 of 5 after stage 2", "cut: ranked 4 of 5 after stage 2"]
    two = [s for s in halve(field[:2], 1) if s.alive]
    assert len(two) == 2


def test_a_cut_after_the_screening_names_it_as_the_progress_lines_do():
    # the progress says "screening:", then "stage 2:": a cut after the screening read "after stage 1", a stage
    # the output never names
    field = [_s(_c(("k", i)), 1.0 + i / 10, 0.5, 3.0) for i in range(5)]
    cut = [s.gone for s in halve(field, 0) if not s.alive]
    assert cut == ["cut: ranked 5 of 5 after the screening", "cut: ranked 4 of 5 after the screening"]


def test_each_stage_doubles_the_iterations():
    assert [stage_plan(i, 50).iters for i in range(3)] == [50, 100, 200]


def test_the_winner_breaks_a_near_tie_by_memory_then_by_fewer_settings():
    a, b = _c(("freezing", True)), _c(("freezing", True), ("aggressive_fusion", True))
    assert winner([_s(a, 2.00, peak=100.0), _s(b, 2.01, peak=50.0)], 0.02).name == b.name  # memory first
    assert winner([_s(a, 2.00), _s(b, 2.01)], 0.02).name == a.name  # then the simpler
    assert winner([_s(a, 2.00), _s(b, 2.20)], 0.02).name == b.name  # beyond the threshold: the faster
    assert winner([_s(a, None, out="x")], 0.02) is None
    # Peaks within 1 MiB and 1%: equal memory, so the simpler wins (a kilobyte picked the winner before)
    assert winner([_s(a, 2.00, peak=47.976), _s(b, 2.01, peak=47.975)], 0.02).name == a.name
    assert winner([_s(a, 2.00, peak=100.0), _s(b, 2.01, peak=101.9)], 0.02).name == a.name
    assert winner([_s(a, 2.00, peak=42.702), _s(b, 2.01, peak=34.479)], 0.02).name == b.name
    assert winner([_s(DEFAULT, 1.24, peak=42.7), _s(_c(("mode", "reduce-overhead")), 1.26, peak=34.5)],
                  0.02).name == "reduce-overhead"


def test_the_contenders_are_the_challengers_within_the_threshold_of_the_best_one_best_first():
    a, b, c, d = _c(("mode", "max-autotune")), _c(("freezing", True)), _c(("dynamic", False)), _c(("k", 1))
    race = [_s(DEFAULT, 2.00), _s(b, 2.005), _s(a, 2.02), _s(c, 1.95), _s(d, 2.01, out="x")]
    race[-1] = dataclasses.replace(race[-1], gone="out: x")
    assert [s.name for s in contenders(race, 0.02)] == [a.name, b.name]  # 1.95 is more than 2% below 2.02
    assert [s.name for s in contenders(race, 0.04)] == [a.name, b.name, c.name]
    assert contenders([_s(DEFAULT, 2.0)], 0.02) == []
    # cut by halving: still not told apart; dropped as clearly worse: out
    cut, dropped = _c(("epilogue_fusion", False)), _c(("shape_padding", False))
    race += [dataclasses.replace(_s(cut, 2.01), gone="cut: ranked 3 of 3 after stage 2"),
             dataclasses.replace(_s(dropped, 2.01), gone="dropped: below max-autotune")]
    assert [s.name for s in contenders(race, 0.02)] == [a.name, b.name, cut.name]


def test_the_winner_breaks_a_near_tie_of_equal_memory_and_settings_by_the_shorter_compile():
    """The transformer block on the H200 (BENCHMARKS §30): seven candidates of one setting each at 1.01x over eager,
    and the race's winner was cpp_wrapper=True, the best point estimate by a hair, with a 53 s compile."""
    wrapper, graph, fusion = _c(("cpp_wrapper", True)), _c(("fullgraph", True)), _c(("aggressive_fusion", True))
    race = [_s(wrapper, 1.012, compile_s=53.3), _s(graph, 1.010, compile_s=1.1), _s(fusion, 1.008, compile_s=2.7)]
    assert winner(race, 0.02).name == graph.name  # 2.7 s is past 1.1 s by more than 25% and 1 s (2.375 s)
    assert winner([_s(graph, 1.010, compile_s=1.1), _s(fusion, 1.012, compile_s=1.3)], 0.02).name == fusion.name
    assert winner([_s(wrapper, 1.012, compile_s=53.3), _s(graph, 1.010)], 0.02).name == wrapper.name  # unmeasured
    assert winner([_s(wrapper, 1.10, compile_s=53.3), _s(graph, 1.01, compile_s=1.1)], 0.02).name == wrapper.name
    # memory and the settings come first
    assert winner([_s(wrapper, 1.01, compile_s=53.3, peak=100.0), _s(graph, 1.01, compile_s=1.1, peak=200.0)],
                  0.02).name == wrapper.name
    assert winner([_s(_c(("freezing", True), ("fullgraph", True)), 1.01, compile_s=1.0), _s(wrapper, 1.01,
                  compile_s=53.3)], 0.02).name == wrapper.name


def test_the_tunes_memory_is_the_compiled_sides_peak():
    """The run's peak is the larger side's, eager's for the seed CNN (47.98 MiB in every candidate's run)."""
    from tui.engine.payloads import Memory
    from tui.engine.status import RunStatus
    from tui.engine.store.results import RunRecord
    from tui.engine.tune.objective import Objective, score

    records = []
    for eager, compiled in ((47.976, 34.479), (47.977, 35.0)):
        record = RunRecord.new(RunOptions(device="cuda"))
        record.status, record.memory = RunStatus.DONE, Memory(eager_peak_mb=eager, compiled_peak_mb=compiled)
        records.append(record)
    assert score(records, Objective()).peak_mb == 35.0


def test_ahead_of_default_needs_more_than_the_threshold():
    field = [_s(DEFAULT, 2.0), _s(_c(("a", 1)), 2.03), _s(_c(("b", 1)), 2.05)]
    assert [s.name for s in ahead_of_default(field, 0.02)] == ["b=1"]
    assert leader(field).name == "b=1"


# ----- the outcome ----------------------------------------------------------------------------


def _confirmation(verdict: str, amortized_gain=None) -> Confirmation:
    return Confirmation(vs_default=Against(1.2, 1.1, 1.3, verdict), amortized_gain=amortized_gain)


def test_the_outcome_follows_the_confirmations_verdict():
    best = _s(_c(("freezing", True)), 2.5)
    assert outcome_of(best, _confirmation("faster"), None) == CONFIRMED
    assert outcome_of(best, _confirmation("no change"), None) == NOTHING_BEATS
    assert outcome_of(best, _confirmation("slower"), None) == NOTHING_BEATS
    assert outcome_of(best, _confirmation("noisy"), None) == UNCONFIRMED
    assert outcome_of(best, _confirmation("inconclusive"), None) == UNCONFIRMED
    # inconclusive, but its high end rules out a gain of more than the threshold: nothing beats the default
    within = Confirmation(vs_default=Against(0.99, 0.92, 1.01, "inconclusive"))
    assert outcome_of(best, within, None) == NOTHING_BEATS
    assert outcome_of(best, within, None, incomplete="the budget ran out") == UNCONFIRMED
    assert outcome_of(best, Confirmation(vs_default=Against(0.99, 0.92, 1.03, "inconclusive")), None) == UNCONFIRMED
    assert outcome_of(best, Confirmation(vs_default=Against(0.99, 0.92, 1.01, "noisy")), None) == UNCONFIRMED
    # with --calls the compile time's charge must leave it ahead
    assert outcome_of(best, _confirmation("faster", amortized_gain=0.9), None) == NOTHING_BEATS
    assert outcome_of(best, _confirmation("faster", amortized_gain=1.01), None) == NOTHING_BEATS  # within 2%
    assert outcome_of(best, _confirmation("faster", amortized_gain=1.05), None) == CONFIRMED
    assert outcome_of(best, None, "Ctrl-C") == UNCONFIRMED
    assert outcome_of(_s(DEFAULT, 2.0), None, None) == NOTHING_BEATS
    # a candidate never screened: the default's lead, or a confirmation's no change, claims nothing
    assert outcome_of(_s(DEFAULT, 2.0), None, None, incomplete="the budget ran out") == UNCONFIRMED
    assert outcome_of(best, _confirmation("no change"), None, incomplete="the budget ran out") == UNCONFIRMED
    assert outcome_of(best, _confirmation("faster"), None, incomplete="the budget ran out") == CONFIRMED


def test_amortized_charges_the_compile_time_over_the_calls():
    # eager 2 ms, compiled 1 ms (2x), compile 1 s over 1000 calls: 1 ms more a call -> 1x
    assert amortized(2.0, 2.0, 1.0, 1000) == pytest.approx(1.0)
    assert amortized(2.0, 2.0, 1.0, None) == 2.0


# ----- the space ------------------------------------------------------------------------------


def test_parse_space_takes_groups_and_names_and_refuses_the_rest_in_one_line():
    assert parse_space("modes") == ("mode",)
    assert parse_space("modes,freezing") == ("mode", "freezing")
    assert set(parse_space(None)) == set(KNOBS)
    with pytest.raises(SpaceError, match=r"'fast' is not allowed \(allowed: modes, axes, options, all"):
        parse_space("fast")
    for empty in ("", " , "):  # --space "" says nothing, and is refused rather than taken as all
        with pytest.raises(SpaceError, match=r"^is empty \(allowed: a comma list of modes, axes"):
            parse_space(empty)


def test_candidates_skip_what_the_device_torch_or_training_rule_out_with_notes():
    found, notes = candidates(("mode", "layout_optimization", "freezing", "cpp_wrapper", "cpp.simdlen"), "cpu",
                              train=True, defaults={"cpp.simdlen": 256}, missing=("cpp_wrapper",))
    assert [c.name for c in found] == ["default", "max-autotune-no-cudagraphs"]
    assert notes == ["left out on cpu (they apply to cuda only): layout_optimization",
                     "freezing: left out (a forward pass only, not --train)",
                     "cpp_wrapper: left out (this torch has no cpp_wrapper)",
                     "cpp.simdlen=256: left out (this torch's default already)"]
    cuda, _ = candidates(("mode",), "cuda:0", train=False)
    assert [c.name for c in cuda] == ["default", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune"]


def test_every_catalog_option_is_one_the_probe_asks_about():
    keys = option_keys()
    assert all(k.name in keys for k in KNOBS.values() if k.kind == "option")
    assert "triton.cudagraphs" in keys and "max_autotune" in keys


def test_a_mode_with_options_becomes_the_options_it_stands_for():
    base = RunOptions(workload="cnn", device="cuda")
    alone = _c(("mode", "reduce-overhead")).apply(base)
    assert (alone.mode, alone.inductor_options) == ("reduce-overhead", {})
    pinned = _c(("mode", "reduce-overhead")).apply(base, {"layout_optimization": False})
    assert (pinned.mode, pinned.inductor_options) == ("default", {"triton.cudagraphs": True,
                                                                  "layout_optimization": False})
    needs = _c(("max_autotune_gemm_backends", "ATEN,TRITON")).apply(base)
    assert needs.inductor_options == {"max_autotune": True, "max_autotune_gemm_backends": "ATEN,TRITON"}
    axes = _c(("fullgraph", True), ("dynamic", False)).apply(base)
    assert (axes.fullgraph, axes.dynamic, axes.inductor_options) == (True, False, {})


def test_a_pinned_option_that_makes_a_candidate_another_leaves_it_out():
    from tui.engine.tune.space import distinct

    found = [DEFAULT, _c(("mode", "reduce-overhead")), _c(("layout_optimization", False))]
    base = RunOptions(device="cuda", inductor_options={"triton.cudagraphs": False})
    kept, notes = distinct(found, base, base.inductor_options)
    assert [c.name for c in kept] == ["default", "layout_optimization=False"]
    assert notes == ["reduce-overhead: left out (the same configuration as default with the pinned options)"]


def test_combine_merges_settings_and_turns_two_modes_into_options():
    combined = combine([_c(("mode", "reduce-overhead")), _c(("layout_optimization", False))])
    assert combined.name == "reduce-overhead layout_optimization=False"
    two_modes = combine([_c(("mode", "reduce-overhead")), _c(("mode", "max-autotune-no-cudagraphs"))])
    assert dict(two_modes.settings) == {"triton.cudagraphs": True, "max_autotune": True,
                                        "coordinate_descent_tuning": True}
    assert combine([_c(("a", 1)), _c(("a", 2))]) is None


# ----- the code it prints ---------------------------------------------------------------------


@pytest.mark.parametrize("candidate", [
    DEFAULT, _c(("mode", "max-autotune")), _c(("fullgraph", True), ("dynamic", False)),
    _c(("mode", "reduce-overhead"), ("layout_optimization", False), ("cpp.simdlen", 256)),
    _c(("max_autotune_gemm_backends", "ATEN,TRITON")),
])
def test_the_printed_code_is_valid_python_in_both_forms(candidate):
    options = candidate.apply(RunOptions(workload="cnn", device="cuda"))
    call, config = compile_call(options), config_form(options)
    compile(call, "<call>", "exec")
    compile(config, "<config>", "exec")
    if options.mode != "default":
        assert f"mode={options.mode!r}" in call and "mode=" not in config
    for key in options.inductor_options:
        assert f"torch._inductor.config.{key} = " in config and repr(key) in call


def test_the_config_form_spells_out_a_mode():
    options = _c(("mode", "reduce-overhead")).apply(RunOptions(device="cuda"))
    config = config_form(options).splitlines()
    assert config[2:] == ["# the settings of mode 'reduce-overhead' (torch's own list for it)",
                          "torch._inductor.config.triton.cudagraphs = True", "compiled = torch.compile(model)"]
    compile("\n".join(config), "<config form>", "exec")  # the comment keeps it valid Python
    with_options = RunOptions(device="cuda", mode="reduce-overhead", inductor_options={"freezing": True})
    assert config_form(with_options).splitlines()[2] == ("# the settings of mode 'reduce-overhead' (torch's own list "
                                                         "for it), then the options")


# ----- the budget's estimate ------------------------------------------------------------------


def test_the_duration_model_scales_only_the_measuring_with_the_iterations():
    model = DurationModel()
    assert model.estimate(50) is None
    model.add(50, 20.0, measured_s=4.0)  # 16 s fixed, 4 s measuring
    assert model.estimate(50) == pytest.approx(20.0)
    assert model.estimate(100) == pytest.approx(24.0)


def test_the_duration_model_reads_a_candidates_own_runs_and_every_run_for_one_not_run_yet():
    model = DurationModel()
    model.add(50, 10.0, name="default")
    model.add(50, 50.0, name="max-autotune")
    assert model.estimate(50, "max-autotune") == pytest.approx(50.0)
    assert model.estimate(50, "default") == pytest.approx(10.0)
    assert model.estimate(50, "freezing=True") == pytest.approx(30.0)  # not run yet: every run's mean
    assert model.estimate(50) == pytest.approx(30.0)


def test_the_first_runs_one_time_costs_do_not_price_its_candidate_once_later_runs_are_quicker():
    # The default compile ran first, cold (a worker without a spare, an empty compile cache): 20 s; the later
    # candidates took 6-8 s. The confirmation's default runs are warm: they count at the later runs' mean.
    model = DurationModel()
    model.add(50, 20.0, name="default")
    assert model.estimate(50, "default") == pytest.approx(20.0)  # nothing else known yet
    model.add(50, 6.0, name="freezing=True")
    model.add(50, 8.0, name="cpp_wrapper=True")
    assert model.estimate(50, "default") == pytest.approx(7.0)
    assert model.estimate(50, "cpp_wrapper=True") == pytest.approx(8.0)  # its own run, as before
    model.add(50, 9.0, name="default")  # once the default ran again, its later runs say it
    assert model.estimate(50, "default") == pytest.approx(9.0)


# ----- the tune id in a stored run ------------------------------------------------------------


def test_a_record_keeps_its_tune_id_through_json_and_an_older_line_without_one_loads():
    from tui.engine.store.results import RunRecord

    record = RunRecord("20261204-000000-aaaaaa", RunOptions())
    record.tune_id = "20261204-000000-7e5701"
    data = record.to_json()
    again, problems = RunRecord.decode(data)
    assert again.tune_id == "20261204-000000-7e5701" and problems == []
    del data["tune_id"]
    old, problems = RunRecord.decode(data)
    assert old.tune_id is None and problems == []


def test_the_answer_leaves_out_a_config_form_that_would_only_repeat_the_call():
    from tui.engine.tune.answer import CONFIRMED, TuneResult
    from tui.engine.tune.search import Standing
    from tui.present.tune_answer import code_lines

    def lines(candidate):
        options = candidate.apply(RunOptions(workload="pointwise", device="cpu"))
        return code_lines(TuneResult("t", CONFIRMED, Standing(candidate), options, None, ()))

    plain = lines(_c(("fullgraph", True)))  # no inductor setting: "import torch._inductor.config" and the same call
    assert plain == ["", "# as torch.compile's arguments:", "compiled = torch.compile(model, fullgraph=True)"]
    spelled = lines(_c(("freezing", True)))
    assert "# or as torch._inductor.config settings:" in spelled
    assert "torch._inductor.config.freezing = True" in spelled


def test_the_plan_says_which_options_every_candidate_has_pinned():
    """``--option cpp_wrapper=true`` put it in every run, the default compile's too, and nothing said so: the
    answer's "the default compile" read as plain torch.compile."""
    from tui.engine.options import RunOptions
    from tui.engine.runner.torch_probe import TorchOptions
    from tui.engine.tune.request import plan_search

    base = RunOptions(workload="pointwise", device="cpu", inductor_options={"cpp_wrapper": True}).validated()
    plan = plan_search(base, ("mode", "freezing"), TorchOptions(torch="2.13.0"))
    assert plan.notes[-1] == ("pinned in every candidate, the default compile's included: cpp_wrapper=True; \"the "
                              "default compile\" below is torch.compile with them")
    plain = plan_search(RunOptions(workload="pointwise", device="cpu").validated(), ("freezing",),
                        TorchOptions(torch="2.13.0"))
    assert not [n for n in plain.notes if "pinned" in n]


def test_ranked_lists_the_live_by_figure_then_the_gone_by_how_far_they_got_then_by_figure():
    # a new user read a CLI answer whose dropped candidates came in the race's order (freezing 1.48x after
    # dynamic=False 1.26x): the gone ones are ordered too, those that ran furthest first
    live = [_s(_c(("k", 1)), 1.70), _s(DEFAULT, 1.73)]
    dropped = [dataclasses.replace(_s(_c(("k", 2)), 1.26), gone="dropped"),
               dataclasses.replace(_s(_c(("k", 3)), 1.48), gone="dropped"),
               dataclasses.replace(_s(_c(("k", 4)), None, out="failed"), gone="out: failed")]
    cut_later = dataclasses.replace(_s(_c(("k", 5)), 1.60), gone="cut: ranked 3 of 3 after stage 2", stage=1)
    order = [s.name for s in ranked([*dropped, live[0], cut_later, live[1]])]
    assert order == ["default", "k=1", "k=5", "k=3", "k=2", "k=4"]


def test_the_cli_progress_line_says_process_or_processes():
    import io

    from rich.console import Console

    from tui.cli.tune_render import TuneLines

    console = Console(width=200, file=io.StringIO(), record=True)
    lines = TuneLines(console)
    lines.candidate_scored(_s(DEFAULT, 1.73, 1.70, 1.75))
    lines.candidate_scored(dataclasses.replace(_s(DEFAULT, 1.73, 1.70, 1.75),
                                               score=Score(1.73, 1.70, 1.75, processes=2)))
    assert console.export_text().splitlines() == ["  default: 1.73× [1.70, 1.75] over eager (1 process)",
                                                  "  default: 1.73× [1.70, 1.75] over eager (2 processes)"]


def test_a_candidate_that_autotunes_runs_with_a_cold_compile_cache_and_no_other_does():
    """Each fresh autotuning picks its own kernels (BENCHMARKS §22): a warm cache would hand every process of the
    search the first one's picks, and its compile time would be a cache hit's."""
    base = RunOptions(device="cuda")
    for candidate in (_c(("mode", "max-autotune")), _c(("mode", "max-autotune-no-cudagraphs")),
                      _c(("max_autotune_gemm_backends", "ATEN,TRITON")),
                      _c(("mode", "reduce-overhead"), ("max_autotune_gemm_backends", "ATEN,TRITON"))):
        assert candidate.apply(base).cold_compile, candidate.name
    for candidate in (_c(), _c(("mode", "reduce-overhead")), _c(("freezing", True)),
                      _c(("coordinate_descent_tuning", True)), _c(("layout_optimization", False))):
        assert not candidate.apply(base).cold_compile, candidate.name
    probed = {"max-autotune": {"triton.cudagraphs": True}}  # a torch whose mode sets no autotuning
    assert not _c(("mode", "max-autotune")).apply(base, modes=probed).cold_compile
    assert _c().apply(base, pinned={"max_autotune": True}).cold_compile  # --option max_autotune=True
