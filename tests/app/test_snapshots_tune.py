"""SVG snapshots (pytest-textual-snapshot) of the tune screen at 80x24: the leaderboard mid-race, and the answer.

Made from fixed boards (no worker runs), so the figures and the tune id do not move. Update after a
deliberate change with ``pytest tests/app/test_snapshots_tune.py --snapshot-update`` and look at the
new SVGs before committing them.
"""

from __future__ import annotations

import dataclasses

from textual.app import App

from tui.app.components.tune_screen import TuneScreen
from tui.app.tune_run import Board
from tui.engine.options import RunOptions
from tui.engine.tune.answer import CONFIRMED, Against, Confirmation, TuneResult
from tui.engine.tune.objective import Score
from tui.engine.tune.search import Standing
from tui.engine.tune.space import Candidate
from tui.present.tune_answer import answer_lines, answer_text, headline

LAYOUT = Candidate((("layout_optimization", False),))
STANDINGS = (
    Standing(LAYOUT, Score(1.19, 1.17, 1.21, 2), stage=1, screened=Score(1.18, 1.12, 1.25, 1)),
    Standing(Candidate(), Score(0.86, 0.84, 0.88, 2), stage=1, screened=Score(0.85, 0.80, 0.90, 1)),
    Standing(Candidate((("mode", "max-autotune-no-cudagraphs"),)), Score(0.83, 0.80, 0.86, 1), stage=0,
             gone="dropped: below layout_optimization=False (≤ 0.860x vs ≥ 1.120x)"),
    Standing(Candidate((("cpp_wrapper", True),)), Score(out="failed: compile failed: no C++ compiler"), stage=0,
             gone="out: failed: compile failed: no C++ compiler"),
    Standing(Candidate((("shape_padding", False),)), Score(0.87, 0.85, 0.89, 1), stage=0,
             gone="cut: ranked 3 of 4 after stage 1"),
)
RACING = Board(tune_id="01JTUNE0000000000000000000", what="cnn batch=64 on cuda, objective device time",
               budget_s=600.0, stage="stage 2: 2 candidate(s), 100 iterations per side", incumbent=STANDINGS[0],
               standings=STANDINGS, time_left_s=412.0, runs=7,
               note="added layout_optimization=False freezing=True: layout_optimization=False + freezing=True, "
                    "the 2 candidates that each beat the default compile, combined")


def _result() -> TuneResult:
    options = dataclasses.replace(LAYOUT.apply(RunOptions(workload="cnn", device="cuda")), iters=50)
    confirmation = Confirmation(vs_default=Against(1.19, 1.17, 1.21, "faster"),
                                vs_eager=Against(1.02, 1.00, 1.04, "inconclusive"),
                                default_vs_eager=Against(0.86, 0.84, 0.88, "slower"), processes=(3, 3),
                                compile_s=(31.2, 29.8), peak_mb=(812.0, 790.0))
    return TuneResult(tune_id=RACING.tune_id, outcome=CONFIRMED, winner=STANDINGS[0], confirmed=STANDINGS[0],
                      winner_options=options,
                      confirmation=confirmation, standings=STANDINGS, elapsed_s=472.0, runs=13)


class TuneSnapshotApp(App):
    TITLE = "compile-lab"

    def __init__(self, board: Board) -> None:
        super().__init__()
        self.board = board

    def on_mount(self) -> None:
        self.push_screen(TuneScreen(self.board))


def test_snapshot_the_leaderboard_mid_race(snap_compare):
    assert snap_compare(TuneSnapshotApp(RACING), terminal_size=(80, 24))


def test_snapshot_the_answer(snap_compare):
    result = _result()
    done = dataclasses.replace(RACING, done=True, stage="ended: confirmed", time_left_s=None, runs=13, note="",
                               headline=headline(result), answer=answer_text(result),
                               answer_lines=tuple(answer_lines(result)))
    assert snap_compare(TuneSnapshotApp(done), terminal_size=(80, 24))
