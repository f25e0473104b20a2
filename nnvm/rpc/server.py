"""The RPC server: `python -m nnvm.rpc.server --host 127.0.0.1 --port 9090`. The parent only
accepts connections and forks one process per session (its own work dir, removed when the
session ends), so a kernel that crashes or hangs ends its session, never the server. SIGTERM
stops accepting, lets each session finish its current call, then exits. One log line per
session (stderr)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import selectors
import shutil
import signal
import socket
import ssl
import sys
import tempfile
import time
from dataclasses import dataclass, field

from nnvm.rpc import protocol
from nnvm.rpc.auth import read_token_file
from nnvm.rpc.errors import RPCError
from nnvm.rpc.protocol import Limits
from nnvm.rpc.session import (
    EXIT_AUTH,
    EXIT_CALL_TIMEOUT,
    EXIT_OK,
    EXIT_PROTOCOL,
    EXIT_SESSION_TIMEOUT,
    SessionConfig,
    run_session,
)

log = logging.getLogger("nnvm.rpc.server")

_ENDINGS = {
    EXIT_OK: "ok",
    EXIT_PROTOCOL: "protocol error",
    EXIT_CALL_TIMEOUT: "call timeout",
    EXIT_SESSION_TIMEOUT: "session timeout",
    EXIT_AUTH: "auth refused",
}


@dataclass
class _Child:
    number: int
    peer: str
    sock: socket.socket
    work: str
    started: float = field(default_factory=time.monotonic)


class Server:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 9090,
        config: SessionConfig | None = None,
        work_dir: str | None = None,
        tls: ssl.SSLContext | None = None,
        max_sessions: int = 64,
        grace: float = 30.0,
    ):
        self.config = config or SessionConfig()
        self.tls = tls
        self.max_sessions = max_sessions
        self.grace = grace
        self.own_root = work_dir is None
        self.root = work_dir or tempfile.mkdtemp(prefix="nnvm-rpc-")
        os.makedirs(self.root, mode=0o700, exist_ok=True)
        self.listener = socket.create_server((host, port), backlog=128)
        self.port = self.listener.getsockname()[1]
        self.children: dict[int, _Child] = {}
        self.count = 0
        self.stopping = False
        self.stats = {"sessions": 0, "crashed": 0, "refused_busy": 0}

    def _preload(self) -> None:
        """Import what sessions need once, so each forked session starts warm."""
        import nnvm.runtime.graph_runtime  # noqa: F401
        import nnvm.targets.llvm.compile  # noqa: F401

    def serve_forever(self) -> None:
        self._preload()
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
        signal.signal(signal.SIGINT, lambda *_: setattr(self, "stopping", True))
        sel = selectors.DefaultSelector()
        sel.register(self.listener, selectors.EVENT_READ)
        log.info(
            "nnvm-rpc listening on %s:%d (work dir %s)", *self.listener.getsockname()[:2], self.root
        )
        try:
            while not self.stopping:
                for _ in sel.select(timeout=0.2):
                    if self.stopping:
                        break
                    self._accept()
                self._reap()
        finally:
            sel.close()
            self.listener.close()
            self._shutdown()

    def _accept(self) -> None:
        try:
            conn, addr = self.listener.accept()
        except OSError:
            return
        protocol.no_delay(conn)
        peer = f"{addr[0]}:{addr[1]}"
        if len(self.children) >= self.max_sessions:
            self.stats["refused_busy"] += 1
            log.warning("session refused from %s: %d sessions already", peer, len(self.children))
            conn.close()
            return
        self.count += 1
        work = tempfile.mkdtemp(prefix=f"session-{self.count}-", dir=self.root)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the session process
            code = 7
            try:
                _die_with_parent()
                if os.getppid() != parent:  # the server died before the line above
                    os._exit(EXIT_OK)
                self.listener.close()
                for child in self.children.values():
                    child.sock.close()
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                logging.shutdown()
                sock = conn
                if self.tls is not None:
                    conn.settimeout(self.config.handshake_timeout)
                    try:
                        sock = self.tls.wrap_socket(conn, server_side=True)
                    except (ssl.SSLError, OSError):
                        os._exit(EXIT_PROTOCOL)
                code = run_session(sock, work, self.config)
            finally:
                os._exit(code)
        self.stats["sessions"] += 1
        self.children[pid] = _Child(self.count, peer, conn, work)

    def _reap(self, block: bool = False) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            child = self.children.pop(pid, None)
            if child is not None:
                self._ended(pid, child, status)

    def _ended(self, pid: int, child: _Child, status: int) -> None:
        summary = {}
        try:
            with open(os.path.join(child.work, ".summary")) as f:
                summary = json.load(f)
        except (OSError, ValueError):
            pass
        if os.WIFSIGNALED(status):
            sig = signal.Signals(os.WTERMSIG(status)).name
            ending = f"crashed ({sig})"
            self.stats["crashed"] += 1
            if self.tls is None:  # tell the client, on the socket the parent still holds
                try:
                    child.sock.settimeout(1.0)
                    protocol.send_message(
                        child.sock,
                        {
                            "id": None,
                            "error": {
                                "type": "crashed",
                                "message": f"the session process was killed by {sig} (a kernel crashed?)",
                            },
                        },
                    )
                except (RPCError, OSError):
                    pass
        else:
            code = os.WEXITSTATUS(status)
            ending = _ENDINGS.get(code, f"exit {code}")
        child.sock.close()
        shutil.rmtree(child.work, ignore_errors=True)
        log.info(
            "session %d from %s pid %d: %s, %s requests (%s rejected), %.2f s",
            child.number,
            child.peer,
            pid,
            ending,
            summary.get("requests", "?"),
            summary.get("rejected", "?"),
            time.monotonic() - child.started,
        )

    def _shutdown(self) -> None:
        for pid in list(self.children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + self.grace
        while self.children and time.monotonic() < deadline:
            self._reap()
            time.sleep(0.05)
        for pid in list(self.children):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._reap(block=True)
        if self.own_root:
            shutil.rmtree(self.root, ignore_errors=True)
        log.info("nnvm-rpc stopped after %d sessions", self.stats["sessions"])


def _die_with_parent() -> None:
    """A session must not outlive its server (Linux: PR_SET_PDEATHSIG), else a killed server
    would leave sessions running that no one reaps."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def tls_server_context(cert: str, key: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    return ctx


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m nnvm.rpc.server", description=__doc__)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    p.add_argument("--port", type=int, default=9090, help="port (0: any free one)")
    p.add_argument("--key", default=None, help="device key to register with a tracker")
    p.add_argument("--tracker", default=None, help="tracker host:port to register with")
    p.add_argument("--token-file", default=None, help="shared token (file mode 600)")
    p.add_argument("--tls-cert", default=None)
    p.add_argument("--tls-key", default=None)
    p.add_argument("--work-dir", default=None, help="where session dirs go (default: a temp dir)")
    p.add_argument("--max-sessions", type=int, default=64)
    p.add_argument("--call-timeout", type=float, default=600.0)
    p.add_argument("--idle-timeout", type=float, default=300.0)
    p.add_argument("--session-timeout", type=float, default=3600.0)
    p.add_argument("--max-upload-mb", type=int, default=1024)
    p.add_argument("--port-file", default=None, help="write the bound port here once listening")
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s nnvm-rpc %(message)s", stream=sys.stderr
    )
    try:
        if (args.tls_cert is None) != (args.tls_key is None):
            raise RPCError("--tls-cert and --tls-key go together")
        token = read_token_file(args.token_file) if args.token_file else None
        try:
            tls = tls_server_context(args.tls_cert, args.tls_key) if args.tls_cert else None
        except (OSError, ssl.SSLError) as err:
            raise RPCError(f"cannot load the TLS certificate or key: {err}") from None
        limits = Limits(max_upload=args.max_upload_mb << 20, max_body=args.max_upload_mb << 20)
        config = SessionConfig(
            token=token,
            limits=limits,
            call_timeout=args.call_timeout,
            idle_timeout=args.idle_timeout,
            session_timeout=args.session_timeout,
        )
        try:
            server = Server(args.host, args.port, config, args.work_dir, tls, args.max_sessions)
        except OSError as err:
            raise RPCError(f"cannot listen on {args.host}:{args.port}: {err.strerror}") from None
    except RPCError as err:
        print(f"error: {err.message}", file=sys.stderr)
        return 1
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(server.port))
        os.replace(args.port_file + ".tmp", args.port_file)
    registrar = None
    if args.tracker:
        from nnvm.rpc.tracker import start_registrar

        registrar = start_registrar(args.tracker, args.key or "default", args.host, server.port)
    try:
        server.serve_forever()
    finally:
        if registrar is not None:
            registrar.kill()
            registrar.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
