"""One row per configuration repeated across processes (``--repeat`` in the app); no textual.

The session gives the repeats of a configuration one ``group_id``: the first one's run id, which
is also the key of the group's one row in the results table. The other processes have no row;
their events mark the group's row dirty. What the row shows comes from
:meth:`RowGroups.row_record`: the group's :class:`~tui.engine.store.repeats.GroupRecord` (pooled
statistics, the interval across processes, the group's verdict), rebuilt off the event loop each
time one of its processes has been saved (:meth:`RowGroups.rebuild`), or, before that, the first
process's own record. Its status cell follows the process that runs now (:meth:`RowGroups.members`).
The controller (:class:`~tui.app.controller.LabController`) owns one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any
from collections.abc import Coroutine, Iterable

if TYPE_CHECKING:
    from tui.engine.store.results import RunRecord

__all__ = ["RowGroups"]

logger = logging.getLogger(__name__)


class RowGroups:
    """The session's groups of runs: members by group id, the row of each."""

    def __init__(self, records: dict[str, RunRecord]) -> None:
        self._records = records
        self.rows: dict[str, RunRecord] = {}
        """Each group's latest row (a GroupRecord), by group id; absent until a process was saved."""
        self._members: dict[str, list[RunRecord]] = {}
        self._generation: dict[str, int] = {}
        self._rebuilding: set[str] = set()

    def add(self, records: Iterable[RunRecord]) -> None:
        """Remember the records of this session's groups (queued by the user or by ``--repeat auto``)."""
        for record in records:
            if record.group_id is not None:
                self._members.setdefault(record.group_id, []).append(record)

    def members(self, run_id: str) -> list[RunRecord]:
        """The runs of the row ``run_id``: a group's processes in repeat order, else the run alone."""
        members = self._members.get(run_id)
        if members:
            return sorted(members, key=lambda r: r.repeat)
        record = self._records.get(run_id)
        return [] if record is None else [record]

    def row_of(self, record: RunRecord) -> str:
        """The key of the row that shows ``record``: its group's, for a process of this session's groups."""
        group_id = record.group_id
        return group_id if group_id is not None and group_id in self._members else record.run_id

    def row_record(self, run_id: str) -> RunRecord | None:
        """What the row ``run_id`` shows: its group's row when there is one, else the run."""
        return self.rows.get(run_id) or self._records.get(run_id)

    @property
    def regrouping(self) -> bool:
        """Whether a group's row is being rebuilt."""
        return bool(self._rebuilding)

    def rebuild(self, group_id: str) -> Coroutine[Any, Any, bool] | None:
        """The work that rebuilds a group's row off the event loop (None: a group of one has no row of its own).

        The work returns whether it replaced the row: a rebuild started later wins.
        """
        members = self.members(group_id)
        if len(members) < 2:
            return None
        generation = self._generation.get(group_id, 0) + 1
        self._generation[group_id] = generation
        self._rebuilding.add(group_id)
        return self._rebuilt(group_id, members, generation)

    async def _rebuilt(self, group_id: str, members: list[RunRecord], generation: int) -> bool:
        row = None
        try:
            row = await asyncio.to_thread(_group_row, members)
        except Exception:  # a view never dies on data; the row keeps what it showed
            logger.exception("the row of group %s could not be rebuilt", group_id)
        if self._generation.get(group_id) != generation:
            return False  # a later process ended meanwhile: its rebuild is the one to show
        self._rebuilding.discard(group_id)
        if row is not None:
            self.rows[group_id] = row
        return True


def _group_row(members: list[RunRecord]) -> RunRecord:
    from tui.engine.store.repeats import GroupRecord

    row = GroupRecord.of(members)
    row.summary()  # computed here, off the UI thread
    return row
