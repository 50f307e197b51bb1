"""What ``--cluster`` accepts, and the one-line refusals around it (no Ray imported here)."""

from __future__ import annotations

from tui.engine.catalog import echo

__all__ = ["ClusterError", "NEEDS_RAY", "RAY_CLIENT_REFUSED", "DEFAULT_CPUS", "MAX_CPUS", "CPUS_ALLOWED",
           "parse_address"]

NEEDS_RAY = "--cluster needs Ray: pip install 'compile-lab[cluster]'"
RAY_CLIENT_REFUSED = (
    "--cluster: a ray:// address is Ray Client, which cannot stream a task's results (Ray's own limit, "
    "ray-project/ray#43357); give the head's GCS address (HOST:6379) from a machine the nodes reach, or run "
    "compile-lab on the cluster (ray job submit -- compile-lab sweep ... --cluster auto): docs/CLUSTER.md"
)
DEFAULT_CPUS = 1.0
"""The CPUs each run asks Ray for (``--cluster-cpus``); a CUDA run asks for one GPU besides."""
MAX_CPUS = 1024
"""The most CPUs a run may ask for: more is a typo, not a node."""
CPUS_ALLOWED = f"a number of CPUs above 0, at most {MAX_CPUS}"
"""What ``--cluster-cpus`` allows, as its refusals say it."""


class ClusterError(Exception):
    """The cluster cannot be used as asked: the message is one line."""


def parse_address(text: str) -> str:
    """``auto`` or ``HOST:PORT`` (a Ray head's GCS address) as given; ClusterError names what is allowed."""
    text = text.strip()
    if text == "auto":
        return text
    if text.startswith("ray://"):
        raise ClusterError(RAY_CLIENT_REFUSED)
    host, sep, port = text.rpartition(":")
    if not sep or not host or "/" in text or not port.isdigit() or not 0 < int(port) < 65536:
        raise ClusterError(f"--cluster: {echo(text)} is not allowed (allowed: auto, the Ray cluster this machine "
                           "is configured for, or HOST:PORT, its head's GCS address, e.g. 10.0.0.1:6379)")
    return text
