"""Shared-token authentication, both ways: the client proves it knows the token by an HMAC of
the server's fresh nonce and its own, and the server proves it back (so a client never talks to
an impostor that merely accepts anything). The token itself never crosses the wire."""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

from nnvm.rpc.errors import RPCAuthError

NONCE_BYTES = 32
_LABEL = b"nnvm-rpc-auth-v1"


def new_nonce() -> str:
    return os.urandom(NONCE_BYTES).hex()


def proof(token: bytes, server_nonce: str, client_nonce: str, side: str) -> str:
    msg = b"|".join([_LABEL, server_nonce.encode(), client_nonce.encode(), side.encode()])
    return hmac.new(token, msg, hashlib.sha256).hexdigest()


def verify(expected: str, got: object) -> bool:
    return isinstance(got, str) and hmac.compare_digest(expected.encode(), got.encode())


def read_token_file(path: str | os.PathLike[str]) -> bytes:
    """The token from a file (surrounding whitespace stripped); an empty one is refused, and a
    file others can read is refused too (the token is the whole of the authentication)."""
    p = Path(path)
    try:
        mode = p.stat().st_mode
        data = p.read_bytes().strip()
    except OSError as err:
        raise RPCAuthError(f"cannot read the token file {p}: {err.strerror}") from None
    if mode & 0o077:
        raise RPCAuthError(f"the token file {p} is readable by others; chmod 600 it")
    if len(data) < 16:
        raise RPCAuthError(f"the token in {p} is shorter than 16 bytes")
    return data
