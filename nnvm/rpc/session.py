"""One client's session, served in its own process (forked by the server): the handshake, the
token check, then requests until the client says goodbye. Files live in the session's work dir;
modules, arrays and graph modules live in this process only and die with it. A call that runs
past its limit is answered with a timeout error by a watchdog thread and ends the process (a
kernel stuck in C cannot be interrupted any other way)."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from nnvm.rpc import auth, protocol
from nnvm.rpc.errors import (
    RPCAuthError,
    RPCConnectionError,
    RPCError,
    RPCProtocolError,
    RPCRemoteError,
    RPCShutdown,
    RPCTimeoutError,
)
from nnvm.rpc.protocol import Limits
from nnvm.rpc.workdir import WorkDir
from nnvm.support.errors import UserError

EXIT_OK = 0
EXIT_PROTOCOL = 3
EXIT_CALL_TIMEOUT = 4
EXIT_SESSION_TIMEOUT = 5
EXIT_AUTH = 6
EXIT_INTERNAL = 7

DTYPES = {"float32", "float64", "float16", "int8", "uint8", "int16", "int32", "int64", "bool"}


@dataclass
class SessionConfig:
    token: bytes | None = None
    limits: Limits = field(default_factory=Limits)
    handshake_timeout: float = 10.0
    idle_timeout: float = 300.0
    call_timeout: float = 600.0
    session_timeout: float = 3600.0
    devices: tuple[str, ...] = ("cpu",)


class _Stop(Exception):
    """Ends the request loop with an exit code and an optional error to send first."""

    def __init__(self, code: int, error: RPCError | None = None):
        self.code = code
        self.error = error


class Session:
    def __init__(self, sock: socket.socket, work: WorkDir, config: SessionConfig):
        self.sock = sock
        self.work = work
        self.config = config
        self.limits = config.limits
        self.send_lock = threading.Lock()
        self.finished = False  # a final frame went out: nothing more may be sent
        self.busy = False
        self.stopping = False
        self.requests = 0
        self.rejected = 0
        self.modules: dict[int, object] = {}
        self.arrays: dict[int, np.ndarray] = {}
        self.graphs: dict[int, object] = {}
        self.next_id = 1
        self.started = time.monotonic()

    # -- sending ---------------------------------------------------------------------------

    def send(self, header: dict, body: bytes | memoryview = b"", final: bool = False) -> bool:
        with self.send_lock:
            if self.finished:
                return False
            if final:
                self.finished = True
            protocol.send_message(self.sock, header, body)
            return True

    def send_error(self, rid, err: RPCError, final: bool = False) -> None:
        try:
            self.send({"id": rid, "error": {"type": err.kind, "message": err.message}}, final=final)
        except RPCError:
            pass

    # -- the session -----------------------------------------------------------------------

    def handshake(self) -> None:
        self.sock.settimeout(self.config.handshake_timeout)
        magic, version, _role = protocol.HANDSHAKE.unpack(
            protocol.recv_exact(self.sock, protocol.HANDSHAKE.size)
        )
        if magic != protocol.MAGIC:
            protocol.send_all(
                self.sock,
                protocol.HANDSHAKE.pack(
                    protocol.MAGIC, protocol.VERSION, protocol.STATUS_BAD_MAGIC
                ),
            )
            raise _Stop(
                EXIT_PROTOCOL, RPCProtocolError(f"bad magic {magic!r}: not an nnvm-rpc client")
            )
        if version != protocol.VERSION:
            protocol.send_all(
                self.sock,
                protocol.HANDSHAKE.pack(
                    protocol.MAGIC, protocol.VERSION, protocol.STATUS_VERSION_MISMATCH
                ),
            )
            raise _Stop(
                EXIT_PROTOCOL,
                RPCProtocolError(
                    f"protocol version mismatch: client speaks {version}, server {protocol.VERSION}"
                ),
            )
        protocol.send_all(
            self.sock, protocol.HANDSHAKE.pack(protocol.MAGIC, protocol.VERSION, protocol.STATUS_OK)
        )
        nonce = auth.new_nonce()
        self.send(
            {
                "server": "nnvm-rpc",
                "version": protocol.VERSION,
                "auth": "hmac-sha256" if self.config.token else None,
                "nonce": nonce,
                "limits": self.limits.to_json(),
                "devices": list(self.config.devices),
                "call_timeout": self.config.call_timeout,
                "idle_timeout": self.config.idle_timeout,
            }
        )
        if self.config.token is None:
            return
        header, _ = protocol.recv_message(self.sock, self.limits)
        cnonce = header.get("cnonce")
        if header.get("op") != "auth" or not isinstance(cnonce, str) or len(cnonce) > 256:
            raise _Stop(EXIT_AUTH, RPCAuthError("this server requires a token; none was given"))
        expected = auth.proof(self.config.token, nonce, cnonce, "client")
        if not auth.verify(expected, header.get("mac")):
            raise _Stop(EXIT_AUTH, RPCAuthError("bad token"))
        self.send({"ok": True, "mac": auth.proof(self.config.token, nonce, cnonce, "server")})

    def serve(self) -> int:
        """Serve until goodbye; returns the exit code."""
        try:
            self.handshake()
            while True:
                if self.stopping:
                    raise _Stop(EXIT_OK, RPCShutdown("the server is shutting down"))
                left = self.config.session_timeout - (time.monotonic() - self.started)
                if left <= 0:
                    raise _Stop(
                        EXIT_SESSION_TIMEOUT,
                        RPCTimeoutError(
                            f"session timeout: sessions last at most "
                            f"{self.config.session_timeout:g} s"
                        ),
                    )
                self.sock.settimeout(min(self.config.idle_timeout, left))
                try:
                    header = protocol.recv_header(self.sock, self.limits)
                except RPCTimeoutError:
                    raise _Stop(
                        EXIT_SESSION_TIMEOUT,
                        RPCTimeoutError(f"session idle for {self.config.idle_timeout:g} s; closed"),
                    ) from None
                if header.get("op") == "close":
                    self.send({"id": header.get("id"), "ok": True}, final=True)
                    return EXIT_OK
                self.requests += 1
                self.busy = True
                try:
                    self.dispatch(header)
                finally:
                    self.busy = False
        except _Stop as stop:
            if stop.error is not None:
                self.rejected += 1
                self.send_error(None, stop.error, final=True)
            return stop.code
        except RPCConnectionError:
            return EXIT_OK  # the client went away; nothing to answer
        except RPCProtocolError as err:
            self.rejected += 1
            self.send_error(None, err, final=True)
            return EXIT_PROTOCOL
        except RPCTimeoutError as err:  # a body that stalled mid-message
            self.rejected += 1
            self.send_error(None, err, final=True)
            return EXIT_SESSION_TIMEOUT

    def dispatch(self, header: dict) -> None:
        rid = header.get("id")
        op = header.get("op")
        handler = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
        nbody = header["nbody"]
        if handler is None:
            self._drain(nbody)
            self.rejected += 1
            self.send_error(rid, RPCRemoteError(f"unknown request {str(op)[:40]!r}"))
            return
        timer = threading.Timer(self.config.call_timeout, self._call_timed_out, (rid, op))
        timer.daemon = True
        timer.start()
        try:
            header_out, body = handler(header)
        except RPCProtocolError:
            raise
        except RPCConnectionError:
            raise
        except (UserError, ValueError, TypeError, KeyError, OSError) as err:
            self.rejected += 1
            message = err.message if isinstance(err, UserError) else f"{type(err).__name__}: {err}"
            remote = err if isinstance(err, RPCError) else RPCRemoteError(message)
            self.send_error(rid, remote)
            return
        finally:
            timer.cancel()
        self.send({"id": rid, "ok": True, **header_out}, body)

    def _call_timed_out(self, rid, op) -> None:
        self.send_error(
            rid,
            RPCTimeoutError(
                f"call {op!r} ran past the call timeout of {self.config.call_timeout:g} s; "
                "the session was ended"
            ),
            final=True,
        )
        os._exit(EXIT_CALL_TIMEOUT)

    def _drain(self, nbody: int) -> None:
        for _ in protocol.iter_body(self.sock, nbody, self.limits):
            pass

    def _body(self, header: dict) -> bytes:
        return protocol.recv_body(self.sock, header["nbody"], self.limits)

    def _no_body(self, header: dict) -> None:
        if header["nbody"]:
            raise RPCProtocolError(f"request {header.get('op')!r} takes no body")

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    # -- files -----------------------------------------------------------------------------

    def op_upload(self, header: dict):
        name, size = header.get("name"), header["nbody"]
        try:
            from nnvm.rpc.workdir import check_name

            check_name(name)
            if size > self.limits.max_upload:
                raise RPCRemoteError(
                    f"upload of {size} bytes exceeds the server's limit of {self.limits.max_upload}"
                )
            if self.work.used_bytes() + size > self.limits.max_session_bytes:
                raise RPCRemoteError(
                    f"upload of {size} bytes would exceed the session's quota of "
                    f"{self.limits.max_session_bytes}"
                )
        except RPCRemoteError:
            self._drain(size)
            raise
        written = self.work.write(name, protocol.iter_body(self.sock, size, self.limits))
        return {"name": name, "size": written}, b""

    def op_download(self, header: dict):
        self._no_body(header)
        fd, size = self.work.open_read(header.get("name"))
        with os.fdopen(fd, "rb") as f:
            data = f.read(size)
        if len(data) > self.limits.max_body:
            raise RPCRemoteError(f"{header.get('name')!r} is larger than a message may be")
        return {}, data

    def op_remove(self, header: dict):
        self._no_body(header)
        self.work.remove(header.get("name"))
        return {}, b""

    def op_listdir(self, header: dict):
        self._no_body(header)
        return {"files": self.work.listdir()}, b""

    def op_devices(self, header: dict):
        self._no_body(header)
        return {"devices": list(self.config.devices)}, b""

    # -- modules and arrays ----------------------------------------------------------------

    def op_load_module(self, header: dict):
        self._no_body(header)
        from nnvm.runtime.module import load_module

        lib = load_module(self.work.real_path(header.get("name")))
        mid = self._new_id()
        self.modules[mid] = lib
        return {"module": mid, "model_hash": lib.model_hash, "target": lib.target}, b""

    @staticmethod
    def _array_from(header: dict, body: bytes) -> np.ndarray:
        dtype, shape = header.get("dtype"), header.get("shape")
        if dtype not in DTYPES:
            raise RPCRemoteError(f"unsupported array dtype {str(dtype)[:20]!r}")
        if (
            not isinstance(shape, list)
            or len(shape) > 16
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
        ):
            raise RPCRemoteError(f"bad array shape {str(shape)[:60]}")
        count = 1
        for d in shape:
            count *= d
        if count * np.dtype(dtype).itemsize != len(body):
            raise RPCRemoteError(
                f"array {dtype}{shape} needs {count * np.dtype(dtype).itemsize} bytes, "
                f"got {len(body)}"
            )
        return np.frombuffer(body, dtype=dtype).reshape(shape).copy()

    def op_array(self, header: dict):
        array = self._array_from(header, self._body(header))
        aid = self._new_id()
        self.arrays[aid] = array
        return {"array": aid}, b""

    def _array(self, aid) -> np.ndarray:
        if aid not in self.arrays:
            raise RPCRemoteError(f"no remote array #{aid} in this session")
        return self.arrays[aid]

    def op_array_get(self, header: dict):
        self._no_body(header)
        a = np.ascontiguousarray(self._array(header.get("array")))
        return {"dtype": a.dtype.name, "shape": list(a.shape)}, memoryview(a).cast("B")

    def op_free(self, header: dict):
        self._no_body(header)
        for table in (self.arrays, self.graphs, self.modules):
            table.pop(header.get("handle"), None)
        return {}, b""

    # -- graph modules ---------------------------------------------------------------------

    def _graph(self, gid):
        if gid not in self.graphs:
            raise RPCRemoteError(f"no remote graph module #{gid} in this session")
        return self.graphs[gid]

    def op_graph_create(self, header: dict):
        from nnvm.runtime import graph_runtime

        text = self._body(header).decode("utf-8", "replace")
        mid = header.get("module")
        if mid not in self.modules:
            raise RPCRemoteError(f"no remote module #{mid} in this session")
        device = header.get("device")
        if device != "cpu":
            raise RPCRemoteError(f"device {str(device)[:20]!r} is not one this server has")
        m = graph_runtime.create(
            text, self.modules[mid], graph_runtime.cpu(0), bool(header.get("debug"))
        )
        gid = self._new_id()
        self.graphs[gid] = m
        return {
            "graph": gid,
            "inputs": [s.__dict__ for s in m.get_input_info()],
            "outputs": [s.__dict__ for s in m.get_output_info()],
        }, b""

    def op_graph_set_input(self, header: dict):
        m = self._graph(header.get("graph"))
        key = header.get("key")
        if not isinstance(key, str | int) or isinstance(key, bool):
            raise RPCRemoteError("set_input needs a name or an index")
        if "array" in header:
            self._no_body(header)
            value = self._array(header["array"])
        else:
            value = self._array_from(header, self._body(header))
        m.set_input(key, value)
        return {}, b""

    def op_graph_load_params(self, header: dict):
        m = self._graph(header.get("graph"))
        if "name" in header:
            self._no_body(header)
            m.load_params(self.work.real_path(header["name"]))
        else:
            m.load_params(bytearray(self._body(header)))
        return {}, b""

    def op_graph_run(self, header: dict):
        self._no_body(header)
        self._graph(header.get("graph")).run()
        return {}, b""

    def op_graph_get_output(self, header: dict):
        self._no_body(header)
        index = header.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise RPCRemoteError("get_output needs an integer index")
        out = self._graph(header.get("graph")).get_output(index)
        return {"dtype": out.dtype.name, "shape": list(out.shape)}, memoryview(out).cast("B")

    def op_graph_time(self, header: dict):
        self._no_body(header)
        from nnvm.rpc.timing import time_run

        m = self._graph(header.get("graph"))
        result = time_run(
            m.run, header.get("number", 10), header.get("repeat", 3), header.get("min_repeat_ms", 0)
        )
        return result.to_json(), b""

    def summary(self) -> dict:
        return {
            "requests": self.requests,
            "rejected": self.rejected,
            "seconds": round(time.monotonic() - self.started, 3),
        }


def run_session(sock: socket.socket, work_path: str, config: SessionConfig) -> int:
    """The body of a session process; returns its exit code (the parent reads `.summary`)."""
    work = WorkDir(work_path)
    session = Session(sock, work, config)

    def on_term(_sig, _frame):
        session.stopping = True
        if not session.busy:  # waiting for a request: end now; else after the current call
            raise _Stop(EXIT_OK, RPCShutdown("the server is shutting down"))

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        try:
            code = session.serve()
        except _Stop as stop:  # SIGTERM between requests
            if stop.error is not None:
                session.send_error(None, stop.error, final=True)
            code = stop.code
    except Exception as err:  # a bug: reported to the client, never a silent hang
        session.send_error(
            None, RPCError(f"internal server error: {type(err).__name__}: {err}"), final=True
        )
        code = EXIT_INTERNAL
    try:
        fd = os.open(
            ".summary", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600, dir_fd=work.fd
        )
        with os.fdopen(fd, "w") as f:
            json.dump(session.summary(), f)
    except OSError:
        pass
    protocol.close_gracefully(sock)
    return code
