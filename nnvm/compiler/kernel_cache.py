"""The on-disk kernel cache: one file per compiled kernel, keyed by a hash of the kernel's IR, its
target and the code that generates it. Entries carry their key and a checksum; a bad entry is a
warning, recompiled and replaced; writes are atomic and durable; an unwritable cache warns once
and the build goes on uncached."""

from __future__ import annotations

import hashlib
import importlib
import mmap
import os
import struct
import sys
import warnings
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import xxhash

MAGIC = b"NNVMKC2\0"
_HEADER = struct.Struct("<8s64s16sQ")
"""magic, key (hex), XXH3-128 of the payload (it finds damage; it authenticates nothing: 12
GB/s, where sha256's 1.1 GB/s took 0.5 s to check a 538 MB build cache entry), payload
length."""


class KernelCacheWarning(UserWarning):
    """The kernel cache could not be used as it is (a corrupt entry, a read-only folder)."""


def cache_dir() -> Path | None:
    """Where compiled kernels are kept (NNVM_CACHE_DIR, else ~/.cache/nnvm); 'off' disables."""
    env = os.environ.get("NNVM_CACHE_DIR")
    if env == "off":
        return None
    path = Path(env) if env else Path.home() / ".cache" / "nnvm" / "kernels"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        _warn(f"kernel cache {path} cannot be created ({err.strerror}): compiling uncached")
        return None
    return path


@cache
def code_fingerprint(package: str) -> str:
    """A hash of a package's code (its .py, .c and .h files): the cache must not hand out an
    object made by an older version of a schedule, a conversion or a plugin target."""
    module = importlib.import_module(package)
    roots = [Path(p) for p in getattr(module, "__path__", [])] or [Path(module.__file__).parent]
    h = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".c", ".h") and "__pycache__" not in path.parts:
                h.update(path.relative_to(root).as_posix().encode())
                h.update(path.read_bytes())
    h.update(str([str(r) for r in roots]).encode())
    return h.hexdigest()[:16]


def _warn(message: str) -> None:
    warnings.warn(message, KernelCacheWarning, stacklevel=3)


class KernelCache:
    """Get and put compiled kernels by key (a hex sha256)."""

    def __init__(self, root: Path | None):
        self.root = root
        self.writable = root is not None

    def entry_path(self, key: str, kind: str) -> Path:
        assert self.root is not None
        return self.root / f"{key}.{kind}.kc"

    def get(self, key: str, kind: str, writable: bool = False) -> bytes | memoryview | None:
        """The cached payload, or None; a corrupt or mismatched entry is removed with a warning.
        `writable`: a view of the file mapped copy-on-write, which arrays can view without a
        copy (pages come from the page cache, shared until written; entries are replaced by
        rename, never rewritten in place, so the mapping stays whole)."""
        if self.root is None:
            return None
        path = self.entry_path(key, kind)
        try:
            if writable:
                with open(path, "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    data: bytes | mmap.mmap = (
                        mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY) if size else b""
                    )
            else:
                data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            _warn(f"kernel cache entry {path} cannot be read ({err.strerror}): recompiling")
            return None
        problem = _check(data, key)
        if problem is None:
            return memoryview(data)[_HEADER.size :] if writable else data[_HEADER.size :]
        _warn(f"kernel cache entry {path} is {problem}: recompiling it")
        try:
            path.unlink()
        except OSError:
            pass
        return None

    def put(self, key: str, kind: str, payload: bytes | Sequence[bytes]) -> None:
        """Write an entry atomically (temp file, fsync, rename, fsync of the folder). The
        payload may come in parts, written one after another (a build entry's params are not
        copied into one buffer first)."""
        if self.root is None or not self.writable:
            return
        parts = [payload] if isinstance(payload, bytes) else list(payload)
        path = self.entry_path(key, kind)
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        length = sum(len(part) for part in parts)
        header = _HEADER.pack(MAGIC, key.encode(), _digest(*parts), length)
        try:
            with open(tmp, "wb") as f:
                f.write(header)
                for part in parts:
                    f.write(part)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            if sys.platform != "win32":
                fd = os.open(self.root, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        except OSError as err:
            self.writable = False
            _warn(f"kernel cache {self.root} is not writable ({err.strerror}): compiling uncached")
            try:
                tmp.unlink()
            except OSError:
                pass


def _digest(*parts: bytes | memoryview) -> bytes:
    """XXH3-128 of the parts one after another (the same as of their concatenation)."""
    h = xxhash.xxh3_128()
    for part in parts:
        h.update(part)
    return h.digest()


def _check(data: bytes, key: str) -> str | None:
    """Why an entry is not a good one for `key`, or None."""
    if len(data) < _HEADER.size:
        return "truncated"
    magic, stored_key, digest, length = _HEADER.unpack_from(data)
    if magic != MAGIC:
        return "not a kernel cache entry"
    if stored_key != key.encode():
        return "another kernel's"
    payload = memoryview(data)[_HEADER.size :]
    if len(payload) != length:
        return "truncated"
    if _digest(payload) != digest:
        return "corrupt (checksum mismatch)"
    return None
