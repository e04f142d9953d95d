"""Length-prefixed JSON messages over a stream socket (client <-> worker <-> runner).

A message is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON. NaN and
infinities pass through (Python's json writes them as NaN/Infinity and reads them back).
"""
from __future__ import annotations

import json
import socket
import struct
import time
from typing import Any, Optional

MAX_MESSAGE = 256 * 1024 * 1024
# what a runner may send the supervisor in one message: its replies are results, digests and the
# descriptions of a round's files (tens of KiB). A runner that wrote a 200 MiB `[{},{},...]` frame
# to its own channel made the worker parse it (5.2 GB at its peak, outside every memory watch)
# before the seal refused it (`reply_bomb`, session 19)
RUNNER_MAX_MESSAGE = 4 * 1024 * 1024
_HEADER = struct.Struct(">I")


class ConnectionClosed(EOFError):
    """The peer closed the connection (or died) before a whole message arrived."""


def connect(path: Any, timeout: float) -> socket.socket:
    """A stream connection to the Unix socket at `path` (OSError when nobody listens there);
    `timeout` bounds the connect only, the connection itself blocks (recv_msg sets its own)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(str(path))
    except OSError:
        s.close()
        raise
    s.settimeout(None)
    return s


class MessageTooLarge(ConnectionClosed):
    """A message announced over the reader's limit: not read (the channel is then unusable)."""


class MessageUnreadable(ConnectionClosed):
    """A message that is not JSON (a runner's process wrote its own bytes to the channel): the
    channel is then unusable, as if closed."""


def send_msg(sock: socket.socket, obj: Any) -> None:
    data = json.dumps(obj).encode("utf-8")
    if len(data) > MAX_MESSAGE:
        raise ValueError(f"message of {len(data)} bytes exceeds {MAX_MESSAGE}")
    sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int, deadline: Optional[float]) -> bytes:
    chunks = []
    got = 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("timed out waiting for a message")
            sock.settimeout(left)
        else:
            sock.settimeout(None)
        try:
            chunk = sock.recv(min(n - got, 1 << 20))
        except socket.timeout as e:
            raise TimeoutError("timed out waiting for a message") from e
        except (ConnectionResetError, BrokenPipeError) as e:
            raise ConnectionClosed(str(e)) from e
        if not chunk:
            raise ConnectionClosed("connection closed by peer")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv_exact(sock: socket.socket, n: int, timeout: Optional[float] = None) -> bytes:
    """Exactly `n` raw bytes (a stepped witness round's steps, `sandbox/witness._Steps`)."""
    return _recv_exact(sock, n, None if timeout is None else time.monotonic() + timeout)


def recv_msg(sock: socket.socket, timeout: Optional[float] = None, limit: int = MAX_MESSAGE) -> Any:
    """One message; TimeoutError when `timeout` seconds pass, ConnectionClosed on EOF or on a
    message announced over `limit` bytes (RUNNER_MAX_MESSAGE from a runner)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    (n,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size, deadline))
    if n > limit:
        raise MessageTooLarge(f"peer announced a {n}-byte message, over the {limit >> 20} MiB it may send")
    data = _recv_exact(sock, n, deadline)
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as e:  # not UTF-8, not JSON, nested past the parser, an int past 4300 digits
        raise MessageUnreadable(f"peer sent a {n}-byte message that is not JSON ({type(e).__name__}: {str(e)[:200]})") from e
