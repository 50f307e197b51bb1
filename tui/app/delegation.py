"""Attributes of the app that are another object's: the controller's state, a part's action.

``records = FromLab()`` on the App reads (and writes) ``app.lab.records``; ``action_run =
FromPart("queueing", "run")`` is ``app.queueing.run``. The owner stays the one place that defines
the attribute; the app only names where it lives, so a binding, the palette or a test can reach it
through the app. No textual.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FromLab", "FromPart"]


class FromPart:
    """A class attribute that is ``getattr(instance.<part>, name)`` (a bound method, or a value); ``part`` may be
    a dotted path (``"lab.baseline"``); ``name`` defaults to the attribute's own, less leading underscores."""

    def __init__(self, part: str, name: str | None = None, *, writable: bool = False) -> None:
        self.part, self.name, self.writable = part, name, writable

    def __set_name__(self, owner: type, attribute: str) -> None:
        if self.name is None:
            self.name = attribute.lstrip("_")

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return getattr(self._owner(instance), self.name or "")

    def __set__(self, instance: Any, value: Any) -> None:
        if not self.writable:
            raise AttributeError(f"{self.name} is {self.part}'s: set it there")
        setattr(self._owner(instance), self.name or "", value)

    def _owner(self, instance: Any) -> Any:
        owner = instance
        for step in self.part.split("."):  # "lab.groups": the controller's RowGroups
            owner = getattr(owner, step)
        return owner


class FromLab(FromPart):
    """A class attribute that is the app's controller's (``app.lab``) attribute of that name."""

    def __init__(self, name: str | None = None, *, writable: bool = False) -> None:
        super().__init__("lab", name, writable=writable)
