"""The version handshake: a node runs a configuration only with the caller's compile-lab, Ray and Python.

The node's task streams its :class:`Versions` (and where it runs) as its first item, before it
starts anything. A node whose versions differ from the caller's refuses the run itself, and the
caller checks the answer again (a node with another compile-lab may not check the same way):
either way the row fails with one line naming what differs.

Why these three: the worker's events are compile-lab's protocol (the same compile-lab on both
sides reads them the same way), Ray pickles the task and its items between the two
interpreters, and Python's minor version decides what pickles and bytecode mean. A patch
release of Python changes none of that.
"""

from __future__ import annotations

import platform
import socket
from dataclasses import dataclass, field
from typing import Any

from tui.typed import JsonRecord, decode_fields

__all__ = ["Versions", "Hello", "local_versions", "mismatch", "DOC"]

DOC = "docs/CLUSTER.md"


@dataclass(frozen=True)
class Versions(JsonRecord):
    """What must match between the caller and a node: compile-lab's, Ray's and Python's minor version."""

    compile_lab: str | None = None
    ray: str | None = None
    python: str | None = None
    """``3.11``: major.minor only."""


@dataclass(frozen=True)
class Hello(JsonRecord):
    """A node's first streamed item: its versions, where the task runs, and its refusal (None: it runs)."""

    versions: Versions = field(default_factory=Versions)
    node: str | None = None
    """The node's hostname (the row's ``env.node``)."""
    node_id: str | None = None
    """Ray's id of the node (hex): where a kill task is sent."""
    node_ip: str | None = None
    pid: int | None = None
    """The pid of the Ray worker process running the task."""
    refused: str | None = None

    @classmethod
    def parse(cls, data: Any) -> Hello:
        """A hello from a streamed item (fields of the wrong type take their defaults)."""
        return decode_fields(cls, data, where="hello")[0]


def local_versions(ray_version: str | None = None) -> Versions:
    """This interpreter's versions (``ray_version``: Ray's, when the caller has it already)."""
    from tui import __version__

    if ray_version is None:
        import ray  # only ever called where Ray is in use

        ray_version = ray.__version__
    return Versions(compile_lab=__version__, ray=ray_version,
                    python=".".join(platform.python_version_tuple()[:2]))


def hostname() -> str:
    """This machine's hostname (what the worker reports as ``env.node``)."""
    return socket.gethostname()


def mismatch(caller: Versions, node: Versions, node_name: str | None) -> str | None:
    """One line naming every version that differs between ``node`` and ``caller``; None when they match."""
    names = (("compile-lab", "compile_lab"), ("Ray", "ray"), ("Python", "python"))
    differ = [f"{label} {getattr(node, name) or 'unknown'} there, {getattr(caller, name) or 'unknown'} here"
              for label, name in names if getattr(node, name) != getattr(caller, name)]
    if not differ:
        return None
    return (f"node {node_name or 'unknown'} was refused: {'; '.join(differ)} (every node needs the caller's "
            f"compile-lab, Ray and Python minor version: {DOC})")
