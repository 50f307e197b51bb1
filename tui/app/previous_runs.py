"""Previous sessions' runs: read at start off the UI thread, in chunks, shown first in the table, ``h`` hides them.

The history file is read in a thread once the first frame is drawn (:meth:`History.iter_load`:
decoding costs about 0.5 ms a line). The thread also makes each row's cells from the stored
summary (:func:`history_cells`, ~0.1 ms a row), and posts a
:class:`~tui.app.messages.HistoryLoaded` per chunk: the first :data:`FIRST_CHUNK` runs show
within a moment, then :data:`CHUNK` at a time, each chunk costing the UI thread a few
milliseconds; the next chunk is decoded once the previous one is drawn. The table follows the newest row at
most every :data:`FOLLOW_EVERY_S` and at the end, in a frame after the chunk's own, and the next chunk waits for
that follow to be drawn too. Three things keep the
UI thread from waiting on the loader: the GIL is offered after every line and row (a thread
that holds it runs 5 ms before it is asked to let go, and the UI thread needs it for every turn
of its loop: 0.2 s stalls without), the objects made are frozen out of the cyclic GC
(:func:`_freeze`: 0.6 to 1 s full collections without), and nothing big is done at once.
The records join the app's model as final; whether they are rows is the main screen's
``show_history`` (saved in the config), and ``h`` swaps the table's rows in one step.
:class:`PreviousRuns` is a part of the app; the records join the controller's model
(:meth:`~tui.app.controller.LabController.add_history`).
"""

from __future__ import annotations

import logging
import contextlib
import gc
import threading
import time
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from textual.app import App
from textual.worker import get_current_worker

from tui.app.components.results_table import Cell, history_cells
from tui.app.messages import HistoryLoaded

if TYPE_CHECKING:
    from tui.app.controller import LabController
    from tui.app.main_screen import MainScreen
    from tui.engine.store.results import RunRecord

__all__ = ["PreviousRuns", "CHUNK", "FIRST_CHUNK"]

logger = logging.getLogger(__name__)

FIRST_CHUNK = 40
"""Runs in the first chunk, about a screenful: decoded in 20 ms (0.2 s while the app draws its
first frames on a busy 2-core box, as the loader lets the UI thread go first)."""

CHUNK = 400
"""Runs in each later chunk. 400, not 500: the gpu and node columns (issue 16) made a 500-run chunk cost the
UI thread 72-75 ms under Python 3.10 and once 101 ms with the suite running, over the 100 ms budget the
20,000-line test holds; 400 cost 37-57 ms there and the whole history still loaded in 11-12 s."""

FOLLOW_EVERY_S = 1.0
"""While the history loads, the table follows its newest row at most this often (and once more at the end): a
follow brings new rows into view, every visible line drawn anew (45-60 ms of the UI thread at 160x48 on a slow
2-core box), where rows added out of view cost the chunk's own 7-13 ms (docs/BENCHMARKS.md §12)."""


def _freeze() -> None:
    """Keep the objects made so far (the app's and each chunk's) out of the collector's full collections.

    The history's records and rows live as long as the app (about 60 tracked objects a run). A
    full collection walks every tracked object with the GIL held: with 20,000 runs (1.2 million
    objects) that is 0.6 to 1 s during which the UI thread cannot run, and the collector runs one
    each time a quarter more objects were made, during the load and in every later long run
    (0.1 s already for the app's own objects at start). Young garbage is collected first, so
    what is frozen is (almost only) alive; the app unfreezes at exit (:meth:`PreviousRuns.unfreeze`).
    """
    gc.collect(1)
    gc.freeze()


def _rows_of(records: list[RunRecord], problems: list[str], path: str) -> tuple[list[RunRecord], list[dict[str, Cell]]]:
    """The records the table can show and their cells (in the loader's thread); a problem for each other one."""
    shown, cells = [], []
    for record in records:
        time.sleep(0)  # the GIL to the UI thread, if it waits (see History.iter_load)
        try:
            cells.append(history_cells(record))  # from its stored summary: cheap, and cached in the record
        except Exception as exc:  # a record the table cannot show must not end the load: a named problem
            logger.warning("history run %s cannot be shown", record.run_id, exc_info=exc)
            problems.append(f"{path}: run {record.run_id} cannot be shown ({exc}), skipped")
            continue
        shown.append(record)
    return shown, cells


def measure_data_dir(app: App[Any], lab: LabController, warn: bool = True) -> None:
    """The data dir's size for the help screen (in a thread: it walks the directory), and (``warn``) a notice when
    the runs directory is near its cap; measured once the history loaded (with the notice) and again each time
    the help opens (the help's line says it)."""
    from tui.engine.store.prune import data_usage

    try:
        usage = data_usage()
    except OSError as exc:
        logger.warning("the data dir could not be measured", exc_info=exc)
        return
    lab.data_usage_line = usage.line()
    if warn and usage.cap_bytes and usage.runs_bytes > 0.8 * usage.cap_bytes and app.is_running:
        with contextlib.suppress(RuntimeError):  # the app closed meanwhile
            app.call_from_thread(app.notify, f"Data dir {usage.line()}", title="Data dir", severity="warning",
                                 markup=False, timeout=10)


class PreviousRuns:
    """Loading and showing previous sessions' runs."""

    def __init__(self, app: App[Any], lab: LabController, screen: Callable[[], MainScreen],
                 refresh_baseline: Callable[[], None]) -> None:
        self.app, self.lab, self.screen, self._refresh_baseline = app, lab, screen, refresh_baseline
        self.frozen = False
        """Whether the loader froze objects out of the collector (given back at exit: :meth:`unfreeze`)."""
        self._gc_lock = threading.Lock()
        self._closed = False
        """Set at exit (:meth:`unfreeze`): the loader freezes nothing after it."""
        self._followed_at: float | None = None
        self._unfollowed: str | None = None
        """The newest stored run added since the table last followed one (followed at the end of the load)."""
        self._follows = 0
        """Follows asked so far: a chunk's deferred follow runs only if no later one was asked meanwhile."""
        self.done = False
        """Whether the load's last message is handled: every stored row is in the table and followed."""

    def load(self) -> None:
        """Read previous runs off the UI thread and post them chunk by chunk, then the problems."""
        self.app.run_worker(self._load, thread=True, group="history", exit_on_error=False,
                            description="load history")

    def _load(self) -> None:
        app, history = self.app, self.lab.history
        worker = get_current_worker()
        problems: list[str] = []
        try:
            for records, found in history.iter_load(chunk=CHUNK, first=FIRST_CHUNK):
                if worker.is_cancelled:
                    return
                problems.extend(found)
                records, cells = _rows_of(records, problems, str(history.path))
                if not records:
                    continue
                drawn = threading.Event()
                app.post_message(HistoryLoaded(records, [], cells, final=False, drawn=drawn))
                # The next chunk is decoded once this one is drawn: the two would share the GIL,
                # and the UI thread's part (the rows, then a redraw) would take twice as long.
                for _ in range(10):  # 2 s at most: a chunk never waits on a screen that does not draw
                    if drawn.wait(0.2):
                        break
                    if worker.is_cancelled or not app.is_running:
                        return  # the app is closing
                if worker.is_cancelled or not self._freeze_unless_closed():
                    return
        except Exception as exc:  # iter_load is tolerant; this is the last guard: a named problem
            logger.warning("the history could not be read", exc_info=exc)
            problems.append(f"history could not be read: {exc}")
        app.post_message(HistoryLoaded([], problems, final=True))
        measure_data_dir(app, self.lab)

    def loaded(self, message: HistoryLoaded) -> None:
        """A chunk of previous runs joins the model as final (runs this session knows stay as they are)."""
        try:
            table = self.screen().table
        except (KeyError, LookupError):  # the app is closing: its screen is gone
            if message.drawn is not None:
                message.drawn.set()
            return
        added = self.lab.add_history(message.records, table.is_history)
        followed = None
        if added:
            rows = [(message.records[i].run_id, message.cells[i]) for i in added]
            now = time.monotonic()
            self.screen().add_history_rows(rows, follow=False)
            self._unfollowed = rows[-1][0]  # until its follow is done (a dropped callback leaves it to the end)
            if self._followed_at is None or now - self._followed_at >= FOLLOW_EVERY_S:
                self._followed_at, followed = now, rows[-1][0]
            if self.lab.baseline.rows:
                self._refresh_baseline()  # earlier sessions' rows may compare with the baseline
        if message.final and self._unfollowed is not None:
            self._follows += 1  # a chunk's follow still pending is older: dropped
            self.screen().follow_stored(self._unfollowed)
            self._unfollowed = None
        if message.final:
            self.done = True
        if followed is not None:
            self._follows += 1
            self.app.call_after_refresh(self._follow_chunk, followed, message.drawn, self._follows)
        elif message.drawn is not None:
            self.app.call_after_refresh(message.drawn.set)
        if message.final and message.problems:
            first = message.problems[0]
            more = f" (+{len(message.problems) - 1} more)" if len(message.problems) > 1 else ""
            self.app.notify(first + more, title="History", severity="warning", markup=False, timeout=8)

    def _follow_chunk(self, run_id: str, drawn: threading.Event | None, number: int) -> None:
        """The table follows a chunk's last row once the chunk is drawn, and the loader goes on once the follow is:
        a follow draws every visible line anew, which in the chunk's own frame made one piece of UI work of both.
        A follow asked after this one (``number``) makes it stale: the cursor never goes back to an older row."""
        if number == self._follows:
            try:
                self.screen().follow_stored(run_id)
            except (KeyError, LookupError):  # the app is closing: its screen is gone
                logger.debug("the history's follow of %s was dropped: the screen is gone", run_id)
            if self._unfollowed == run_id:
                self._unfollowed = None
        if drawn is not None:
            self.app.call_after_refresh(drawn.set)

    def _freeze_unless_closed(self) -> bool:
        """Freeze (:func:`_freeze`) unless the app is closing; whether it did. Under the lock :meth:`unfreeze` takes:
        a loader between two chunks when the app quit froze the objects after the exit had unfrozen them."""
        with self._gc_lock:
            if self._closed:
                return False
            _freeze()
            self.frozen = True
            return True

    def unfreeze(self) -> None:
        """Give the frozen objects back to the collector (at exit); the loader freezes nothing after this."""
        with self._gc_lock:
            self._closed = True
            if self.frozen:
                gc.unfreeze()
                self.frozen = False

    def toggle(self) -> None:
        """Show or hide previous sessions' runs."""
        screen = self.screen()
        screen.show_history = not screen.show_history  # the screen rebuilds the table's rows
        self.lab.config.show_history = screen.show_history
        if screen.show_history:
            self.app.notify(f"Showing {len(self.lab.history_ids)} previous run(s).")
        else:
            self.app.notify("Previous runs hidden.")
