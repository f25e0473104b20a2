"""A server that does not trust its clients: each hostile input gets a clear error (or a closed
connection where the stream is beyond saving), the server stays up, and no session process or
work dir is left behind."""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from nnvm import rpc
from nnvm.rpc import protocol
from nnvm.runtime import graph_runtime


def _raw(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    return s


def _hello(sock: socket.socket, magic=protocol.MAGIC, version=protocol.VERSION) -> int:
    sock.sendall(protocol.HANDSHAKE.pack(magic, version, 0))
    _magic, _version, status = protocol.HANDSHAKE.unpack(
        protocol.recv_exact(sock, protocol.HANDSHAKE.size)
    )
    if status == protocol.STATUS_OK:
        protocol.recv_message(sock, protocol.Limits())
    return status


def _final_error(sock: socket.socket) -> dict:
    header, _ = protocol.recv_message(sock, protocol.Limits())
    assert "error" in header, header
    return header["error"]


def _still_serving(port: int) -> None:
    with rpc.connect("127.0.0.1", port) as remote:
        assert remote.listdir() == []


def test_wrong_magic_and_version_are_refused(server):
    with _raw(server.port) as s:
        assert _hello(s, magic=b"GET / HT") == protocol.STATUS_BAD_MAGIC
        assert "bad magic" in _final_error(s)["message"]
    with _raw(server.port) as s:
        assert _hello(s, version=protocol.VERSION + 1) == protocol.STATUS_VERSION_MISMATCH
        err = _final_error(s)
        assert err["type"] == "protocol" and "version mismatch" in err["message"]
    _still_serving(server.port)


def test_client_sees_a_version_mismatch_as_a_typed_error(monkeypatch, server):
    monkeypatch.setattr(protocol, "VERSION", protocol.VERSION + 7)
    with pytest.raises(rpc.RPCVersionError, match="version mismatch"):
        rpc.connect("127.0.0.1", server.port)


@pytest.mark.parametrize(
    "frame, expect",
    [
        (protocol.FRAME.pack(5, 9) + b"hello", "unknown frame kind"),
        (protocol.FRAME.pack(2**31, protocol.KIND_HEADER), "exceeds the limit"),
        (protocol.FRAME.pack(7, protocol.KIND_HEADER) + b"{nojson", "not JSON"),
        (protocol.FRAME.pack(2, protocol.KIND_HEADER) + b"[]", "not a JSON object"),
        (protocol.FRAME.pack(3, protocol.KIND_BODY) + b"abc", "body frame where"),
    ],
)
def test_malformed_and_oversized_frames(server, frame, expect):
    with _raw(server.port) as s:
        assert _hello(s) == protocol.STATUS_OK
        s.sendall(frame)
        err = _final_error(s)
        assert err["type"] == "protocol" and expect in err["message"]
    _still_serving(server.port)


def test_oversized_body_and_disconnect_mid_frame(server):
    with _raw(server.port) as s:
        _hello(s)
        head = json.dumps(
            {"op": "array", "id": 1, "dtype": "uint8", "shape": [1], "nbody": 1 << 40}
        ).encode()
        s.sendall(protocol.FRAME.pack(len(head), protocol.KIND_HEADER) + head)
        assert "exceeds the limit" in _final_error(s)["message"]
    for cut in (3, protocol.FRAME.size + 4):
        s = _raw(server.port)
        _hello(s)
        head = json.dumps({"op": "listdir", "id": 1}).encode()
        s.sendall((protocol.FRAME.pack(len(head), protocol.KIND_HEADER) + head)[:cut])
        s.close()
    _still_serving(server.port)


@pytest.mark.parametrize(
    "name, expect",
    [
        ("../escape.so", "'..'"),
        ("..", "'..'"),
        ("/etc/passwd", "absolute path"),
        ("/tmp/x.so", "absolute path"),
        ("sub/dir.so", "flat"),
        (".hidden", "refused"),
        ("a\x00b", "NUL"),
        ("x" * 300, "refused"),
    ],
)
def test_uploads_are_confined(server, model, name, expect, tmp_path):
    src = tmp_path / "f.bin"
    src.write_bytes(b"payload")
    with rpc.connect("127.0.0.1", server.port) as remote:
        with pytest.raises(rpc.RPCRemoteError, match=expect):
            remote.upload(src, target_name=name)
        with pytest.raises(rpc.RPCRemoteError, match=expect):
            remote.download(name)
        assert remote.listdir() == []
        remote.upload(src)  # the session goes on
        assert remote.download("f.bin") == b"payload"
    assert not (server.work.parent / "escape.so").exists()


def test_unknown_request_and_bad_arrays(server):
    with rpc.connect("127.0.0.1", server.port) as remote:
        with pytest.raises(rpc.RPCRemoteError, match="unknown request"):
            remote.call("exec", b"rm -rf /")
        with pytest.raises(rpc.RPCRemoteError, match="needs 16 bytes"):
            remote.call("array", b"\x00" * 3, dtype="float32", shape=[4])
        with pytest.raises(rpc.RPCRemoteError, match="unsupported array dtype"):
            remote.call("array", b"", dtype="object", shape=[0])
        with pytest.raises(rpc.RPCRemoteError, match="no remote graph module"):
            remote.call("graph_run", graph=12345)
        a = remote.array(np.arange(6, dtype=np.int64).reshape(2, 3))
        np.testing.assert_array_equal(a.numpy(), np.arange(6).reshape(2, 3))


def _token_file(tmp_path: Path, token: bytes) -> Path:
    p = tmp_path / "token"
    p.write_bytes(token)
    p.chmod(0o600)
    return p


def test_token_authentication(server_factory, tmp_path):
    token = b"s3cret-token-0123456789"
    srv = server_factory("--token-file", str(_token_file(tmp_path, token)))
    with rpc.connect("127.0.0.1", srv.port, token=token) as remote:
        assert remote.listdir() == []
    with pytest.raises(rpc.RPCAuthError, match="bad token"):
        rpc.connect("127.0.0.1", srv.port, token=b"wrong-token-0123456789")
    with pytest.raises(rpc.RPCAuthError, match="requires a token"):
        rpc.connect("127.0.0.1", srv.port)
    with _raw(srv.port) as s:  # a client that skips auth and sends a request
        _hello(s)
        protocol.send_message(s, {"op": "listdir", "id": 1})
        assert _final_error(s)["type"] == "auth"
    with rpc.connect("127.0.0.1", srv.port, token=token) as remote:
        assert remote.listdir() == []
    assert srv.stop() == 0
    # the bad token and the skipped auth; the client without a token hangs up by itself
    assert srv.log_text().count("auth refused") == 2
    assert srv.sessions() == []


def test_token_file_readable_by_others_is_refused(tmp_path):
    p = tmp_path / "token"
    p.write_bytes(b"s3cret-token-0123456789")
    p.chmod(0o644)
    proc = subprocess.run(
        ["python", "-m", "nnvm.rpc.server", "--port", "0", "--token-file", str(p)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and "readable by others" in proc.stderr
    assert "Traceback" not in proc.stderr


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("neither needed: the openssl CLI is missing, so no self-signed certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


def test_tls_with_a_self_signed_certificate(server_factory, model, tmp_path):
    cert, key = _self_signed(tmp_path)
    token = b"another-token-0123456789"
    srv = server_factory(
        "--tls-cert",
        str(cert),
        "--tls-key",
        str(key),
        "--token-file",
        str(_token_file(tmp_path, token)),
    )
    graph, _lib, params, inputs, path = model
    with rpc.connect("127.0.0.1", srv.port, token=token, tls=cert) as remote:
        remote.upload(path)
        m = graph_runtime.create(graph, remote.load_module("mylib.so"), remote.cpu(0))
        m.set_input(**params)
        m.run(**inputs)
        assert m.get_output(0).shape == tuple(graph.outputs[0].shape)
    with pytest.raises(rpc.RPCConnectionError, match="TLS handshake"):
        rpc.connect("127.0.0.1", srv.port, token=token, tls=True)  # not a system-trusted cert
    with pytest.raises(rpc.RPCError):  # plain text to a TLS server
        rpc.connect("127.0.0.1", srv.port, token=token, timeout=5)
    assert srv.stop() == 0


STUB = r"""
#include <stdlib.h>
#include <unistd.h>
const char nnvm_build_target[] = "triple=x86_64-unknown-linux-gnu;cpu=x86-64;features=";
const char *nnvm_model_hash(void) { return HASH; }
const char *nnvm_target(void) { return "llvm"; }
const char *nnvm_last_error(void) { return ""; }
int nnvm_abi_version(void) { return 3; }
void *nnvm_create(const void *p, size_t n) { (void)p; (void)n; return malloc(16); }
void nnvm_destroy(void *h) { free(h); }
int nnvm_run(void *h, void **in, void **out) {
  (void)h; (void)in; (void)out;
#ifdef HANG
  for (;;) pause();
#else
  *(volatile int *)0 = 1;
#endif
  return 0;
}
"""


def _stub(tmp_path: Path, graph, hang: bool) -> Path:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) to build the misbehaving library")
    src = tmp_path / "stub.c"
    src.write_text(STUB)
    out = tmp_path / ("libhang.so" if hang else "libsegv.so")
    cmd = [
        "cc",
        "-shared",
        "-fPIC",
        "-O1",
        f'-DHASH="{graph.model_hash}"',
        str(src),
        "-o",
        str(out),
    ]
    subprocess.run(cmd + (["-DHANG"] if hang else []), check=True, timeout=60)
    return out


def _run_stub(port: int, model, lib: Path):
    graph, _lib, params, inputs, _path = model
    remote = rpc.connect("127.0.0.1", port)
    remote.upload(lib)
    m = graph_runtime.create(graph, remote.load_module(lib.name), remote.cpu(0))
    m.set_input(**params)
    m.set_input(**inputs)
    return remote, m


def test_a_segfaulting_kernel_ends_only_its_session(server, model, tmp_path):
    remote, m = _run_stub(server.port, model, _stub(tmp_path, model[0], hang=False))
    with pytest.raises(rpc.RPCSessionCrashed, match="SIGSEGV"):
        m.run()
    with pytest.raises(rpc.RPCConnectionError):
        m.run()
    _still_serving(server.port)
    assert "crashed (SIGSEGV)" in server.log_text()


def test_a_hanging_kernel_is_a_call_timeout(server_factory, model, tmp_path):
    srv = server_factory("--call-timeout", "1")
    remote, m = _run_stub(srv.port, model, _stub(tmp_path, model[0], hang=True))
    with pytest.raises(rpc.RPCTimeoutError, match="call timeout"):
        m.run()
    _still_serving(srv.port)
    assert srv.stop() == 0
    assert "call timeout" in srv.log_text() and srv.sessions() == []


def test_idle_sessions_time_out(server_factory):
    srv = server_factory("--idle-timeout", "0.5")
    remote = rpc.connect("127.0.0.1", srv.port)
    time.sleep(1.0)
    with pytest.raises(rpc.RPCTimeoutError, match="idle"):
        remote.listdir()
    assert srv.stop() == 0


def test_sigterm_ends_sessions_and_cleans_up(server_factory):
    srv = server_factory()
    remotes = [rpc.connect("127.0.0.1", srv.port) for _ in range(3)]
    for r in remotes:
        r.listdir()
    assert len(srv.sessions()) == 3
    assert srv.stop() == 0
    for r in remotes:
        with pytest.raises(rpc.RPCShutdown):
            r.listdir()
    assert not srv.work.exists() or srv.sessions() == []
    assert "stopped after 3 sessions" in srv.log_text()


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


N_CLIENTS = 50


def test_fifty_concurrent_clients(server, model, tmp_path):
    graph, _lib, params, inputs, path = model
    rng = np.random.default_rng(0)
    name = next(iter(inputs))
    feeds = [rng.standard_normal(inputs[name].shape).astype(np.float32) for _ in range(N_CLIENTS)]
    local = graph_runtime.create(graph, model[1])
    local.set_input(**params)
    expected = []
    for x in feeds:
        local.run(**{name: x})
        expected.append(local.get_output(0))
    results: list = [None] * N_CLIENTS

    def client(k: int) -> None:
        try:
            with rpc.connect("127.0.0.1", server.port, timeout=120) as remote:
                remote.upload(path)
                m = graph_runtime.create(graph, remote.load_module("mylib.so"), remote.cpu(0))
                m.set_input(**params)
                m.run(**{name: feeds[k]})
                results[k] = m.get_output(0)
        except Exception as err:  # collected, reported below
            results[k] = err

    threads = [threading.Thread(target=client, args=(k,)) for k in range(N_CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    errors = [r for r in results if not isinstance(r, np.ndarray)]
    assert not errors, errors[:3]
    for got, want in zip(results, expected, strict=True):
        np.testing.assert_array_equal(got, want)
    deadline = time.monotonic() + 20
    while (server.sessions() or _children(server.proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.sessions() == [] and _children(server.proc.pid) == []
    assert server.proc.poll() is None


def test_a_symlink_in_the_work_dir_is_not_followed(server, tmp_path):
    with rpc.connect("127.0.0.1", server.port) as remote:
        (session,) = server.sessions()  # plant a link as a local attacker might
        os.symlink("/etc/passwd", server.work / session / "link.so")
        with pytest.raises(rpc.RPCRemoteError, match="cannot open 'link.so'"):
            remote.download("link.so")
        with pytest.raises(rpc.RPCRemoteError, match="cannot open 'link.so'"):
            remote.load_module("link.so")
        src = tmp_path / "f.bin"
        src.write_bytes(b"x")
        with pytest.raises(rpc.RPCRemoteError, match="not a regular file"):
            remote.upload(src, target_name="link.so")
        assert remote.listdir() == []
    assert Path("/etc/passwd").stat().st_size > 1


def test_a_client_that_disconnects_mid_body(server):
    with _raw(server.port) as s:
        _hello(s)
        head = json.dumps({"op": "upload", "id": 1, "name": "part.so", "nbody": 1000}).encode()
        s.sendall(protocol.FRAME.pack(len(head), protocol.KIND_HEADER) + head)
        s.sendall(protocol.FRAME.pack(1000, protocol.KIND_BODY) + b"x" * 10)
    _still_serving(server.port)


def _fuzz(port: int, cases: int, seed: int) -> dict[str, int]:
    """Random frames after a good handshake: every case gets an error frame or a close, never a
    hang; returns how each case ended."""
    rng = np.random.default_rng(seed)
    ends = {"error": 0, "closed": 0, "answered": 0}
    for _ in range(cases):
        with _raw(port) as s:
            s.settimeout(10)
            _hello(s)
            kind = int(rng.integers(0, 4))
            if kind == 0:
                data = rng.bytes(int(rng.integers(1, 64)))
            elif kind == 1:  # a plausible header with random fields
                fields = {
                    "op": str(rng.choice(["upload", "array", "graph_run", "download", "x"])),
                    "id": int(rng.integers(0, 9)),
                    "name": rng.bytes(4).hex(),
                    "dtype": str(rng.choice(["float32", "int8", "object"])),
                    "shape": [int(d) for d in rng.integers(-2, 4, size=2)],
                    "nbody": int(rng.integers(0, 3)),
                }
                head = json.dumps(fields).encode()
                data = protocol.FRAME.pack(len(head), 1) + head
                data += b"".join(protocol.FRAME.pack(1, 2) + b"z" for _ in range(fields["nbody"]))
            elif kind == 2:
                data = struct.pack(">IB", int(rng.integers(0, 2**32)), int(rng.integers(0, 256)))
            else:
                head = rng.bytes(int(rng.integers(1, 32)))
                data = protocol.FRAME.pack(len(head), 1) + head
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            try:
                header, _ = protocol.recv_message(s, protocol.Limits())
                ends["error" if "error" in header else "answered"] += 1
            except rpc.RPCConnectionError:
                ends["closed"] += 1
    return ends


def test_random_frames_fast(server):
    ends = _fuzz(server.port, 40, seed=1)
    assert sum(ends.values()) == 40
    _still_serving(server.port)


@pytest.mark.slow
def test_random_frames_sweep(server):
    ends = _fuzz(server.port, 2000, seed=2)
    assert sum(ends.values()) == 2000
    _still_serving(server.port)
