"""The tracker, for several boards: servers register under a device key (and register again
after they restart); clients `request(key, priority, timeout)` a free one and hold it until
their session ends; `run(key, fn, retries)` asks again when a session dies mid-call, so a
tuning run survives a device restart.

    python -m nnvm.rpc.tracker --host 127.0.0.1 --port 9190
    python -m nnvm.rpc.server --port 9090 --tracker 127.0.0.1:9190 --key board

The tracker hands out addresses only; the servers' own tokens and TLS still guard them."""

from __future__ import annotations

import argparse
import heapq
import itertools
import logging
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time

from nnvm.rpc import protocol
from nnvm.rpc.errors import (
    RPCConnectionError,
    RPCError,
    RPCProtocolError,
    RPCSessionCrashed,
    RPCTimeoutError,
    RPCVersionError,
    error_from_wire,
)
from nnvm.rpc.protocol import Limits

log = logging.getLogger("nnvm.rpc.tracker")
_LIMITS = Limits(max_header=64 << 10, max_chunk=64 << 10, max_body=0)


class _Board:
    def __init__(self, key: str, host: str, port: int):
        self.key, self.host, self.port = key, host, port
        self.busy = False
        self.alive = True


class _State:
    def __init__(self):
        self.cond = threading.Condition()
        self.boards: list[_Board] = []
        self.waiting: list[tuple[int, int, str]] = []  # (-priority, ticket, key)
        self.tickets = itertools.count()

    def take(self, key: str, priority: int, timeout: float) -> _Board | None:
        with self.cond:
            ticket = next(self.tickets)
            entry = (-priority, ticket, key)
            heapq.heappush(self.waiting, entry)
            deadline = time.monotonic() + timeout
            try:
                while True:
                    first = next((w for w in sorted(self.waiting) if w[2] == key), None)
                    if first == entry:
                        for b in self.boards:
                            if b.key == key and b.alive and not b.busy:
                                b.busy = True
                                return b
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    self.cond.wait(min(left, 0.5))
            finally:
                self.waiting.remove(entry)
                heapq.heapify(self.waiting)
                self.cond.notify_all()


class _Handler(socketserver.BaseRequestHandler):
    server: _TrackerServer

    def handle(self) -> None:
        sock: socket.socket = protocol.no_delay(self.request)
        sock.settimeout(30)
        state = self.server.state
        held: list[_Board] = []
        mine: list[_Board] = []
        try:
            magic, version, _ = protocol.HANDSHAKE.unpack(
                protocol.recv_exact(sock, protocol.HANDSHAKE.size)
            )
            ok = magic == protocol.MAGIC and version == protocol.VERSION
            status = protocol.STATUS_OK if ok else protocol.STATUS_VERSION_MISMATCH
            protocol.send_all(
                sock, protocol.HANDSHAKE.pack(protocol.MAGIC, protocol.VERSION, status)
            )
            if not ok:
                return
            protocol.send_message(sock, {"server": "nnvm-rpc-tracker", "auth": None})
            sock.settimeout(None)
            while True:
                header, _ = protocol.recv_message(sock, _LIMITS)
                op = header.get("op")
                if op == "register":
                    key, host, port = header.get("key"), header.get("host"), header.get("port")
                    if not (
                        isinstance(key, str) and isinstance(host, str) and isinstance(port, int)
                    ):
                        raise RPCProtocolError("register needs key, host and port")
                    board = _Board(key, host, port)
                    with state.cond:
                        state.boards.append(board)
                        state.cond.notify_all()
                    mine.append(board)
                    log.info("registered %s at %s:%d", key, host, port)
                    protocol.send_message(sock, {"ok": True})
                elif op == "request":
                    key = header.get("key")
                    priority = int(header.get("priority", 1))
                    timeout = min(float(header.get("timeout", 60)), 3600.0)
                    board = state.take(str(key), priority, timeout)
                    if board is None:
                        protocol.send_message(
                            sock,
                            {
                                "error": {
                                    "type": "timeout",
                                    "message": f"no free server with key {key!r} within {timeout:g} s",
                                }
                            },
                        )
                        continue
                    held.append(board)
                    protocol.send_message(
                        sock, {"ok": True, "host": board.host, "port": board.port}
                    )
                elif op == "release":
                    with state.cond:
                        for b in held:
                            b.busy = False
                        held.clear()
                        state.cond.notify_all()
                    protocol.send_message(sock, {"ok": True})
                elif op == "summary":
                    with state.cond:
                        boards = [
                            {"key": b.key, "host": b.host, "port": b.port, "busy": b.busy}
                            for b in state.boards
                        ]
                        waiting = len(state.waiting)
                    protocol.send_message(sock, {"ok": True, "servers": boards, "waiting": waiting})
                else:
                    protocol.send_message(
                        sock, {"error": {"type": "remote", "message": "unknown tracker request"}}
                    )
        except RPCError:
            pass
        finally:
            with state.cond:
                for b in held:
                    b.busy = False
                for b in mine:
                    b.alive = False
                    state.boards.remove(b)
                    log.info("unregistered %s at %s:%d", b.key, b.host, b.port)
                state.cond.notify_all()


class _TrackerServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address):
        super().__init__(address, _Handler)
        self.state = _State()


def start_tracker(host: str = "127.0.0.1", port: int = 0) -> _TrackerServer:
    """A tracker serving in a background thread (tests, notebooks); `.server_address`."""
    server = _TrackerServer((host, port))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# -- clients of the tracker ----------------------------------------------------------------


def _open(address: str | tuple[str, int], timeout: float = 10.0) -> socket.socket:
    host, port = _split(address)
    try:
        sock = protocol.no_delay(socket.create_connection((host, port), timeout=timeout))
    except OSError as err:
        raise RPCConnectionError(f"cannot reach the tracker at {host}:{port}: {err}") from None
    protocol.send_all(sock, protocol.HANDSHAKE.pack(protocol.MAGIC, protocol.VERSION, 0))
    magic, version, status = protocol.HANDSHAKE.unpack(
        protocol.recv_exact(sock, protocol.HANDSHAKE.size)
    )
    if magic != protocol.MAGIC:
        raise RPCProtocolError("not an nnvm-rpc tracker")
    if status != protocol.STATUS_OK:
        raise RPCVersionError(f"tracker speaks protocol {version}, this client {protocol.VERSION}")
    protocol.recv_message(sock, _LIMITS)
    return sock


def _split(address) -> tuple[str, int]:
    if isinstance(address, tuple):
        return address[0], int(address[1])
    host, _, port = str(address).rpartition(":")
    return host or "127.0.0.1", int(port)


def _ask(sock: socket.socket, header: dict) -> dict:
    protocol.send_message(sock, header)
    reply, _ = protocol.recv_message(sock, _LIMITS)
    if "error" in reply:
        raise error_from_wire(reply["error"])
    return reply


class TrackerClient:
    def __init__(self, address):
        self.address = _split(address)

    def summary(self) -> dict:
        sock = _open(self.address)
        try:
            return _ask(sock, {"op": "summary"})
        finally:
            sock.close()

    def request(self, key: str, priority: int = 1, timeout: float = 60.0, **connect_args):
        """A session on a free server registered under `key` (waiting up to `timeout` s for
        one); the server is held for this client until the session closes."""
        from nnvm.rpc.client import connect

        lease = _open(self.address)
        try:
            lease.settimeout(timeout + 30)
            reply = _ask(
                lease, {"op": "request", "key": key, "priority": priority, "timeout": timeout}
            )
            session = connect(reply["host"], reply["port"], **connect_args)
        except BaseException:
            lease.close()
            raise
        close = session.close

        def close_and_release() -> None:
            try:
                close()
            finally:
                lease.close()  # the tracker frees the server when the lease drops

        session.close = close_and_release  # type: ignore[method-assign]
        return session

    def run(
        self,
        key: str,
        fn,
        retries: int = 3,
        priority: int = 1,
        timeout: float = 60.0,
        **connect_args,
    ):
        """`fn(session)` on a server of `key`; a session that dies (crash, device restart, lost
        connection) is requested again, up to `retries` more times."""
        last: RPCError | None = None
        for _attempt in range(retries + 1):
            try:
                session = self.request(key, priority, timeout, **connect_args)
            except RPCConnectionError as err:
                last = err
                time.sleep(0.5)
                continue
            try:
                return fn(session)
            except (RPCSessionCrashed, RPCConnectionError) as err:
                last = err
            finally:
                session.close()
        raise RPCTimeoutError(f"gave up on key {key!r} after {retries + 1} attempts: {last}")


def connect_tracker(host: str, port: int) -> TrackerClient:
    return TrackerClient((host, port))


# -- the registrar: a server's presence at the tracker --------------------------------------


def start_registrar(tracker: str, key: str, host: str, port: int) -> subprocess.Popen:
    """A small process that keeps the server registered (again after the tracker restarts)
    and exits when the server does."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nnvm.rpc.tracker",
            "--register",
            tracker,
            "--key",
            key,
            "--server-host",
            host,
            "--server-port",
            str(port),
            "--parent",
            str(os.getpid()),
        ]
    )


def _register_loop(tracker: str, key: str, host: str, port: int, parent: int) -> int:
    delay = 0.2
    while True:
        if os.getppid() != parent:
            return 0
        try:
            sock = _open(tracker, timeout=5)
            _ask(sock, {"op": "register", "key": key, "host": host, "port": port})
            delay = 0.2
            sock.settimeout(1.0)
            while os.getppid() == parent:
                try:
                    if sock.recv(1) == b"":
                        break  # the tracker went away: register again
                except TimeoutError:
                    continue
            sock.close()
        except (RPCError, OSError):
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m nnvm.rpc.tracker", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9190)
    p.add_argument("--register", default=None, help=argparse.SUPPRESS)
    p.add_argument("--key", default="default", help=argparse.SUPPRESS)
    p.add_argument("--server-host", default="127.0.0.1", help=argparse.SUPPRESS)
    p.add_argument("--server-port", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--parent", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s nnvm-rpc-tracker %(message)s")
    if args.register:
        try:
            return _register_loop(
                args.register, args.key, args.server_host, args.server_port, args.parent
            )
        except KeyboardInterrupt:
            return 0
    try:
        server = _TrackerServer((args.host, args.port))
    except OSError as err:
        print(f"error: cannot listen on {args.host}:{args.port}: {err.strerror}", file=sys.stderr)
        return 1
    import signal

    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    log.info("tracker listening on %s:%d", *server.server_address[:2])
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
