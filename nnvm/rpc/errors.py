"""The typed errors of a remote session: each says which side failed and why, so a caller (a
tuner) can tell a timeout from a crash from a refusal without parsing messages."""

from __future__ import annotations

from nnvm.support.errors import UserError


class RPCError(UserError):
    """Any failure of a remote session; `kind` is the wire name of the error."""

    kind = "error"


class RPCProtocolError(RPCError):
    """A frame that breaks the wire protocol (bad magic, malformed or oversized frame)."""

    kind = "protocol"


class RPCVersionError(RPCProtocolError):
    """Client and server speak different protocol versions."""

    kind = "version"


class RPCAuthError(RPCError):
    """The token was missing, wrong, or the server could not prove it knows it."""

    kind = "auth"


class RPCTimeoutError(RPCError):
    """A call or the session ran past its time limit (the session process was ended)."""

    kind = "timeout"


class RPCSessionCrashed(RPCError):
    """The session process died (a kernel segfaulted, was killed, ran out of memory)."""

    kind = "crashed"


class RPCConnectionError(RPCError):
    """The connection could not be made or was lost."""

    kind = "connection"


class RPCRemoteError(RPCError):
    """The server refused a request (a bad path, a bad array, a model error) and said why."""

    kind = "remote"


class RPCShutdown(RPCError):
    """The server is shutting down (SIGTERM) and ended the session."""

    kind = "shutdown"


KINDS: dict[str, type[RPCError]] = {
    cls.kind: cls
    for cls in (
        RPCError,
        RPCProtocolError,
        RPCVersionError,
        RPCAuthError,
        RPCTimeoutError,
        RPCSessionCrashed,
        RPCConnectionError,
        RPCRemoteError,
        RPCShutdown,
    )
}


def error_from_wire(payload: dict) -> RPCError:
    """The exception an error reply stands for."""
    cls = KINDS.get(str(payload.get("type", "error")), RPCError)
    return cls(f"remote: {payload.get('message', 'unknown error')}")
