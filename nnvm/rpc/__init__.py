"""Remote execution: upload a compiled model to an nnvm-rpc server, run and time it there.

    remote = rpc.connect(host, port)
    remote.upload("mylib.so")
    rlib = remote.load_module("mylib.so")
    m = graph_runtime.create(graph, rlib, remote.cpu(0))

The server (`python -m nnvm.rpc.server`) does not trust its clients: docs/rpc.md."""

from nnvm.rpc.client import (
    RemoteArray,
    RemoteDevice,
    RemoteGraphModule,
    RemoteModule,
    RemoteSession,
    connect,
)
from nnvm.rpc.errors import (
    RPCAuthError,
    RPCConnectionError,
    RPCError,
    RPCProtocolError,
    RPCRemoteError,
    RPCSessionCrashed,
    RPCShutdown,
    RPCTimeoutError,
    RPCVersionError,
)
from nnvm.rpc.timing import TimingResult, time_run

__all__ = [
    "connect",
    "RemoteSession",
    "RemoteDevice",
    "RemoteModule",
    "RemoteArray",
    "RemoteGraphModule",
    "RPCError",
    "RPCProtocolError",
    "RPCVersionError",
    "RPCAuthError",
    "RPCTimeoutError",
    "RPCSessionCrashed",
    "RPCConnectionError",
    "RPCRemoteError",
    "RPCShutdown",
    "TimingResult",
    "time_run",
]
