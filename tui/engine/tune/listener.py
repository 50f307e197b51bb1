"""What a front end hears from a tune: the driver's calls, each a no-op here."""

from __future__ import annotations

from collections.abc import Sequence

from tui.engine.tune.answer import Progress
from tui.engine.tune.search import Standing

__all__ = ["TuneListener"]


class TuneListener:
    """What a front end hears from a tune (all on the event loop's thread)."""

    def stage_started(self, index: int, names: Sequence[str], iters: int) -> None:
        """A stage begins: the candidates it runs, and their iterations per side."""

    def candidate_scored(self, standing: Standing) -> None:
        """A candidate's run ended and its score (and standing) is known."""

    def progress(self, progress: Progress) -> None:
        """After every run: the incumbent, the candidates left, the time left."""

    def confirming(self, standing: Standing, repeats: int) -> None:
        """The confirmation begins: ``repeats`` processes of the winner and of the default compile."""

    def note(self, text: str) -> None:
        """Something the user should know (a stage skipped for the budget, a combination added)."""
