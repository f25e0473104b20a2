"""How messages reach the socket: small frames joined into one write, and sessions that send
small writes at once (TCP_NODELAY). With Nagle's algorithm a frame header written apart from
its data waited for the peer's delayed ACK, and every call of a session took 45-90 ms on
loopback (RPC tuning spent half a second a candidate in calls)."""

from __future__ import annotations

import socket

import numpy as np

from nnvm import rpc
from nnvm.rpc import protocol


class RecordingSocket:
    def __init__(self):
        self.writes: list[bytes] = []

    def sendall(self, data) -> None:
        self.writes.append(bytes(data))


def test_small_frames_go_out_in_one_write():
    sock = RecordingSocket()
    protocol.send_message(sock, {"op": "listdir", "id": 1})
    assert len(sock.writes) == 1
    with _reader(sock.writes) as reader:
        header, body = protocol.recv_message(reader, protocol.Limits())
    assert header["op"] == "listdir" and body == b""


def test_a_large_body_goes_out_unjoined_after_what_came_before():
    sock = RecordingSocket()
    body = np.arange(3 * protocol.COALESCE // 4 + 5, dtype=np.float32).tobytes()
    protocol.send_message(sock, {"op": "array"}, body)
    assert len(sock.writes) == 2  # the header's frame with the body frame's, then the body
    assert sock.writes[1] == body
    with _reader(sock.writes) as reader:
        header, got = protocol.recv_message(reader, protocol.Limits())
    assert header["op"] == "array" and got == body


def test_a_session_sends_small_writes_at_once(server):
    with rpc.connect("127.0.0.1", server.port) as remote:
        assert remote.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        assert remote.listdir() == []


def _reader(writes: list[bytes]):
    """A socket whose reads return what was written."""
    a, b = socket.socketpair()
    a.sendall(b"".join(writes))
    a.close()
    return b
