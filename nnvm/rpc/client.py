"""The client: `remote = rpc.connect(host, port)`, then files (upload, download, remove,
listdir), modules (`load_module`), arrays (`array`, `.numpy()`), devices (`cpu(0)`) and graph
modules through `graph_runtime.create(graph, rlib, remote.cpu(0))`, all living in the server's
session process."""

from __future__ import annotations

import os
import socket
import ssl
import threading
from pathlib import Path

import numpy as np

from nnvm.rpc import auth, protocol
from nnvm.rpc.errors import (
    RPCAuthError,
    RPCConnectionError,
    RPCError,
    RPCProtocolError,
    RPCRemoteError,
    RPCSessionCrashed,
    RPCVersionError,
    error_from_wire,
)
from nnvm.rpc.protocol import Limits
from nnvm.rpc.timing import TimingResult, check_arguments


def _tls_context(tls) -> ssl.SSLContext | None:
    if tls is None or tls is False:
        return None
    if isinstance(tls, ssl.SSLContext):
        return tls
    ctx = ssl.create_default_context(cafile=None if tls is True else os.fspath(tls))
    return ctx


class RemoteSession:
    """A session on an nnvm-rpc server (see `connect`)."""

    def __init__(self, sock: socket.socket, token: bytes | None, timeout: float | None):
        self.sock = sock
        self.lock = threading.Lock()
        self.closed = False
        self.next_id = 0
        self._handshake(token)
        self.timeout = timeout if timeout is not None else self.call_timeout + 30.0
        sock.settimeout(self.timeout)

    def _handshake(self, token: bytes | None) -> None:
        protocol.send_all(self.sock, protocol.HANDSHAKE.pack(protocol.MAGIC, protocol.VERSION, 0))
        magic, version, status = protocol.HANDSHAKE.unpack(
            protocol.recv_exact(self.sock, protocol.HANDSHAKE.size)
        )
        if magic != protocol.MAGIC:
            raise RPCProtocolError(f"not an nnvm-rpc server (it answered {magic!r})")
        if status == protocol.STATUS_VERSION_MISMATCH or version != protocol.VERSION:
            raise RPCVersionError(
                f"protocol version mismatch: this client speaks {protocol.VERSION}, the server "
                f"{version}"
            )
        if status != protocol.STATUS_OK:
            raise RPCProtocolError(f"the server refused the handshake (status {status})")
        hello, _ = protocol.recv_message(self.sock, Limits())
        self.limits = Limits(**hello.get("limits", {}))
        self.devices = list(hello.get("devices", []))
        self.call_timeout = float(hello.get("call_timeout", 600.0))
        if hello.get("auth") is None:
            if token is not None:
                raise RPCAuthError("a token was given but the server does not authenticate clients")
            return
        if token is None:
            raise RPCAuthError("this server requires a token (connect(..., token=...))")
        cnonce = auth.new_nonce()
        protocol.send_message(
            self.sock,
            {
                "op": "auth",
                "cnonce": cnonce,
                "mac": auth.proof(token, hello["nonce"], cnonce, "client"),
            },
        )
        reply, _ = protocol.recv_message(self.sock, self.limits)
        if "error" in reply:
            raise error_from_wire(reply["error"])
        if not auth.verify(auth.proof(token, hello["nonce"], cnonce, "server"), reply.get("mac")):
            raise RPCAuthError("the server could not prove it knows the token")

    # -- requests --------------------------------------------------------------------------

    def _send(self, header: dict, body=b"", stream=None, size: int = 0) -> int:
        if self.closed:
            raise RPCConnectionError("the session is closed")
        self.next_id += 1
        header = {**header, "id": self.next_id}
        try:
            if stream is not None:
                protocol.send_header_then_stream(self.sock, header, size, stream)
            else:
                protocol.send_message(self.sock, header, body)
        except RPCConnectionError:
            raise self._parting_error() from None
        return self.next_id

    def _parting_error(self) -> RPCError:
        """Why the server closed: the final error it sent before hanging up, if any."""
        self.closed = True
        try:
            self.sock.settimeout(2.0)
            reply, _ = protocol.recv_message(self.sock, self.limits)
        except RPCError:
            return RPCConnectionError("the server closed the session")
        if "error" in reply:
            return error_from_wire(reply["error"])
        return RPCConnectionError("the server closed the session")

    def _reply(self, rid: int) -> tuple[dict, bytes]:
        try:
            reply, body = protocol.recv_message(self.sock, self.limits)
        except RPCConnectionError as err:
            self.closed = True
            raise RPCSessionCrashed(
                f"the session ended without answering ({err.message}); the session process died"
            ) from None
        if "error" in reply:
            if reply.get("id") is None:
                self.closed = True
            raise error_from_wire(reply["error"])
        if reply.get("id") != rid:
            raise RPCProtocolError(f"reply to request {reply.get('id')} while waiting for {rid}")
        return reply, body

    def call(self, op: str, body=b"", **args) -> tuple[dict, bytes]:
        with self.lock:
            return self._reply(self._send({"op": op, **args}, body))

    # -- files -----------------------------------------------------------------------------

    def upload(self, path: str | os.PathLike[str], target_name: str | None = None) -> str:
        """Copy a local file into the session's work dir (under its own name by default)."""
        p = Path(path)
        name = target_name if target_name is not None else p.name
        try:
            size = p.stat().st_size
            f = p.open("rb")
        except OSError as err:
            raise RPCError(f"cannot read {p}: {err.strerror}") from None
        if size > self.limits.max_upload:
            f.close()
            raise RPCRemoteError(
                f"{p} ({size} bytes) exceeds the server's upload limit of {self.limits.max_upload}"
            )
        with f, self.lock:
            chunks = iter(lambda: f.read(protocol.CHUNK), b"")
            rid = self._send({"op": "upload", "name": name}, stream=chunks, size=size)
            self._reply(rid)
        return name

    def download(self, name: str) -> bytes:
        return self.call("download", name=name)[1]

    def remove(self, name: str) -> None:
        self.call("remove", name=name)

    def listdir(self) -> list[str]:
        return [f["name"] for f in self.call("listdir")[0]["files"]]

    # -- modules, arrays, devices ----------------------------------------------------------

    def load_module(self, name: str) -> RemoteModule:
        reply, _ = self.call("load_module", name=name)
        return RemoteModule(self, reply["module"], reply["model_hash"], reply["target"])

    def array(self, value) -> RemoteArray:
        a = np.ascontiguousarray(value)
        reply, _ = self.call(
            "array", memoryview(a).cast("B"), dtype=a.dtype.name, shape=list(a.shape)
        )
        return RemoteArray(self, reply["array"], a.shape, a.dtype)

    def device(self, kind: str, index: int = 0) -> RemoteDevice:
        if kind not in self.devices:
            raise RPCRemoteError(
                f"the server has no {kind} device (it has: {', '.join(self.devices)})"
            )
        if index != 0:
            raise RPCRemoteError(f"{kind}({index}): the server has only {kind}(0)")
        return RemoteDevice(self, kind, index)

    def cpu(self, index: int = 0) -> RemoteDevice:
        return self.device("cpu", index)

    def opencl(self, index: int = 0) -> RemoteDevice:
        return self.device("opencl", index)

    def cuda(self, index: int = 0) -> RemoteDevice:
        return self.device("cuda", index)

    def close(self) -> None:
        if self.closed:
            return
        try:
            self.call("close")
        except RPCError:
            pass
        finally:
            self.closed = True
            self.sock.close()

    def __enter__(self) -> RemoteSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class RemoteDevice:
    """A device of the server (`remote.cpu(0)`); graph_runtime.create asks it to build the
    graph module there."""

    def __init__(self, session: RemoteSession, kind: str, index: int):
        self.session, self.kind, self.index = session, kind, index

    def __str__(self) -> str:
        return f"remote {self.kind}({self.index})"

    def create_graph_module(self, graph, lib, device, debug: bool = False) -> RemoteGraphModule:
        from nnvm.runtime.graph_runtime import _as_graph

        if not isinstance(lib, RemoteModule) or lib.session is not self.session:
            raise RPCRemoteError(
                "a remote device runs a library of its own session: upload the library and "
                "pass remote.load_module(name)"
            )
        g = _as_graph(graph)
        if g.model_hash != lib.model_hash:
            raise RPCRemoteError(
                f"graph (model {g.model_hash or '?'}) and library (model {lib.model_hash or '?'}) "
                "come from different builds"
            )
        reply, _ = self.session.call(
            "graph_create",
            g.to_json().encode(),
            module=lib.handle,
            device=self.kind,
            debug=debug,
        )
        return RemoteGraphModule(self.session, reply["graph"], reply["inputs"], reply["outputs"])


class RemoteModule:
    """A model library loaded in the session process (`remote.load_module(name)`)."""

    def __init__(self, session: RemoteSession, handle: int, model_hash: str, target: str):
        self.session, self.handle, self.model_hash, self.target = (
            session,
            handle,
            model_hash,
            target,
        )

    def create_graph_module(self, graph, lib, device, debug: bool = False):
        if device is None:
            device = self.session.cpu(0)
        if not isinstance(device, RemoteDevice):
            raise RPCRemoteError(
                f"this library lives on a remote session; pass its device (remote.cpu(0)), "
                f"not {device}"
            )
        return device.create_graph_module(graph, lib, device, debug)


class RemoteArray:
    def __init__(self, session: RemoteSession, handle: int, shape, dtype):
        self.session, self.handle = session, handle
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)

    def numpy(self) -> np.ndarray:
        reply, body = self.session.call("array_get", array=self.handle)
        return np.frombuffer(body, dtype=reply["dtype"]).reshape(reply["shape"]).copy()


class RemoteGraphModule:
    """The graph runtime's module, running in the session process: set_input, load_params,
    run, get_output as locally, and time_evaluator timing there."""

    def __init__(self, session: RemoteSession, handle: int, inputs: list, outputs: list):
        self.session, self.handle = session, handle
        self.inputs, self.outputs = inputs, outputs

    def set_input(self, key=None, value=None, **params) -> None:
        items = ([(key, value)] if key is not None else []) + list(params.items())
        for k, v in items:
            if isinstance(v, RemoteArray):
                self.session.call("graph_set_input", graph=self.handle, key=k, array=v.handle)
                continue
            a = np.ascontiguousarray(v)
            self.session.call(
                "graph_set_input",
                memoryview(a).cast("B"),
                graph=self.handle,
                key=k,
                dtype=a.dtype.name,
                shape=list(a.shape),
            )

    def load_params(self, data) -> None:
        """Params from bytes (sent), or the name of a file uploaded to the session."""
        if isinstance(data, str):
            self.session.call("graph_load_params", graph=self.handle, name=data)
        else:
            self.session.call("graph_load_params", bytes(data), graph=self.handle)

    def run(self, **inputs) -> None:
        if inputs:
            self.set_input(**inputs)
        self.session.call("graph_run", graph=self.handle)

    def get_num_outputs(self) -> int:
        return len(self.outputs)

    def get_output(self, index: int) -> np.ndarray:
        reply, body = self.session.call("graph_get_output", graph=self.handle, index=index)
        return np.frombuffer(body, dtype=reply["dtype"]).reshape(reply["shape"]).copy()

    def time_evaluator(self, number: int = 10, repeat: int = 3, min_repeat_ms: float = 0):
        """A function that times `run()` on the server and returns a TimingResult (seconds)."""
        check_arguments(number, repeat, min_repeat_ms)

        def evaluate() -> TimingResult:
            reply, _ = self.session.call(
                "graph_time",
                graph=self.handle,
                number=number,
                repeat=repeat,
                min_repeat_ms=min_repeat_ms,
            )
            return TimingResult(tuple(reply["results"]), reply["number"])

        return evaluate


def connect(
    host: str,
    port: int,
    key: str | None = None,
    token: str | bytes | None = None,
    tls=None,
    timeout: float | None = None,
    connect_timeout: float = 10.0,
    server_hostname: str | None = None,
) -> RemoteSession:
    """A session on the server at host:port. `token`: the shared token (required when the
    server has one); `tls`: True (system CAs), a CA file path (e.g. a self-signed cert), or an
    SSLContext; `timeout`: seconds to wait for one reply (default: the server's call timeout
    plus 30 s). `key` is accepted for TVM's signature; a tracker matches keys (rpc.tracker)."""
    del key
    tok = token.encode() if isinstance(token, str) else token
    try:
        raw = protocol.no_delay(socket.create_connection((host, port), timeout=connect_timeout))
    except OSError as err:
        raise RPCConnectionError(f"cannot connect to {host}:{port}: {err}") from None
    sock: socket.socket = raw
    ctx = _tls_context(tls)
    try:
        if ctx is not None:
            sock = ctx.wrap_socket(raw, server_hostname=server_hostname or host)
        return RemoteSession(sock, tok, timeout)
    except ssl.SSLError as err:
        raw.close()
        raise RPCConnectionError(f"TLS handshake with {host}:{port} failed: {err}") from None
    except BaseException:
        sock.close()
        raise
