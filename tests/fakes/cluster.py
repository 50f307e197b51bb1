"""A fake Ray head for the cluster tests' transports: it answers until ``lose(reason)`` is called."""

from __future__ import annotations

import asyncio

__all__ = ["FakeHead"]


class FakeHead:
    """The head part of a fake :class:`~tui.engine.cluster.transport.Transport`: ``head_lost`` and ``lost()``."""

    def __init__(self) -> None:
        self.head_lost: str | None = None
        self._lost = asyncio.Event()

    def lose(self, reason: str) -> None:
        self.head_lost = reason
        self._lost.set()

    async def lost(self) -> str:
        await self._lost.wait()
        assert self.head_lost is not None
        return self.head_lost

    async def aclose(self) -> None:
        pass
