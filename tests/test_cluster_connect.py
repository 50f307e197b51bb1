"""``--cluster``: what a cluster run refuses before anything runs, in one line, and how an address is checked before
Ray is asked (no head there, a TCP server that is not Ray's GCS); the runs that fit at once. No Ray cluster: the
caller's side against fakes is tests/test_cluster.py, a real local Ray cluster tests/test_cluster_ray.py.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time

import pytest

from tui import cli
from tui.engine import cluster
from tui.engine.cluster.address import NEEDS_RAY, RAY_CLIENT_REFUSED


def _error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["sweep", "--cluster", "ray://head:10001"], RAY_CLIENT_REFUSED),
        (["sweep", "--cluster", "head"], "--cluster: 'head' is not allowed (allowed: auto, the Ray cluster this "
                                         "machine is configured for, or HOST:PORT, its head's GCS address, e.g. "
                                         "10.0.0.1:6379)"),
        (["sweep", "--cluster", "auto", "--trace", "traces"],
         "--cluster: --trace is not supported with a cluster (its files would be written on the node)"),
        (["run", "--cluster", "auto", "--torch-trace"],
         "--cluster: --torch-trace is not supported with a cluster (its files would be written on the node)"),
        (["run", "--cluster", "auto", "--tlparse"],
         "--cluster: --tlparse is not supported with a cluster (its files would be written on the node)"),
        (["sweep", "--cluster", "auto", "--python", sys.executable],
         "--cluster: --python is not supported with a cluster (the worker runs in the node's interpreter)"),
        (["run", "--cluster", "auto", "--device", "cuda:all"],
         "--cluster: --device cuda:all is not allowed (allowed: cpu, or cuda: Ray gives each run its GPU)"),
        (["run", "--cluster-cpus", "2"], "--cluster-cpus applies with --cluster only"),
        (["run", "--cluster", "auto", "--cluster-cpus", "0"],
         "--cluster-cpus: 0 is not allowed (allowed: a number of CPUs above 0, at most 1024)"),
        (["sweep", "--cluster", "auto", "--cluster-cpus", "four"],
         "--cluster-cpus: 'four' is not a number (allowed: a number of CPUs above 0, at most 1024)"),
        (["--cluster", "auto", "--cluster-cpus", "four"],  # the app's flag, refused before the app starts
         "--cluster-cpus: 'four' is not a number (allowed: a number of CPUs above 0, at most 1024)"),
    ],
)
def test_what_a_cluster_run_refuses_is_one_line_before_anything_runs(capsys, argv, line):
    assert cli.main(argv) == 2
    assert _error_lines(capsys) == [f"compile-lab: error: {line}"]


def test_cluster_without_ray_installed_is_one_line_exit_2(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if Ray were not installed
    assert cli.main(["sweep", "--param", "n=64,128", "--cluster", "auto"]) == 2
    assert _error_lines(capsys) == [f"compile-lab: error: {NEEDS_RAY}"]


class NodesOnly:
    """Ray as :func:`run_slots` and :func:`connect` see it: its nodes, and never initialised."""

    def __init__(self, *resources: dict) -> None:
        self._nodes = [{"Alive": True, "Resources": res} for res in resources] + [{"Alive": False, "Resources":
                                                                                   {"CPU": 64.0, "GPU": 8.0}}]

    def nodes(self):
        return self._nodes

    def is_initialized(self) -> bool:
        return False

    def init(self, **kwargs):
        raise AssertionError("ray.init must not be reached")


def test_the_runs_that_fit_at_once_count_live_nodes_gpus_and_cpus():
    from tui.engine.cluster.ray_transport import run_slots

    ray = NodesOnly({"CPU": 4.0, "GPU": 2.0}, {"CPU": 3.0}, {"CPU": 16.0, "GPU": 8.0})
    assert run_slots(ray, "cuda", 1) == 10
    assert run_slots(ray, "cuda", 4) == 1 + 4  # a GPU run needs its CPUs on the GPU's node
    assert run_slots(ray, "cpu", 2) == 2 + 1 + 8
    with pytest.raises(cluster.ClusterError, match=r"^--cluster h:1: the cluster shows no GPU \(a CUDA run asks"):
        run_slots(NodesOnly({"CPU": 8.0}), "cuda", 1, "h:1")
    with pytest.raises(cluster.ClusterError, match=r"no node has 32 CPUs for a run \(--cluster-cpus; the largest "
                                                   r"has 16\)$"):
        run_slots(ray, "cpu", 32, "h:1")


def test_an_address_where_no_head_listens_is_one_line_at_once():
    from tui.engine.cluster.ray_transport import connect

    with socket.socket() as probe:  # a port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(cluster.ClusterError) as refused:
        connect(NodesOnly(), f"127.0.0.1:{port}")
    assert str(refused.value).startswith(f"--cluster 127.0.0.1:{port}: no Ray head answers there "
                                         "(ConnectionRefusedError: ")


class LoopbackServer:
    """A TCP server on 127.0.0.1 that is not Ray: each connection gets ``answer`` (bytes, or None: silence)
    after the client's first bytes, then ``close`` decides whether it is closed. Never beyond the loopback."""

    def __init__(self, answer: bytes | None, close: bool = False, echo: bool = False) -> None:
        self.answer, self.close, self.echo = answer, close, echo
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed by stop()
                return
            self.held.append(connection)
            try:
                first = connection.recv(64)
            except OSError:  # shut down by stop()
                return
            if self.echo:
                connection.sendall(first)
            elif self.answer is not None:
                connection.sendall(self.answer)
            if self.close:
                connection.close()

    def stop(self) -> None:
        for sock in (self.listener, *self.held):  # shutdown wakes the thread's accept() or recv()
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self.thread.join(5)


@pytest.fixture
def loopback_server():
    servers: list[LoopbackServer] = []

    def start(answer: bytes | None, close: bool = False, echo: bool = False) -> LoopbackServer:
        servers.append(LoopbackServer(answer, close, echo))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


HTTP2_SETTINGS = b"\x00\x00\x06\x04\x00\x00\x00\x00\x00" + b"\x00\x03\x00\x00\x00\x64"  # SETTINGS, max streams 100


@pytest.mark.parametrize(
    ("answer", "close", "echo", "why"),
    [
        (None, False, False, "the server there said nothing within 0.5 s after an HTTP/2 preface, which Ray's GCS "
                             "(a gRPC server) answers at once"),
        (None, True, False, "the server there closed the connection after an HTTP/2 preface, which Ray's GCS (a gRPC "
                            "server) answers at once"),
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", True, False,
         "the server there does not speak HTTP/2, as Ray's GCS (a gRPC server) does: it answered 'HTTP/1.1 '"),
        (None, False, True, "the server there does not speak HTTP/2, as Ray's GCS (a gRPC server) does: it answered "
                            "'PRI * HTT'"),
        (b"SSH-2.0-OpenSSH_9.6\r\n", False, False,
         "the server there does not speak HTTP/2, as Ray's GCS (a gRPC server) does: it answered 'SSH-2.0-O'"),
    ],
    ids=["silent", "closes", "http1", "echo", "ssh"],
)
def test_a_tcp_server_that_is_not_ray_is_refused_within_seconds(loopback_server, answer, close, echo, why, timed):
    from tui.engine.cluster.probe import GcsProbeError, check_gcs

    server = loopback_server(answer, close, echo)
    start = time.monotonic()
    with pytest.raises(GcsProbeError) as refused:
        check_gcs(server.address, answer_timeout=0.5)
    assert str(refused.value) == why
    if timed:
        assert time.monotonic() - start < 3


def test_a_server_that_answers_http2_passes_the_check(loopback_server):
    from tui.engine.cluster.probe import check_gcs

    check_gcs(loopback_server(HTTP2_SETTINGS).address, answer_timeout=5)  # returns: a gRPC server answers so


def test_the_cli_refuses_a_cluster_address_that_is_not_ray_in_one_line_exit_2(loopback_server, monkeypatch, capsys,
                                                                             timed):
    """It hung for minutes with Ray's reconnection errors (Ray rewrote 127.0.0.1 to this machine's interface)."""
    ray = pytest.importorskip("ray")
    from tui.engine.cluster import probe

    monkeypatch.setattr(probe, "ANSWER_TIMEOUT_S", 1.0)
    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: pytest.fail("ray.init was reached"))
    server = loopback_server(None)  # accepts, then says nothing
    start = time.monotonic()
    assert cli.main(["sweep", "--param", "n=64,128", "--cluster", server.address]) == 2
    if timed:
        assert time.monotonic() - start < 10
    assert _error_lines(capsys) == [
        f"compile-lab: error: --cluster {server.address}: no Ray head answers there (the server there said nothing "
        "within 1 s after an HTTP/2 preface, which Ray's GCS (a gRPC server) answers at once); the address is the "
        "head's GCS address, which `ray start --head` prints"]
