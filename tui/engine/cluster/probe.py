"""Does a Ray head answer at HOST:PORT? A few seconds' check before Ray is asked (no Ray imported here).

Ray's GCS is a gRPC server, and gRPC speaks HTTP/2: a client opens a connection with HTTP/2's
preface and a SETTINGS frame, and the server's first frame is its own SETTINGS frame
(RFC 9113, section 3.4). :func:`check_gcs` sends the preface and reads the first frame: a server
that answers otherwise (an HTTP/1 server, an echo), closes the connection or says nothing within
:data:`ANSWER_TIMEOUT_S` is not a Ray head, and the refusal is one line. Without this check
``ray.init`` would retry such an address for minutes (it even rewrites ``127.0.0.1`` to this
machine's own interface), printing its reconnection errors.

With ``RAY_USE_TLS`` set the GCS expects TLS first: only the TCP connection is checked then.
"""

from __future__ import annotations

import os
import socket
import struct
import time

__all__ = ["check_gcs", "GcsProbeError", "CONNECT_TIMEOUT_S", "ANSWER_TIMEOUT_S", "HTTP2_PREFACE"]

CONNECT_TIMEOUT_S = 5.0
"""Seconds to wait for the TCP connection."""
ANSWER_TIMEOUT_S = 5.0
"""Seconds to wait for the server's first HTTP/2 frame once connected."""

HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_SETTINGS = 0x4
_EMPTY_SETTINGS_FRAME = struct.pack(">I", 0)[1:] + bytes([_SETTINGS, 0]) + struct.pack(">I", 0)
"""A frame header: length 0 (24 bits), type SETTINGS, no flags, stream 0."""


class GcsProbeError(Exception):
    """Nothing at the address speaks Ray's GCS protocol: the message says what was found (one line)."""


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def _tls() -> bool:
    return os.environ.get("RAY_USE_TLS", "").strip().lower() in ("1", "true", "yes")


def check_gcs(address: str, connect_timeout: float | None = None, answer_timeout: float | None = None) -> None:
    """Return when a gRPC (HTTP/2) server answers at ``HOST:PORT``; GcsProbeError (one line) otherwise.

    The timeouts default to :data:`CONNECT_TIMEOUT_S` and :data:`ANSWER_TIMEOUT_S`.
    """
    connect_timeout = CONNECT_TIMEOUT_S if connect_timeout is None else connect_timeout
    answer_timeout = ANSWER_TIMEOUT_S if answer_timeout is None else answer_timeout
    host, port = _split(address)
    try:
        connection = socket.create_connection((host, port), timeout=connect_timeout)
    except OSError as exc:
        raise GcsProbeError(f"{type(exc).__name__}: {exc}") from None
    with connection:
        if _tls():
            return
        header, closed = _first_frame_header(connection, answer_timeout)
    if len(header) == 9 and header[3] == _SETTINGS and not struct.unpack(">I", header[5:9])[0] & 0x7FFFFFFF:
        return
    if not header:
        what = "closed the connection" if closed else f"said nothing within {answer_timeout:g} s"
        raise GcsProbeError(f"the server there {what} after an HTTP/2 preface, which Ray's GCS (a gRPC server) "
                            "answers at once")
    raise GcsProbeError(f"the server there does not speak HTTP/2, as Ray's GCS (a gRPC server) does: it answered "
                        f"{_shown(header)}")


def _first_frame_header(connection: socket.socket, timeout: float) -> tuple[bytes, bool]:
    """Send the preface and an empty SETTINGS frame; (the first 9 bytes back, or fewer, whether the server closed)."""
    deadline = time.monotonic() + timeout
    data = b""
    try:
        connection.sendall(HTTP2_PREFACE + _EMPTY_SETTINGS_FRAME)
        while len(data) < 9:
            left = deadline - time.monotonic()
            if left <= 0:
                return data, False
            connection.settimeout(left)
            chunk = connection.recv(9 - len(data))
            if not chunk:
                return data, True
            data += chunk
    except TimeoutError:
        return data, False
    except OSError:  # reset by the server
        return data, True
    return data, False


def _shown(data: bytes) -> str:
    """The first bytes, printable (``'HTTP/1.1 '``)."""
    text = data.decode("ascii", errors="replace")
    return repr("".join(c if c.isprintable() else "?" for c in text))
