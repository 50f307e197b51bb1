"""A tune's answer as text, for every front end: the headline, the code to paste, the figures, the candidates.

The CLI prints these lines (``compile-lab tune``'s stdout, its table drawn by rich); the app shows
:func:`answer_text` in the tune screen, where ``y`` copies it. One wording, one place.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from tui.engine.tune.answer import (
    BUDGET_RAN_OUT, CONFIRMED, NOTHING_BEATS, NOTHING_MEASURED, Against, TuneResult, faster_within, no_more_than,
    nothing_beats_text, slower_within,
)
from tui.engine.measure.verdict import FASTER, NOISY, judge_interval
from tui.engine.tune.code import compile_call, config_form, config_settings
from tui.engine.tune.runs import was_stopped
from tui.engine.tune.search import (
    COMPILE, MEMORY, Standing, compiles_quicker, less_memory, ranked, set_aside_by,
)  # fmt: skip
from tui.engine.tune.space import DEFAULT, autotunes
from tui.present.code_fold import fold_code
from tui.present.format import fmt_mib, fmt_seconds, fmt_speedup, hanging_lines

__all__ = ["against_text", "standing_rows", "runs_text", "shows_screened",
           "cut_short", "BUDGET_RAN_OUT", "STANDING_COLUMNS", "headline",
           "code_lines", "figure_lines", "closing_line", "answer_text", "answer_lines",
           "fold_answer", "unseparated_line", "eager_line", "lead_lines", "result_rows"]

STANDING_COLUMNS = ("candidate", "screened", "latest [95% interval]", "standing")
"""The columns of :func:`standing_rows`."""
UNCONFIRMED_CODE = "# unconfirmed: the race's leader, not shown faster in fresh processes"
AUTOTUNES_CODE = "# autotunes: each cold compile picks its kernels anew, so yours may read otherwise"
"""Above the code of a winner that autotunes: its figures hold for the kernels each confirmation process picked
on this machine, and another machine's first compile draws again (docs/BENCHMARKS.md §25)."""


def against_text(against: Against) -> str:
    """``1.19× [1.17, 1.21] faster`` (the verdict's word after the interval)."""
    text = fmt_speedup(against.gain, against.low, against.high)
    return f"{text} {against.verdict}" if against.verdict else text


def cut_short(result: TuneResult) -> str:
    """Why the candidates still in the race did not all run in its last stage (:attr:`TuneResult.cut_short`)."""
    return result.cut_short or BUDGET_RAN_OUT


def _standing_text(standing: Standing, last_stage: int, why: str, stop: str) -> str:
    """Why it left the race; for one still in, whether it ran in the last stage (``why``: what kept it out), and
    whether a stop cancelled its run as it ran (that candidate was not "never run": its run was stopped, for
    ``stop``, whatever ended the race before)."""
    if standing.gone:
        return standing.gone
    stopped = was_stopped(f"its {standing.stopped} run", stop) if standing.stopped else ""
    if standing.stage < 0:
        return f"in the race, {stopped or f'never run ({why})'}"
    if standing.stage < last_stage:
        return f"in the race, last run in stage {standing.stage + 1}" + (f"; {stopped}" if stopped else f" ({why})")
    return "in the race at its end" + (f"; {stopped}" if stopped else "")


def shows_screened(standings: Sequence[Standing]) -> bool:
    """Whether the answer shows the screened figures: only where a candidate ran past the screening (else each
    candidate's screened figure is its latest one, and saying it twice tells nothing)."""
    return any(s.stage > 0 for s in standings)


def _screened_part(screened: str, latest: str, shown: bool) -> str:
    """``, screened 1.21×`` in a candidate's line, where :func:`shows_screened` and the figure adds something: not
    ``–`` (it was not screened) nor the latest figure again."""
    return f", screened {screened}" if shown and screened != "–" and latest.split(" ", 1)[0] != screened else ""


def runs_text(runs: int, stopped: int = 0) -> str:
    """``12 run(s)``; after a stop that cancelled runs as they ran, ``12 run(s) ended on their own, 1 stopped``:
    every front end counts the runs so (:attr:`~tui.engine.tune.answer.TuneResult.runs`)."""
    return f"{runs} run(s) ended on their own, {stopped} stopped" if stopped else f"{runs} run(s)"


def standing_rows(standings: Sequence[Standing], why: str = BUDGET_RAN_OUT, stop: str | None = None,
                  judged: str | None = None) -> list[tuple[str, str, str, str]]:
    """(candidate, screened, latest with interval and processes, standing) per candidate, the race's order;
    ``why``: what kept a candidate still in the race from its last stage (:func:`cut_short`); ``stop``: what
    stopped the runs a stop cancelled (:attr:`TuneResult.stopped`; None: ``why``); ``judged``: the candidate a
    confirmation judged, so the default compile's row says it was its baseline (its race figures are not the
    confirmation's, and a default compile cut from the race would otherwise read as out of the answer), and that
    candidate's row says so where the halving had cut it."""
    last_stage = max((s.stage for s in standings), default=0)
    rows = []
    for standing in ranked(standings):
        screened = standing.screened
        first = fmt_speedup(screened.value) if screened is not None else "–"
        score = standing.score
        latest = fmt_speedup(score.value, score.low, score.high)
        if score.processes > 1:
            latest += f" ({score.processes} proc.)"
        text = _standing_text(standing, last_stage, why, stop or why)
        if judged is not None and standing.candidate.is_default:
            text += "; then the confirmation's baseline"
        elif standing.name == judged and not standing.alive:  # a contender the halving cut, confirmed in its place
            text += "; then the one the confirmation judged"
        rows.append((standing.name, first, latest, text))
    return rows


def result_rows(result: TuneResult) -> list[tuple[str, str, str, str]]:
    """:func:`standing_rows` of ``result``'s candidates, as every front end shows them."""
    judged = result.confirmed.name if result.confirmation is not None and result.confirmed is not None else None
    return standing_rows(result.standings, cut_short(result), result.stopped, judged)


def headline(result: TuneResult) -> str:
    """The answer's first line: the confirmed winner, the words for "nothing beats the default", why nothing ran, or
    unconfirmed with why."""
    name = result.winner.name if result.winner is not None else "none"
    if result.outcome == CONFIRMED:
        return f"best: {name}, confirmed faster than the default compile in fresh processes"
    if result.outcome == NOTHING_BEATS:
        return nothing_beats_text(result.threshold)
    if result.outcome == NOTHING_MEASURED:
        return nothing_measured_text(result)
    if result.stopped and result.winner is None and not (result.runs or result.stopped_runs):
        return f"nothing ran: {result.stopped}"  # refused or stopped before its first run: no "best so far"
    return f"best so far: {name} (unconfirmed: {_unconfirmed_why(result)})"


def _unconfirmed_why(result: TuneResult) -> str:
    """Why the best so far is unconfirmed: the stop, the confirmation's reading, what was left undone."""
    verdict = result.confirmation.vs_default.verdict if result.confirmation else None
    subject = "" if result.confirmed is None or result.confirmed is result.winner else f" of {result.confirmed.name}"
    read = f"the confirmation{subject} reads {verdict}" if verdict else None
    if result.confirmation is not None and faster_within(result.confirmation.vs_default, result.threshold):
        read = (f"the confirmation{subject} reads inconclusive: faster than the default compile, but not shown "
                f"more than {result.threshold * 100:g}% faster")
    reasons = [result.stopped, read, result.incomplete]
    if not any(reasons) and result.winner is not None and result.winner.candidate.is_default:
        reasons.append("the default compile led the race, but no confirmation judged its challenger")
    return "; ".join(r for r in reasons if r) or "not confirmed"


def nothing_measured_text(result: TuneResult) -> str:
    """Why a search measured nothing: the budget ended its only runs, or the default compile's run failed (every
    candidate shares its workload and run options)."""
    if result.cut_before_measuring:
        return ("nothing was measured before the budget ran out (its runs reached the budget's end), so no "
                "configuration can be judged")
    default = next((s for s in result.standings if s.candidate.is_default), None)
    why = default.score.out if default is not None and default.score.out else "failed"
    return f"nothing was measured, so no configuration can be judged: the default compile's run {why}"


def _apart(standing: Standing, answer: Standing, threshold: float) -> bool:
    """The race separated ``standing`` from ``answer``: its point estimate beyond the threshold and the two
    intervals apart."""
    mine, theirs = standing.score, answer.score
    if mine.value is None or theirs.value is None or mine.value <= theirs.value * (1 + threshold):
        return False
    return mine.low is not None and theirs.high is not None and mine.low > theirs.high


def _preferred(result: TuneResult, answer: Standing, ahead: Standing, role: str = "is the answer") -> str:
    """Why the answer names ``answer`` over ``ahead`` (:func:`~tui.engine.tune.search.winner`'s tie-breaks): the one
    that set ``ahead`` aside, said of ``answer`` where it beats ``ahead`` by it, else of a candidate that does;
    ``role``: what that made ``answer`` (the answer, or the candidate a confirmation judged)."""
    if result.outcome == CONFIRMED:
        return "the confirmation in fresh processes decides"
    step = set_aside_by(result.standings, result.threshold, ahead.name)
    if step == MEMORY:
        mine = less_memory(answer, ahead)
        return f"so the one with less peak memory {role}" if mine else _gives_way(ahead, "less peak memory")
    if answer.candidate.is_default:
        return "so the default compile stays the answer"
    if step == COMPILE:
        mine = compiles_quicker(answer, ahead)
        return f"so the one with the shorter compile {role}" if mine else _gives_way(ahead, "a shorter compile")
    if len(answer.candidate.settings) < len(ahead.candidate.settings):
        return f"so the one with fewer settings {role}"
    return _gives_way(ahead, "fewer settings")


def _gives_way(ahead: Standing, why: str) -> str:
    return f"and {ahead.name} gives way to one as fast with {why}"


def unseparated_line(result: TuneResult) -> str | None:
    """One line for the candidates listed above the answer (a better point estimate in the race) that the race
    did not separate from it (within the threshold, or intervals that overlap), and why the answer is not
    theirs; None when there are none. Where nothing beats the default compile, the same for the challenger its
    confirmation judged (why that one and not the race's leader); none where the default compile led."""
    best = result.winner
    if best is None or best.score.value is None or result.outcome == NOTHING_MEASURED:
        return None
    judged = result.outcome == NOTHING_BEATS
    if judged and (best.candidate.is_default or result.confirmed is None or result.confirmed.name != best.name):
        return None
    value = best.score.value
    ahead = [s for s in ranked(result.standings) if s.alive and s.name != best.name and s.score.value is not None
             and s.score.value > value and not _apart(s, best, result.threshold)]
    if not ahead:
        return None
    names = ", ".join(f"{s.name} {fmt_speedup(s.score.value)}" for s in ahead[:2])
    if len(ahead) > 2:
        names += f" and {len(ahead) - 2} more"
    top = ahead[0].score.value or 0.0
    how = f"within {result.threshold * 100:g}%" if top <= value * (1 + result.threshold) else "intervals overlap"
    if judged:
        why = _preferred(result, best, ahead[0], role="was judged")
        return f"the confirmation judged {best.name} {fmt_speedup(value)}, not told apart from {names} ({how}), {why}"
    why = _preferred(result, best, ahead[0])
    return f"not told apart: {names} vs {best.name} {fmt_speedup(value)} ({how}), {why}"


def over_eager(result: TuneResult) -> dict[str, Against]:
    """Each measured candidate's speedup over eager: the confirmation's for the two it ran (fresh processes that
    picked nothing), the race's for the rest and where the confirmation's reads noisy (a figure its own processes
    disagree on overrules nothing: the candidates' table beside it shows the race's)."""
    figures = {s.name: Against(s.score.value, s.score.low, s.score.high) for s in result.standings
               if s.score.value is not None}
    confirmation = result.confirmation
    if confirmation is not None and result.confirmed is not None:
        for name, against in ((result.confirmed.name, confirmation.vs_eager), (DEFAULT, confirmation.default_vs_eager)):
            if against.verdict != NOISY or name not in figures:
                figures[name] = against
    return {name: against for name, against in figures.items() if against.gain is not None}


def pays_off(against: Against, threshold: float) -> bool:
    """Whether ``against`` (a speedup over eager) reads faster: its interval past the threshold above 1."""
    return judge_interval(against.low, against.high, threshold) == FASTER


def eager_line(result: TuneResult) -> str | None:
    """Where no configuration measured read faster than eager (none's interval lies past the threshold above 1,
    :func:`over_eager`'s figures), the line that says so, with the best: the search ranks compile configurations
    against each other, and the default compile staying the answer does not say that compiling pays off at all."""
    figures = over_eager(result)
    if not figures or any(pays_off(against, result.threshold) for against in figures.values()):
        return None
    name, best = max(figures.items(), key=lambda item: item[1].gain or 0.0)
    figure = fmt_speedup(best.gain, best.low, best.high)
    never = sum(1 for s in result.standings if s.stage < 0 and not s.stopped)
    halted = sum(1 for s in result.standings if s.stage < 0 and s.stopped)  # a stop cancelled its only run
    # one-sided, as "nothing beats the default": an interval whose high end is within the threshold rules a gain out;
    # a candidate never run might still pay off; an interval reaching past the threshold is no measured "faster" either
    measured_out = all(a.high is not None and a.high <= 1 + result.threshold for a in figures.values())
    verdict = "did not pay off" if measured_out and not never + halted else "was not shown to pay off"
    more = f"more than {result.threshold * 100:g}% faster"  # the verdict's word, read as one: 1.01× is no gain
    faster = f"was {more}" if measured_out else f"was shown {more}"
    unrun = "".join([f"; {never} candidate(s) not run" if never else "",
                     f"; {halted} candidate(s) stopped before measuring" if halted else ""])
    return (f"torch.compile {verdict} for this workload here: no configuration measured {faster} than eager (the "
            f"best, {name}, reads {figure} over eager{unrun})")


def lead_lines(result: TuneResult) -> list[str]:
    """The answer's first lines, what to do first: where no configuration measured was more than the threshold
    faster than eager, that line (:func:`eager_line`: the search ranks compile configurations against each other,
    and its headline names the best of them), then the headline, then the candidates the race did not separate from
    the answer."""
    eager = eager_line(result)
    return [line for line in (eager, headline(result), unseparated_line(result)) if line]


def code_lines(result: TuneResult, modes: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """The winner as code to paste, both forms (a blank line first; the config form only when it sets something);
    none for the default compile or when nothing beats it."""
    if result.winner is None or result.winner_options is None or result.outcome == NOTHING_BEATS \
            or result.winner.candidate.is_default:
        return []
    if result.outcome != CONFIRMED and eager_line(result) is not None:
        return []  # nothing was faster than eager: no code to paste, the line above says so
    lines = [""]
    if result.outcome != CONFIRMED:
        lines.append(UNCONFIRMED_CODE)
    if autotunes(result.winner_options, modes):
        lines.append(AUTOTUNES_CODE)
    lines += ["# as torch.compile's arguments:", compile_call(result.winner_options)]
    if config_settings(result.winner_options, modes):  # without settings the config form is the call again
        lines += ["", "# or as torch._inductor.config settings:",
                  *config_form(result.winner_options, modes).splitlines()]
    return lines


def figure_lines(result: TuneResult) -> list[str]:
    """The confirmation's figures (a blank line first): vs the default compile and vs eager with their verdicts,
    the compile time, the memory, the charge of the compile time; none without a confirmation."""
    confirmation = result.confirmation
    if confirmation is None:
        return []
    name = result.confirmed.name if result.confirmed else "winner"
    processes = confirmation.processes
    lines = ["", f"confirmation ({processes[0]} + {processes[1]} fresh processes, 95% intervals across processes):",
             f"  {name} vs default compile: {against_text(confirmation.vs_default)}"
             + _reading_suffix(confirmation.vs_default, result.threshold, over_default=True),
             *_noise_lines(confirmation.vs_default),
             f"  {name} vs eager: {against_text(confirmation.vs_eager)}"
             + _reading_suffix(confirmation.vs_eager, result.threshold),
             *_noise_lines(confirmation.vs_eager),
             f"  default compile vs eager: {against_text(confirmation.default_vs_eager)}"
             + _reading_suffix(confirmation.default_vs_eager, result.threshold),
             *_noise_lines(confirmation.default_vs_eager)]
    compile_w, compile_d = confirmation.compile_s
    lines.append(f"  compile time: {fmt_seconds(compile_w)} s (default compile {fmt_seconds(compile_d)} s)")
    peak_w, peak_d = confirmation.peak_mb
    if peak_w is not None or peak_d is not None:
        lines.append(f"  peak memory: {fmt_mib(peak_w)} (default compile {fmt_mib(peak_d)})")
    if confirmation.amortized_gain is not None and result.objective.calls:
        lines.append(f"  with the compile time over {result.objective.calls} calls: "
                     f"{fmt_speedup(confirmation.amortized_gain)} the default compile (point estimate; compile time "
                     "has no interval)")
    return lines


def _reading_suffix(against: Against, threshold: float, over_default: bool = False) -> str:
    """What an ``inconclusive`` reading still says: (``over_default``) no more than the threshold faster; or faster,
    or slower, by an amount it cannot show is past the threshold (its interval lies on one side of 1). The near end
    to three places: shown to two, 1.004 would read as the 1.00 it is not."""
    band = f"{threshold * 100:g}%"
    if over_default and no_more_than(against, threshold):
        return f", so not more than {band} faster"
    if faster_within(against, threshold):
        return f": faster (its low end, {against.low:.3f}, lies above 1), but not shown more than {band} faster"
    if slower_within(against, threshold):
        return f": slower (its high end, {against.high:.3f}, lies below 1), but not shown more than {band} slower"
    return ""


NOISE_LINES = 3
"""The noise reasons a reading shows, one line each; the rest are counted (a grown confirmation can give one a
process, a dozen lines that say the same)."""


def _noise_lines(against: Against) -> list[str]:
    """Why a reading is noisy, one line a reason (compare's reasons: which side's process, what moved it), the first
    :data:`NOISE_LINES` of them and a count of the rest."""
    if against.verdict != NOISY:
        return []
    reasons = list(against.reasons)
    lines = [f"    noisy: {reason}" for reason in reasons[:NOISE_LINES]] or ["    noisy: no reason was given"]
    if len(reasons) > NOISE_LINES:
        lines.append(f"    noisy: and {len(reasons) - NOISE_LINES} more")
    return lines


def closing_line(result: TuneResult, json_file: str | None = None, stored: bool = True) -> str:
    """How many runs, how long, and where they are kept: the history's ``tune:ID`` for ``compare`` and ``report``
    (``stored``), and ``json_file`` (``--json``), whose page alone carries the answer (the history keeps none), so
    the page it names is that file's where there is one."""
    took = f" in {fmt_seconds(result.elapsed_s)} s" if not result.stopped_runs else \
        f", {fmt_seconds(result.elapsed_s)} s in all"  # after "1 stopped", "in 19.8 s" read as that run's time
    head = f"tune id {result.tune_id}: {runs_text(result.runs, result.stopped_runs)}{took}; "
    if not result.runs and not result.stopped_runs:  # a command naming its runs would fail: "no run of this tune"
        return head + "no run started, so there is nothing to compare or report"
    selection = f"tune:{result.tune_id}"
    if json_file is not None:
        page = f"compile-lab report {shlex.quote(json_file)} -o tune.html makes its page with the answer"
        where = f"compare selects them from the history as {selection}; " if stored else "not stored in the history; "
        return head + where + page
    if not stored:
        return head + "not stored in the history (--no-history)"
    return (head + f"compare and report select them from the history as {selection} (compile-lab report {selection} "
            f"-o tune.html makes a page of its runs)")


def answer_lines(result: TuneResult, modes: Mapping[str, Mapping[str, Any]] | None = None,
                 kept: tuple[str | None, bool] = (None, True)) -> list[tuple[str, bool]]:
    """The answer's lines (see :func:`answer_text`), each with whether it is prose that may fold (code never does:
    it is pasted as it is). ``kept``: the ``--json`` file and whether the history has the runs
    (:func:`closing_line`)."""
    code = code_lines(result, modes)
    lines = [*[(line, True) for line in lead_lines(result)],
             *[(line, False) for line in code],
             *[(line, True) for line in figure_lines(result)],
             ("", True), ("candidates (speedup over eager in their own processes):", True)]
    shown = shows_screened(result.standings)
    for name, screened, latest, standing in result_rows(result):
        lines.append((f"  {name}: {latest}{_screened_part(screened, latest, shown)}: {standing}", True))
    notes = [*(result.confirmation.notes if result.confirmation else ()), *result.notes]
    lines += [(f"note: {note}", True) for note in notes]
    lines.append((closing_line(result, *kept), True))
    return lines


def answer_text(result: TuneResult, modes: Mapping[str, Mapping[str, Any]] | None = None,
                kept: tuple[str | None, bool] = (None, True)) -> str:
    """The whole answer as plain text, unfolded (the candidates one per line, ``name: latest, screened X:
    standing``, the screened figure where it adds something): what ``y`` copies in the app, and the ``--json``
    export's ``text`` (``kept``: :func:`answer_lines`)."""
    return "\n".join(line for line, _ in answer_lines(result, modes, kept))


def fold_answer(lines: Sequence[tuple[str, bool]], width: int) -> str:
    """:func:`answer_lines` as text, each prose line folded to ``width`` with a hanging indent (as the CLI prints
    it), each code line folded where it stays Python (:func:`~tui.present.code_fold.fold_code`: a screen's rows are
    what a terminal's selection copies)."""
    folded: list[str] = []
    for line, prose in lines:
        if width <= 0:
            folded.append(line)
        else:
            folded.extend(hanging_lines(line, width) if prose else fold_code(line, width))
    return "\n".join(folded)
