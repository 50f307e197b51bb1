"""One row per configuration repeated across processes (``--repeat`` in the app).

The session gives the repeats of a configuration one ``group_id``: the first one's run id, which
is also the key of the group's one row in the results table. The other processes have no row;
their events mark the group's row dirty. What the row shows comes from
:meth:`GroupRows.row_record`: the group's :class:`~tui.engine.repeats.GroupRecord` (pooled
statistics, the interval across processes, the group's verdict), rebuilt off the UI thread each
time one of its processes has been saved, or, before that, the first process's own record. Its
status cell follows the process that runs now (:meth:`GroupRows.group_members`).
:class:`GroupRows` is mixed into the app.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from tui.app.app import CompileLabApp
    from tui.engine.results import RunRecord

__all__ = ["GroupRows"]


class GroupRows:
    """The app's groups of runs: members by group id, the row of each (a mixin of the app)."""

    def _init_groups(self: CompileLabApp) -> None:
        self.groups: dict[str, RunRecord] = {}
        """Each group's latest row (a GroupRecord), by group id; absent until a process was saved."""
        self._members: dict[str, list[RunRecord]] = {}
        self._regroup_generation: dict[str, int] = {}
        self._regrouping: set[str] = set()

    def _add_members(self: CompileLabApp, records: Iterable[RunRecord]) -> None:
        """Remember the records of this session's groups (queued by the user or by ``--repeat auto``)."""
        for record in records:
            if record.group_id is not None:
                self._members.setdefault(record.group_id, []).append(record)

    def group_members(self: CompileLabApp, run_id: str) -> list[RunRecord]:
        """The runs of the row ``run_id``: a group's processes in repeat order, else the run alone."""
        members = self._members.get(run_id)
        if members:
            return sorted(members, key=lambda r: r.repeat)
        record = self.records.get(run_id)
        return [] if record is None else [record]

    def row_of(self: CompileLabApp, record: RunRecord) -> str:
        """The key of the row that shows ``record``: its group's, for a process of this session's groups."""
        return record.group_id if record.group_id in self._members else record.run_id

    def row_record(self: CompileLabApp, run_id: str) -> RunRecord | None:
        """What the row ``run_id`` shows: its group's row when there is one, else the run."""
        return self.groups.get(run_id) or self.records.get(run_id)

    @property
    def regrouping(self) -> bool:
        """Whether a group's row is being rebuilt."""
        return bool(self._regrouping)

    def _regroup(self: CompileLabApp, group_id: str) -> None:
        """Rebuild a group's row off the UI thread (one of its processes was saved)."""
        members = self.group_members(group_id)
        if len(members) < 2 or self._shutting_down:
            return
        generation = self._regroup_generation.get(group_id, 0) + 1
        self._regroup_generation[group_id] = generation
        self._regrouping.add(group_id)
        self.run_worker(self._regrouped(group_id, members, generation), group="regroup", exit_on_error=False)

    async def _regrouped(self: CompileLabApp, group_id: str, members: list[RunRecord], generation: int) -> None:
        row = None
        with contextlib.suppress(Exception):  # a view never dies on data; the row keeps what it showed
            row = await asyncio.to_thread(_group_row, members)
        if self._regroup_generation.get(group_id) != generation:
            return  # a later process ended meanwhile: its rebuild is the one to show
        self._regrouping.discard(group_id)
        if row is not None:
            self.groups[group_id] = row
        self.main_screen.mark_dirty(group_id)


def _group_row(members: list[RunRecord]) -> RunRecord:
    from tui.engine.repeats import GroupRecord

    row = GroupRecord.of(members)
    row.summary()  # computed here, off the UI thread
    return row
