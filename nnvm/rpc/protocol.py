"""The wire protocol (docs/rpc.md): a handshake of magic + version, then messages as
length-prefixed frames. A message is one JSON header frame, then, when the header's `nbody` is
non-zero, that many bytes of body in chunk frames. Every length is checked against limits before
anything is read, so a hostile peer cannot make the other side allocate what it names."""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from nnvm.rpc.errors import RPCConnectionError, RPCProtocolError, RPCTimeoutError

MAGIC = b"NNVMRPC\x00"
VERSION = 1
HANDSHAKE = struct.Struct(">8sHH")  # magic, version, role (client) / status (server)
FRAME = struct.Struct(">IB")  # payload length, kind

KIND_HEADER = 1
KIND_BODY = 2

STATUS_OK = 0
STATUS_VERSION_MISMATCH = 1
STATUS_BAD_MAGIC = 2
STATUS_SHUTTING_DOWN = 3

CHUNK = 1 << 20  # body frames a sender writes


@dataclass(frozen=True)
class Limits:
    """What one side accepts; the server announces its own in the hello."""

    max_header: int = 1 << 20
    max_chunk: int = 4 << 20
    max_body: int = 1 << 30
    max_upload: int = 1 << 30
    max_session_bytes: int = 4 << 30

    def to_json(self) -> dict:
        return asdict(self)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """n bytes, or RPCConnectionError when the peer closes first (a frame cut short)."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        try:
            k = sock.recv_into(view[got:], n - got)
        except TimeoutError:
            raise RPCTimeoutError("timed out waiting for the peer") from None
        except OSError as err:
            raise RPCConnectionError(f"connection lost: {err}") from None
        if k == 0:
            what = "mid-frame" if got else "before the next frame"
            raise RPCConnectionError(f"the peer closed the connection {what}")
        got += k
    return bytes(buf)


def close_gracefully(sock: socket.socket, linger: float = 1.0, max_drain: int = 1 << 20) -> None:
    """Close after the peer has had the chance to read what was sent last (a final error).

    Closing a TCP socket whose receive buffer holds unread bytes (the rest of a malformed frame
    the server gave up on) sends a reset instead of a FIN, and a reset may discard the reply still
    in flight to the peer. So: send FIN first, read and drop what the peer still sends until it
    closes, `linger` seconds pass or `max_drain` bytes arrive, then close."""
    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(linger)
        deadline = time.monotonic() + linger
        drained = 0
        while drained < max_drain and time.monotonic() < deadline:
            data = sock.recv(65536)
            if not data:
                break
            drained += len(data)
    except OSError:  # timeouts included: the peer keeps the connection open; stop waiting
        pass
    finally:
        try:
            sock.close()
        except OSError:
            pass


def no_delay(sock: socket.socket) -> socket.socket:
    """Send small writes at once (TCP_NODELAY). A request is a frame header and its data;
    with Nagle's algorithm the second small write waits for the ACK of the first, which the
    peer delays (40 ms on Linux): every call of a session took 45-90 ms on loopback."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:  # not a TCP socket
        pass
    return sock


COALESCE = 64 * 1024
"""Parts smaller than this are joined into one write (a frame header with its data)."""


def send_all(sock: socket.socket, *parts: bytes | memoryview) -> None:
    try:
        pending = bytearray()
        for p in parts:
            if len(p) >= COALESCE:  # large: what is pending first, then this part as it is
                if pending:
                    sock.sendall(pending)
                    pending = bytearray()
                sock.sendall(p)
                continue
            pending += p
            if len(pending) >= COALESCE:
                sock.sendall(pending)
                pending = bytearray()
        if pending:
            sock.sendall(pending)
    except TimeoutError:
        raise RPCTimeoutError("timed out sending to the peer") from None
    except OSError as err:
        raise RPCConnectionError(f"connection lost: {err}") from None


def recv_frame(sock: socket.socket, limit: int) -> tuple[int, bytes]:
    length, kind = FRAME.unpack(recv_exact(sock, FRAME.size))
    if kind not in (KIND_HEADER, KIND_BODY):
        raise RPCProtocolError(f"malformed frame: unknown frame kind {kind}")
    if length > limit:
        raise RPCProtocolError(f"frame of {length} bytes exceeds the limit of {limit}")
    return kind, recv_exact(sock, length)


def send_message(sock: socket.socket, header: dict, body: bytes | memoryview = b"") -> None:
    """One message: its header (with `nbody`) and its body in chunks."""
    body = memoryview(body).cast("B")
    data = json.dumps({**header, "nbody": len(body)}, separators=(",", ":")).encode()
    parts: list[bytes | memoryview] = [FRAME.pack(len(data), KIND_HEADER), data]
    for start in range(0, len(body), CHUNK):
        piece = body[start : start + CHUNK]
        parts += [FRAME.pack(len(piece), KIND_BODY), piece]
    send_all(sock, *parts)


def send_header_then_stream(sock: socket.socket, header: dict, size: int, chunks) -> None:
    """A message whose body comes from an iterator of byte chunks totalling `size`."""
    data = json.dumps({**header, "nbody": size}, separators=(",", ":")).encode()
    send_all(sock, FRAME.pack(len(data), KIND_HEADER), data)
    sent = 0
    for piece in chunks:
        if not piece:
            continue
        sent += len(piece)
        send_all(sock, FRAME.pack(len(piece), KIND_BODY), piece)
    if sent != size:
        raise RPCProtocolError(f"the body changed while being sent ({sent} of {size} bytes)")


def recv_header(sock: socket.socket, limits: Limits) -> dict:
    kind, data = recv_frame(sock, limits.max_header)
    if kind != KIND_HEADER:
        raise RPCProtocolError("malformed frame: a body frame where a message header belongs")
    try:
        header = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RPCProtocolError(f"malformed message header (not JSON: {err})") from None
    if not isinstance(header, dict):
        raise RPCProtocolError("malformed message header (not a JSON object)")
    nbody = header.get("nbody", 0)
    if not isinstance(nbody, int) or isinstance(nbody, bool) or nbody < 0:
        raise RPCProtocolError(f"malformed message header: nbody {nbody!r}")
    return header


def iter_body(sock: socket.socket, nbody: int, limits: Limits) -> Iterator[bytes]:
    """The body of a message, chunk by chunk, exactly `nbody` bytes."""
    left = nbody
    while left > 0:
        kind, data = recv_frame(sock, limits.max_chunk)
        if kind != KIND_BODY:
            raise RPCProtocolError("malformed frame: a header frame inside a message body")
        if len(data) > left:
            raise RPCProtocolError(f"message body longer than the {nbody} bytes declared")
        left -= len(data)
        yield data


def recv_body(sock: socket.socket, nbody: int, limits: Limits) -> bytes:
    if nbody > limits.max_body:
        raise RPCProtocolError(
            f"message body of {nbody} bytes exceeds the limit of {limits.max_body}"
        )
    return b"".join(iter_body(sock, nbody, limits))


def recv_message(sock: socket.socket, limits: Limits) -> tuple[dict, bytes]:
    header = recv_header(sock, limits)
    return header, recv_body(sock, header["nbody"], limits)
