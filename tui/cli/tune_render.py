"""``compile-lab tune``'s output: progress lines on stderr; the answer (code, figures, runner-up table) on stdout."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tui.engine.tune.answer import CONFIRMED, NOTHING_BEATS, Against, Progress, TuneResult, nothing_beats_text
from tui.engine.tune.code import compile_call, config_form
from tui.engine.tune.driver import TuneListener
from tui.engine.tune.search import Standing, ranked
from tui.present.format import fmt_mib, fmt_seconds, fmt_speedup

__all__ = ["TuneLines", "print_answer", "against_text", "standing_rows"]


def _say(console: Any, text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


class TuneLines(TuneListener):
    """One line per event of the search on stderr, flushed as it happens (``quiet``: errors only)."""

    def __init__(self, console: Any, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet

    def _line(self, text: str) -> None:
        if not self.quiet:
            _say(self.console, text)

    def note(self, text: str) -> None:
        self._line(f"note: {text}")

    def error(self, text: str) -> None:
        _say(self.console, f"compile-lab: error: {text}")

    def stage_started(self, index: int, names: Sequence[str], iters: int) -> None:
        what = "screening" if index == 0 else f"stage {index + 1}"
        self._line(f"{what}: {len(names)} candidate(s), {iters} iterations per side, one fresh process each")

    def candidate_scored(self, standing: Standing) -> None:
        score = standing.score
        state = f" ({standing.gone})" if standing.gone else ""
        if score.out:
            self._line(f"  {standing.name}: out: {score.out}")
            return
        self._line(f"  {standing.name}: {fmt_speedup(score.value, score.low, score.high)} over eager "
                   f"({score.processes} process(es)){state}")

    def progress(self, progress: Progress) -> None:
        leader = progress.incumbent.name if progress.incumbent is not None else "none yet"
        self._line(f"    leader {leader}; {progress.left} in the race; {max(0.0, progress.time_left_s):.0f} s left; "
                   f"{progress.runs} run(s)")

    def confirming(self, standing: Standing, repeats: int) -> None:
        self._line(f"confirming {standing.name}: {repeats} fresh processes of it and {repeats} of the default "
                   "compile, interleaved")


def against_text(against: Against) -> str:
    """``1.19× [1.17, 1.21] faster`` (the verdict's word after the interval)."""
    text = fmt_speedup(against.gain, against.low, against.high)
    return f"{text} {against.verdict}" if against.verdict else text


def _standing_text(standing: Standing, last_stage: int) -> str:
    """Why it left the race; for one still in, whether the budget let it run in the last stage."""
    if standing.gone:
        return standing.gone
    if standing.stage < 0:
        return "in the race, never run (the budget ran out)"
    if standing.stage < last_stage:
        return f"in the race, last run in stage {standing.stage + 1} (the budget ran out)"
    return "in the race to the end"


def standing_rows(standings: Sequence[Standing]) -> list[tuple[str, str, str, str]]:
    """(candidate, screened, latest with interval and processes, standing) per candidate, the race's order."""
    last_stage = max((s.stage for s in standings), default=0)
    rows = []
    for standing in ranked(standings):
        screened = standing.screened
        first = fmt_speedup(screened.value) if screened is not None else "–"
        score = standing.score
        latest = fmt_speedup(score.value, score.low, score.high)
        if score.processes > 1:
            latest += f" ({score.processes} proc.)"
        rows.append((standing.name, first, latest, _standing_text(standing, last_stage)))
    return rows


def print_answer(result: TuneResult, console: Any, modes: Mapping[str, Mapping[str, Any]] | None = None,
                 quiet: bool = False) -> None:
    """The answer: the outcome, the code, the figures, the runner-up table and the notes."""
    from rich.table import Table

    _say(console, _headline(result))
    if result.winner is not None and result.winner_options is not None and result.outcome != NOTHING_BEATS \
            and not result.winner.candidate.is_default:
        _say(console, "")
        if result.outcome != CONFIRMED:
            _say(console, "# unconfirmed: the race's leader, not shown faster in fresh processes")
        _say(console, "# as torch.compile's arguments:")
        _say(console, compile_call(result.winner_options))
        _say(console, "")
        _say(console, "# or as torch._inductor.config settings:")
        _say(console, config_form(result.winner_options, modes))
    _figures(result, console)
    if quiet:
        return
    table = Table(title="Candidates (speedup over eager in their own processes)", title_justify="left")
    for column in ("candidate", "screened", "latest [95% interval]", "standing"):
        table.add_column(column, overflow="fold")
    for row in standing_rows(result.standings):
        table.add_row(*row)
    console.print(table)
    for note in result.confirmation.notes if result.confirmation else ():
        _say(console, f"note: {note}")
    _say(console, f"tune id {result.tune_id}: {result.runs} run(s) in {fmt_seconds(result.elapsed_s)} s "
                  f"(compare, report and the app's details read them from the history)")


def _headline(result: TuneResult) -> str:
    name = result.winner.name if result.winner is not None else "none"
    if result.outcome == CONFIRMED:
        return f"best: {name}, confirmed faster than the default compile in fresh processes"
    if result.outcome == NOTHING_BEATS:
        return nothing_beats_text(result.threshold)
    verdict = result.confirmation.vs_default.verdict if result.confirmation else None
    reasons = [result.stopped, f"the confirmation reads {verdict}" if verdict else None, result.incomplete]
    why = "; ".join(r for r in reasons if r) or "not confirmed"
    return f"best so far: {name} (unconfirmed: {why})"


def _figures(result: TuneResult, console: Any) -> None:
    confirmation = result.confirmation
    if confirmation is None:
        return
    processes = confirmation.processes
    _say(console, "")
    _say(console, f"confirmation ({processes[0]} + {processes[1]} fresh processes, 95% intervals across processes):")
    _say(console, f"  {result.winner.name if result.winner else 'winner'} vs default compile: "
                  f"{against_text(confirmation.vs_default)}")
    _say(console, f"  {result.winner.name if result.winner else 'winner'} vs eager: "
                  f"{against_text(confirmation.vs_eager)}")
    _say(console, f"  default compile vs eager: {against_text(confirmation.default_vs_eager)}")
    compile_w, compile_d = confirmation.compile_s
    _say(console, f"  compile time: {fmt_seconds(compile_w)} s (default compile {fmt_seconds(compile_d)} s)")
    peak_w, peak_d = confirmation.peak_mb
    if peak_w is not None or peak_d is not None:
        _say(console, f"  peak memory: {fmt_mib(peak_w)} (default compile {fmt_mib(peak_d)})")
    if confirmation.amortized_gain is not None and result.objective.calls:
        _say(console, f"  with the compile time over {result.objective.calls} calls: "
                      f"{confirmation.amortized_gain:.2f}x the default compile (point estimate; compile time has no "
                      "interval)")
