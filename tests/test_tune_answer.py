"""The tune's answer as text (:mod:`tui.present.tune_answer`): what it says of candidates listed above it."""

from __future__ import annotations

import dataclasses
import io

import pytest

from tui.engine.options import RunOptions
from tui.engine.tune.answer import CONFIRMED, NOTHING_BEATS, Against, TuneResult, settled
from tui.engine.tune.objective import Score
from tui.engine.tune.search import Standing
from tui.engine.tune.space import Candidate
from tui.present.tune_answer import answer_text, headline, shows_screened, unseparated_line

DEFAULT = Standing(Candidate(), Score(3.01, 2.95, 3.07, 1), stage=0, screened=Score(3.01, 2.95, 3.07, 1))
WRAPPER = Candidate((("cpp_wrapper", True),))
AUTOTUNE = Candidate((("mode", "max-autotune-no-cudagraphs"),))


def _stopped(challenger: Score, outcome: str = "unconfirmed", winner: Standing = DEFAULT) -> TuneResult:
    standings = (Standing(WRAPPER, challenger, stage=0, screened=challenger), DEFAULT)
    return TuneResult(tune_id="01JTUNE", outcome=outcome, winner=winner, winner_options=None, confirmation=None,
                      standings=standings, stopped="stopped by the user")


def test_a_challenger_listed_above_the_default_answer_is_said_to_be_too_close_to_tell_apart():
    result = _stopped(Score(3.04, 2.98, 3.10, 1))
    lines = answer_text(result).splitlines()
    assert lines[0].startswith("best so far: default")
    assert lines[1] == ("not told apart: cpp_wrapper=True 3.04× vs default 3.01× (within 2%), so the default "
                        "compile stays the answer")
    assert lines.index(lines[1]) < next(n for n, line in enumerate(lines) if line.startswith("  cpp_wrapper"))


def test_beyond_the_threshold_with_overlapping_intervals_it_says_so():
    line = unseparated_line(_stopped(Score(3.20, 2.90, 3.50, 1)))
    assert line is not None and "(intervals overlap)" in line


def test_no_line_where_the_answer_leads_or_the_race_separated_them_or_the_headline_says_it():
    assert unseparated_line(_stopped(Score(2.90, 2.85, 2.95, 1))) is None  # listed below the answer
    assert unseparated_line(_stopped(Score(3.40, 3.30, 3.50, 1))) is None  # apart: the race told them apart
    beats = _stopped(Score(3.04, 2.98, 3.10, 1), outcome=NOTHING_BEATS)
    assert headline(beats).startswith("no configuration beats") and unseparated_line(beats) is None


def test_a_confirmed_answer_says_the_confirmation_decides():
    fused = Standing(Candidate((("freezing", True),)), Score(3.02, 2.96, 3.08, 1), stage=0)
    result = _stopped(Score(3.04, 2.98, 3.10, 1), outcome=CONFIRMED, winner=fused)
    result = TuneResult(**{**result.__dict__, "standings": (*result.standings, fused)})
    line = unseparated_line(result)
    assert line is not None and line.startswith("not told apart: cpp_wrapper=True 3.04× vs freezing=True 3.02×")
    assert line.endswith("the confirmation in fresh processes decides")


def _tie(*standings: Standing) -> TuneResult:
    """An unconfirmed result whose answer is :func:`winner` of ``standings``."""
    from tui.engine.tune.search import winner

    return TuneResult(tune_id="01JTUNE", outcome="unconfirmed", winner=winner(standings, 0.02), winner_options=None,
                      confirmation=None, standings=standings, stopped="stopped by the user")


def _one(name: str, value: float, compile_s: float | None = None, peak: float | None = None) -> Standing:
    score = Score(value, value - 0.06, value + 0.06, 1, compile_s=compile_s, peak_mb=peak)
    return Standing(Candidate(((name, True),)), score, stage=0)


def test_an_answer_preferred_for_its_shorter_compile_says_so():
    result = _tie(_one("cpp_wrapper", 3.04, compile_s=53.3), _one("freezing", 3.02, compile_s=1.1))
    assert result.winner.name == "freezing=True"
    assert unseparated_line(result) == ("not told apart: cpp_wrapper=True 3.04× vs freezing=True 3.02× (within 2%), "
                                        "so the one with the shorter compile is the answer")


def test_a_tie_a_third_candidate_decided_names_what_set_the_leader_aside_not_fewer_settings():
    """The compile's slack is not transitive: 1.7 s beats 4.0 s, 2.5 s beats neither and is not beaten, so the answer
    (2.5 s, the better point of the two left) does not itself compile quicker than the leader by the slack."""
    result = _tie(_one("cpp_wrapper", 3.04, compile_s=4.0), _one("freezing", 3.03, compile_s=2.5),
                  _one("fullgraph", 3.02, compile_s=1.7))
    assert result.winner.name == "freezing=True"
    assert unseparated_line(result) == ("not told apart: cpp_wrapper=True 3.04× vs freezing=True 3.03× (within 2%), "
                                        "and cpp_wrapper=True gives way to one as fast with a shorter compile")
    lean = _tie(_one("cpp_wrapper", 3.04, peak=100.0), _one("freezing", 3.03, peak=99.0),
                _one("fullgraph", 3.02, peak=97.5))
    assert lean.winner.name == "freezing=True"
    assert unseparated_line(lean).endswith("and cpp_wrapper=True gives way to one as fast with less peak memory")


def test_where_nothing_beats_the_default_it_says_why_the_confirmation_judged_that_challenger():
    """The transformer block's search on an H100 (docs/BENCHMARKS.md §31): the race's leader compiled for 56 s,
    the tie-break judged a 1 s compile as fast, and the answer said nothing of why that one."""
    tied = _tie(_one("cpp_wrapper", 1.0082, compile_s=56.5), _one("shape_padding", 1.0063, compile_s=1.1))
    assert tied.winner.name == "shape_padding=True"
    beats = dataclasses.replace(tied, outcome=NOTHING_BEATS, confirmed=tied.winner)
    line = unseparated_line(beats)
    assert line == ("the confirmation judged shape_padding=True 1.01×, not told apart from cpp_wrapper=True 1.01× "
                    "(within 2%), so the one with the shorter compile was judged")
    lines = answer_text(beats).splitlines()
    head = next(n for n, text in enumerate(lines) if text.startswith("no configuration beats"))
    assert lines[head + 1] == line
    other = dataclasses.replace(beats, confirmed=tied.standings[0])  # a note names a substitute: not this line
    assert unseparated_line(other) is None


def test_the_cli_prints_the_line_under_its_headline_folded_with_a_hanging_indent():
    from rich.console import Console

    from tui.cli.tune_render import print_answer

    console = Console(width=80, file=io.StringIO(), record=True)
    print_answer(_stopped(Score(3.04, 2.98, 3.10, 1)), console, quiet=True)
    lines = console.export_text().splitlines()
    assert lines[1].startswith("not told apart: cpp_wrapper=True 3.04×") and lines[2].startswith("  ")


def test_a_fold_keeps_a_number_with_its_unit():
    """The headline of a budget too short for the confirmation folded at 80 columns as "(about 35" / "s) does
    not fit": a fold between a number and its unit."""
    from tui.present.format import hanging_lines

    result = TuneResult(**{**_stopped(Score(3.04, 2.98, 3.10, 1)).__dict__, "winner": Standing(AUTOTUNE),
                           "stopped": "the confirmation (about 35 s) does not fit in the 3 s left of the budget",
                           "incomplete": "the budget ran out before 6 candidate(s) were screened"})
    text = headline(result)
    lines = hanging_lines(text, 80)
    assert all(len(line) <= 80 for line in lines)
    assert not [line for line in lines if line.rstrip().endswith((" 35", " 3"))], lines
    assert " ".join(line.strip() for line in lines) == text  # the spaces come back as spaces
    assert hanging_lines("  about 35 MiB, 3 stages", 11) == ["  about", "    35 MiB,", "    3", "    stages"]


def test_a_candidates_line_shows_its_screened_figure_only_where_the_cli_shows_the_column_and_it_adds_something():
    """The app's answer said ``screened 3.01×`` beside a latest 3.01× and ``screened –``; the CLI leaves its column
    out when no candidate ran past the screening. One rule (shows_screened) for both, and the line leaves out a
    figure that says nothing more."""
    only_screening = _stopped(Score(3.04, 2.98, 3.10, 1))
    text = answer_text(only_screening)
    assert "screened" not in text.split("candidates (")[1], text
    assert not shows_screened(only_screening.standings)
    raced = Standing(WRAPPER, Score(3.10, 3.05, 3.15, 2), stage=1, screened=Score(3.04, 2.98, 3.10, 1))
    late = Standing(AUTOTUNE, Score(2.50, 2.40, 2.60, 1), stage=1)  # the combination: never in the screening
    result = TuneResult(tune_id="01JTUNE", outcome="unconfirmed", winner=raced, winner_options=None,
                        confirmation=None, standings=(raced, DEFAULT, late), stopped="stopped by the user")
    lines = {line.split(":")[0].strip(): line for line in answer_text(result).splitlines() if line.startswith("  ")}
    assert shows_screened(result.standings)
    assert lines["cpp_wrapper=True"].startswith("  cpp_wrapper=True: 3.10× [3.05, 3.15] (2 proc.), screened 3.04×: ")
    assert "screened" not in lines["default"]  # screened 3.01×, its latest figure again
    assert "screened" not in lines["max-autotune-no-cudagraphs"]  # never screened: no "screened –"


def test_every_figure_of_the_answer_has_one_sign():
    """The compile time's charge read ``1.00x the default compile`` and a dropped candidate ``(≤ 0.861x vs ≥
    1.189x)`` where the rest of the answer writes ``×``."""
    import re

    from tui.engine.tune.answer import Against, Confirmation
    from tui.engine.tune.objective import Objective
    from tui.engine.tune.search import judge_stage

    fused = Standing(Candidate((("freezing", True),)), Score(3.60, 3.55, 3.65, 2), stage=1)
    slow = Standing(AUTOTUNE, Score(2.50, 2.40, 2.60, 1), stage=0)
    standings = tuple(judge_stage([fused, DEFAULT, slow]))
    confirmation = Confirmation(vs_default=Against(1.19, 1.17, 1.21, "faster"), vs_eager=Against(3.6, 3.5, 3.7),
                                default_vs_eager=Against(3.0, 2.9, 3.1), processes=(3, 3), compile_s=(9.0, 8.5),
                                amortized_gain=1.004)
    result = TuneResult(tune_id="01JTUNE", outcome=CONFIRMED, winner=fused, winner_options=None,
                        confirmation=confirmation, standings=standings, confirmed=fused,
                        objective=Objective(calls=100_000))
    text = answer_text(result)
    assert "  with the compile time over 100000 calls: 1.00× the default compile (point estimate" in text, text
    assert "dropped: below freezing=True (≤ 2.600× vs ≥ 3.550×)" in text, text
    assert not re.search(r"\dx\b", text), text  # no figure signed with a letter x


def test_a_run_the_user_stopped_says_so_after_the_budget_ended_the_screening():
    # the budget ended the screening (two candidates never ran), then the user stopped the confirmation: its run
    # was stopped by the user, not by the budget; the unscreened ones still name the budget
    from tui.engine.tune.notes import NOT_SCREENED

    raced = Standing(WRAPPER, Score(3.30, 3.20, 3.40, 1), stage=0, screened=Score(3.30, 3.20, 3.40, 1),
                     stopped="confirmation")
    unscreened = Standing(AUTOTUNE, Score(), stage=-1, gone=NOT_SCREENED)
    result = TuneResult(tune_id="01JTUNE", outcome="unconfirmed", winner=raced, winner_options=None,
                        confirmation=None, standings=(raced, DEFAULT, unscreened), stopped="stopped from the app",
                        cut_short="the budget ran out")
    lines = {line.split(":")[0].strip(): line for line in answer_text(result).splitlines() if line.startswith("  ")}
    assert lines["cpp_wrapper=True"].endswith("in the race at its end; its confirmation run was stopped from the app")
    assert lines["max-autotune-no-cudagraphs"].endswith("cut: not screened (the budget ran out)")


def test_the_answer_says_where_no_configuration_was_faster_than_eager():
    # the mlp on a CPU: the default compile stays the answer, and every candidate reads below eager or within the
    # band; "stays the answer" alone hides that compiling did not pay off
    slow_default = Standing(Candidate(), Score(0.96, 0.95, 0.983, 1), stage=0, screened=Score(0.96, 0.95, 0.983, 1))
    freeze = Standing(Candidate((("freezing", True),)), Score(0.97, 0.96, 0.99, 2), stage=1)
    result = TuneResult(tune_id="01JTUNE", outcome="unconfirmed", winner=slow_default, winner_options=None,
                        confirmation=None, standings=(freeze, slow_default), stopped="stopped by the user")
    lines = answer_text(result).splitlines()
    # what to do comes first: the headline names the best compile configuration, which is no reason to compile
    assert lines[0] == ("torch.compile did not pay off for this workload here: no configuration measured was more "
                        "than 2% faster than eager (the best, freezing=True, reads 0.97× [0.96, 0.99] over eager)")
    assert lines[1] == headline(result) and lines[1].startswith("best so far: default")
    assert lines[2].startswith("not told apart: freezing=True 0.97× vs default 0.96× (within 2%)")
    # one candidate faster than eager past the threshold, and the line is not there
    faster = Standing(WRAPPER, Score(1.05, 1.03, 1.07, 1), stage=0)
    result = TuneResult(tune_id="01JTUNE", outcome="unconfirmed", winner=slow_default, winner_options=None,
                        confirmation=None, standings=(faster, freeze, slow_default), stopped="stopped by the user")
    assert "faster than eager" not in answer_text(result)
    assert "faster than eager" not in answer_text(_stopped(Score(3.04, 2.98, 3.10, 1)))


def test_the_eager_line_reads_the_confirmation_and_an_unconfirmed_winner_slower_than_eager_gets_no_code():
    """The mlp's 90 s search: its race read cpp_wrapper 1.00× [0.98, 1.01] over eager, its confirmation 0.98×
    [0.96, 1.00]. The line quoted the race, and code to paste came first under "best so far"."""
    from tui.engine.tune.answer import Against, Confirmation

    wrapper = Standing(WRAPPER, Score(1.00, 0.98, 1.01, 2), stage=1)
    default = Standing(Candidate(), Score(0.97, 0.95, 0.99, 2), stage=1)
    confirmation = Confirmation(vs_default=Against(1.01, 0.97, 1.06, "noisy",
                                                   ("default compile process 2 of 3: the time speedup drifted +14%",)),
                                vs_eager=Against(0.98, 0.96, 1.00, "inconclusive"),
                                default_vs_eager=Against(0.97, 0.95, 0.98, "slower"), processes=(3, 3))
    options = WRAPPER.apply(RunOptions(workload="mlp", device="cpu"))
    result = TuneResult(tune_id="01JTUNE", outcome="unconfirmed", winner=wrapper, winner_options=options,
                        confirmation=confirmation, confirmed=wrapper, standings=(wrapper, default))
    lines = answer_text(result).splitlines()
    assert lines[0] == ("torch.compile did not pay off for this workload here: no configuration measured was more "
                        "than 2% faster than eager (the best, cpp_wrapper=True, reads 0.98× [0.96, 1.00] over eager)")
    assert not any("torch.compile(" in line for line in lines)  # no code to paste for it
    noisy = lines.index("  cpp_wrapper=True vs default compile: 1.01× [0.97, 1.06] noisy")
    assert lines[noisy + 1] == "    noisy: default compile process 2 of 3: the time speedup drifted +14%"
    # an interval that reaches past the threshold: not shown to pay off, which is not "did not"
    unsure = dataclasses.replace(confirmation, vs_eager=Against(1.02, 1.00, 1.04, "inconclusive"))
    assert answer_text(dataclasses.replace(result, confirmation=unsure)).splitlines()[0] == (
        "torch.compile was not shown to pay off for this workload here: no configuration measured was shown more "
        "than 2% faster than eager (the best, cpp_wrapper=True, reads 1.02× [1.00, 1.04] over eager)")
    # faster than eager in its confirmation: the code comes, marked unconfirmed
    quick = dataclasses.replace(confirmation, vs_eager=Against(1.10, 1.05, 1.12, "faster"))
    lines = answer_text(dataclasses.replace(result, confirmation=quick)).splitlines()
    assert "# unconfirmed: the race's leader, not shown faster in fresh processes" in lines
    assert any(line.startswith("compiled = torch.compile(") for line in lines)


def test_a_noisy_confirmation_does_not_overrule_the_race_into_saying_nothing_was_faster_than_eager():
    """A 2-minute app search on a busy CPU: freezing=True raced at 1.10× [1.06, 1.14] over eager, its confirmation
    read 0.98× [0.89, 1.24] noisy. The first line said no configuration was faster than eager and named
    cpp_wrapper=True the best, under a table listing freezing=True at 1.10×."""
    from tui.engine.tune.answer import Against, Confirmation

    freeze = Standing(Candidate((("freezing", True),)), Score(1.10, 1.06, 1.14, 2), stage=1)
    wrapper = Standing(WRAPPER, Score(1.00, 0.97, 1.03, 1), stage=0)
    default = Standing(Candidate(), Score(0.99, 0.97, 1.01, 2), stage=1)
    confirmation = Confirmation(vs_default=Against(0.99, 0.90, 1.22, "noisy", ("a stall",)),
                                vs_eager=Against(0.98, 0.89, 1.24, "noisy", ("a stall",)),
                                default_vs_eager=Against(0.99, 0.98, 1.00, "no change"), processes=(5, 5))
    options = freeze.candidate.apply(RunOptions(workload="mlp", device="cpu"))
    result = TuneResult(tune_id="01JTUNE", outcome="unconfirmed", winner=freeze, winner_options=options,
                        confirmation=confirmation, confirmed=freeze, standings=(freeze, wrapper, default))
    lines = answer_text(result).splitlines()
    assert not any("faster than eager" in line for line in lines[:2]), lines[:2]
    assert lines[0].startswith("best so far: freezing=True (unconfirmed")
    assert "# unconfirmed: the race's leader, not shown faster in fresh processes" in lines
    # the same confirmation read without noise overrules the race, as fresh processes that picked nothing
    quiet = dataclasses.replace(confirmation, vs_eager=Against(0.98, 0.97, 0.99, "slower"))
    assert answer_text(dataclasses.replace(result, confirmation=quiet)).splitlines()[0] == (
        "torch.compile was not shown to pay off for this workload here: no configuration measured was shown more "
        "than 2% faster than eager (the best, cpp_wrapper=True, reads 1.00× [0.97, 1.03] over eager)")


def test_a_search_stopped_before_every_candidate_ran_is_not_said_to_show_that_compiling_does_not_pay_off():
    slow = Standing(Candidate(), Score(0.96, 0.95, 0.97, 1), stage=0)
    never = (Standing(WRAPPER), Standing(AUTOTUNE))
    result = TuneResult(tune_id="01JTUNE", outcome="unconfirmed", winner=slow, winner_options=None,
                        confirmation=None, standings=(slow, *never), stopped="stopped from the app")
    assert answer_text(result).splitlines()[0] == (
        "torch.compile was not shown to pay off for this workload here: no configuration measured was more than 2% "
        "faster than eager (the best, default, reads 0.96× [0.95, 0.97] over eager; 2 candidate(s) not run)")
    # a candidate whose only run a stop cancelled was run, not measured: its row says "its screening run was stopped"
    halted = (Standing(WRAPPER, stopped="screening"), Standing(AUTOTUNE))
    result = dataclasses.replace(result, standings=(slow, *halted))
    assert answer_text(result).splitlines()[0].endswith(
        "over eager; 1 candidate(s) not run; 1 candidate(s) stopped before measuring)")


def test_the_cli_prints_the_eager_line_above_the_headline():
    from rich.console import Console

    from tui.cli.tune_render import print_answer

    slow = Standing(Candidate(), Score(0.90, 0.88, 0.92, 1), stage=0)
    result = TuneResult(tune_id="01JTUNE", outcome="unconfirmed", winner=slow, winner_options=None,
                        confirmation=None, standings=(slow,), stopped="stopped by the user")
    console = Console(width=200, file=io.StringIO(), record=True)
    print_answer(result, console, quiet=True)
    lines = console.export_text().splitlines()
    assert lines[0] == ("torch.compile did not pay off for this workload here: no configuration measured was more "
                        "than 2% faster than eager (the best, default, reads 0.90× [0.88, 0.92] over eager)")
    assert lines[1] == headline(result)


def test_a_confirmation_above_1_but_not_past_the_threshold_says_faster_by_less_than_it_can_show():
    """The mlp's tenth CPU search: 12 + 12 processes read cpp_wrapper against the default compile 1.03× [1.01,
    1.04], inconclusive at 2%. "reads inconclusive" alone hid that the interval lies above 1."""
    from tui.engine.tune.answer import Against, Confirmation

    wrapper = Standing(WRAPPER, Score(0.98, 0.97, 1.00, 2), stage=1)
    default = Standing(Candidate(), Score(0.96, 0.95, 0.98, 2), stage=1)
    confirmation = Confirmation(vs_default=Against(1.03, 1.01, 1.04, "inconclusive"),
                                vs_eager=Against(0.97, 0.96, 0.98, "slower"),
                                default_vs_eager=Against(0.94, 0.94, 0.95, "slower"), processes=(12, 12))
    result = TuneResult(tune_id="01JTUNE", outcome="unconfirmed", winner=wrapper, winner_options=None,
                        confirmation=confirmation, confirmed=wrapper, standings=(wrapper, default))
    assert headline(result) == ("best so far: cpp_wrapper=True (unconfirmed: the confirmation reads inconclusive: "
                                "faster than the default compile, but not shown more than 2% faster)")
    assert ("  cpp_wrapper=True vs default compile: 1.03× [1.01, 1.04] inconclusive: faster (its low end, 1.010, "
            "lies above 1), but not shown more than 2% faster") in answer_text(result).splitlines()
    # the mirror, against eager: an interval below 1 that reaches past 0.98 is slower, not shown more than 2% so
    under = dataclasses.replace(result, confirmation=dataclasses.replace(
        confirmation, vs_eager=Against(0.97, 0.96, 0.9809, "inconclusive")))
    assert ("  cpp_wrapper=True vs eager: 0.97× [0.96, 0.98] inconclusive: slower (its high end, 0.981, lies below "
            "1), but not shown more than 2% slower") in answer_text(under).splitlines()
    # "not more than 2% faster" is a claim against the default compile only: an eager line never says it
    level = dataclasses.replace(result, confirmation=dataclasses.replace(
        confirmation, vs_eager=Against(1.0, 0.97, 1.01, "inconclusive")))
    assert "  cpp_wrapper=True vs eager: 1.00× [0.97, 1.01] inconclusive" in answer_text(level).splitlines()
    # the twelfth search's low end, 1.004, shows as 1.00 in the interval: the suffix gives it to three places
    near = dataclasses.replace(result, confirmation=dataclasses.replace(
        confirmation, vs_default=Against(1.019, 1.00397, 1.0318, "inconclusive")))
    assert "[1.00, 1.03] inconclusive: faster (its low end, 1.004, lies above 1)" in answer_text(near)
    # an interval that reaches 1 says only its word; one inconclusive for a drift claims nothing either
    for against in (Against(1.02, 1.00, 1.05, "inconclusive"),
                    Against(1.03, 1.01, 1.04, "inconclusive", ("winner process 2 of 5: drifted +9%",))):
        plain = dataclasses.replace(result, confirmation=dataclasses.replace(confirmation, vs_default=against))
        assert headline(plain) == "best so far: cpp_wrapper=True (unconfirmed: the confirmation reads inconclusive)"
        assert "lies above 1" not in answer_text(plain)
    # the default compile's row in the candidates says it was the confirmation's baseline (a cut from the race
    # would otherwise read as out of the answer); without a confirmation it does not
    rows = [line for line in answer_text(result).splitlines() if line.startswith("  default:")]
    assert len(rows) == 1 and rows[0].endswith("in the race at its end; then the confirmation's baseline"), rows
    assert "baseline" not in answer_text(dataclasses.replace(result, confirmation=None))
    # where the default compile led, the challenger its confirmation ran is named
    led = dataclasses.replace(result, winner=default)
    assert headline(led) == ("best so far: default (unconfirmed: the confirmation of cpp_wrapper=True reads "
                             "inconclusive: faster than the default compile, but not shown more than 2% faster)")
    # a faster reading is confirmed: neither the headline nor the figure adds the inconclusive wording
    quick = dataclasses.replace(result, outcome=CONFIRMED, confirmation=dataclasses.replace(
        confirmation, vs_default=Against(1.05, 1.03, 1.07, "faster")))
    assert headline(quick) == "best: cpp_wrapper=True, confirmed faster than the default compile in fresh processes"
    assert "  cpp_wrapper=True vs default compile: 1.05× [1.03, 1.07] faster" in answer_text(quick).splitlines()


def test_the_code_of_a_winner_that_autotunes_says_a_first_compile_draws_again():
    from tui.engine.tune.answer import Against, Confirmation
    from tui.present.tune_answer import AUTOTUNES_CODE
    from tui.present.tune_json import answer_json

    confirmation = Confirmation(vs_default=Against(1.33, 1.32, 1.33, "faster"),
                                vs_eager=Against(1.68, 1.67, 1.68, "faster"),
                                default_vs_eager=Against(1.26, 1.26, 1.27, "faster"), processes=(3, 3))
    base = RunOptions(workload="cnn", device="cuda")
    for candidate, shown in ((AUTOTUNE, True), (Candidate((("max_autotune_gemm", True),)), True), (WRAPPER, False)):
        winner = Standing(candidate, Score(1.6, 1.59, 1.61, 3), stage=2)
        result = TuneResult(tune_id="01JTUNE", outcome=CONFIRMED, winner=winner,
                            winner_options=candidate.apply(base), confirmation=confirmation, confirmed=winner,
                            standings=(winner, DEFAULT))
        lines = answer_text(result).splitlines()
        assert (AUTOTUNES_CODE in lines) is shown, candidate
        assert answer_json(result)["winner"]["code"]["autotunes"] is shown  # and the JSON says it too
        if shown:  # right above the code it is about
            assert lines[lines.index(AUTOTUNES_CODE) + 1] == "# as torch.compile's arguments:"


def test_a_confirmation_grows_only_while_its_interval_still_allows_a_gain_past_the_threshold():
    assert not settled(Against(1.02, 0.99, 1.05, "inconclusive"), 0.02)  # a gain past 2% is still possible
    assert settled(Against(1.0, 0.97, 1.015, "inconclusive"), 0.02)  # ruled out: nothing beats it
    assert settled(Against(1.05, 1.03, 1.07, "faster"), 0.02) and settled(Against(1.0, 0.8, 1.3, "noisy"), 0.02)
    assert settled(Against(1.02, 0.99, 1.05, "inconclusive", ("a drift",)), 0.02)  # more processes keep the drift


def test_the_closing_line_says_where_the_runs_are_kept_and_which_page_has_the_answer():
    """The history keeps the runs and no answer: the page with the answer is the ``--json`` file's; a search run
    with ``--no-history`` names no selector that finds nothing."""
    from tui.present.tune_answer import closing_line

    result = dataclasses.replace(_stopped(Score(3.04, 2.98, 3.10, 1)), runs=3, elapsed_s=12.0)
    stored = closing_line(result)
    assert stored.endswith("history as tune:01JTUNE (compile-lab report tune:01JTUNE -o tune.html makes a page of its "
                           "runs)")
    exported = closing_line(result, "my runs/t.json")
    assert exported.endswith("compare selects them from the history as tune:01JTUNE; compile-lab report "
                             "'my runs/t.json' -o tune.html makes its page with the answer")
    alone = closing_line(result, "t.json", stored=False)
    assert "tune:" not in alone.split(":", 1)[1] and "not stored in the history; compile-lab report t.json" in alone
    nowhere = closing_line(result, stored=False)
    assert "tune:" not in nowhere.split(":", 1)[1] and nowhere.endswith("not stored in the history (--no-history)")
    # stopped before its first run: a command naming its runs would fail ("no run of this tune")
    none = closing_line(dataclasses.replace(result, runs=0, stopped_runs=0), "t.json")
    assert none.endswith("0 run(s) in 12.0 s; no run started, so there is nothing to compare or report"), none


def test_the_compile_time_is_charged_against_the_processes_geometric_mean_times():
    """--calls charges compile time against a side's time per call, read as its group reads it (the geometric mean
    of its processes' medians: 2 ms for 1 and 4 ms, not their mean 2.5)."""
    from test_repeats import _cpu_process
    from tui.engine.tune.objective import DEVICE, typical_ms

    runs = [_cpu_process(0, 1.0, 1.0, compiled=1.0), _cpu_process(1, 1.0, 1.0, compiled=4.0)]
    assert typical_ms(runs, "compiled", DEVICE) == pytest.approx(2.0)
    eager = [r.summary().eager.iter.median for r in runs]
    assert typical_ms(runs, "eager", DEVICE) == pytest.approx((eager[0] * eager[1]) ** 0.5)


def test_a_noisy_reading_shows_its_first_reasons_and_counts_the_rest():
    """A 3-minute CPU search on a busy box printed twelve near-identical noise lines under one reading."""
    from tui.engine.tune.answer import Against, Confirmation

    reasons = tuple(f"default compile process {n} of 12: other processes used 1.4 cores" for n in range(1, 13))
    wrapper = Standing(WRAPPER, Score(1.00, 0.98, 1.01, 2), stage=1)
    default = Standing(Candidate(), Score(0.99, 0.97, 1.00, 2), stage=1)
    confirmation = Confirmation(vs_default=Against(1.01, 0.95, 1.08, "noisy", reasons),
                                vs_eager=Against(1.00, 0.98, 1.02, "no change"),
                                default_vs_eager=Against(0.99, 0.98, 1.00, "no change"), processes=(12, 12))
    result = TuneResult(tune_id="01JTUNE", outcome="unconfirmed", winner=wrapper, winner_options=None,
                        confirmation=confirmation, confirmed=wrapper, standings=(wrapper, default))
    noise = [line for line in answer_text(result).splitlines() if line.startswith("    noisy: ")]
    assert noise == [f"    noisy: {reason}" for reason in reasons[:3]] + ["    noisy: and 9 more"]


def test_a_cut_contender_the_confirmation_judged_says_so_in_its_row():
    from tui.engine.tune.answer import Against, Confirmation
    from tui.present.tune_answer import result_rows

    cut = Standing(Candidate((("freezing", True),)), Score(1.00, 0.99, 1.01, 2), stage=1,
                   gone="cut: ranked 3 of 3 after stage 2")
    lead = Standing(AUTOTUNE, Score(1.01, 1.00, 1.02, 3), stage=2)
    default = Standing(Candidate(), Score(0.99, 0.98, 1.00, 3), stage=2)
    confirmation = Confirmation(vs_default=Against(1.00, 0.99, 1.01, "no change"),
                                vs_eager=Against(1.00, 0.99, 1.01, "no change"),
                                default_vs_eager=Against(0.99, 0.98, 1.00, "no change"), processes=(3, 3))
    result = TuneResult(tune_id="01JTUNE", outcome=NOTHING_BEATS, winner=default, winner_options=None,
                        confirmation=confirmation, confirmed=cut, standings=(lead, default, cut))
    rows = {row[0]: row[3] for row in result_rows(result)}
    assert rows["freezing=True"] == "cut: ranked 3 of 3 after stage 2; then the one the confirmation judged"
    assert rows["default"].endswith("; then the confirmation's baseline")
    assert "confirmation judged" not in rows["max-autotune-no-cudagraphs"]
