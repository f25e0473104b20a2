"""The params file: one documented binary format for weights that Python and C both read
(docs/params-format.md). Weights stay out of the textual IR; this is where they travel."""

from __future__ import annotations

import math
import os
import struct
import zlib
from collections.abc import Mapping

import numpy as np
import xxhash

from nnvm.support.errors import UserError

MAGIC = b"NNVMPRM\0"
VERSION = 1
VERSION_WITH_HASH = 2
VERSION_CHECKED = 3
"""What save_params writes: the model hash field (zero: tied to no build) and a trailing CRC-32
of every byte before it, so any single-bit flip is detected. 1 and 2 are still read."""
VERSIONS = (VERSION, VERSION_WITH_HASH, VERSION_CHECKED)
HASH_BYTES = 32
ALIGNMENT = 64

#: dtype code <-> numpy dtype. Codes are part of the file format: never renumber, only append.
DTYPE_CODES: dict[int, np.dtype] = {
    0: np.dtype(np.float32),
    1: np.dtype(np.float16),
    2: np.dtype(np.float64),
    3: np.dtype(np.int64),
    4: np.dtype(np.int32),
    5: np.dtype(np.int16),
    6: np.dtype(np.int8),
    7: np.dtype(np.uint8),
    8: np.dtype(np.bool_),
    9: np.dtype(np.uint16),
    10: np.dtype(np.uint32),
    11: np.dtype(np.uint64),
}
_CODE_OF: dict[np.dtype, int] = {dt: code for code, dt in DTYPE_CODES.items()}

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_HEADER = struct.Struct("<8sII")


def _pad_to(offset: int) -> int:
    return (-offset) % ALIGNMENT


def save_params(
    params: Mapping[str, np.ndarray], model_hash: str = "", version: int = VERSION_CHECKED
) -> bytes:
    """Serialize a params store (version 3 unless asked for an older one, for older readers);
    entries are written in the mapping's order. With a model hash (the params of one build) the
    file records it, so a library of another build refuses these params; version 3's trailing
    CRC-32 lets both loaders detect corruption. The tensors' bytes are copied once, into the
    result (`save_params_file` streams them to the file instead)."""
    return b"".join(param_chunks(params, model_hash, version))


def param_chunks(
    params: Mapping[str, np.ndarray], model_hash: str = "", version: int = VERSION_CHECKED
) -> list[bytes | memoryview]:
    """The params file as its pieces, in order: headers, padding, and each tensor's data as a
    view of the array (no copy unless it is strided or not little-endian), the CRC last."""
    tag = model_hash.encode("ascii")
    if len(tag) > HASH_BYTES:
        raise UserError(f"params: model hash longer than {HASH_BYTES} characters")
    if version not in VERSIONS or (version == VERSION and model_hash):
        raise UserError(f"params: cannot write version {version} with hash {model_hash!r}")
    chunks: list[bytes | memoryview] = [_HEADER.pack(MAGIC, version, len(params))]
    if version != VERSION:
        chunks.append(tag.ljust(HASH_BYTES, b"\0"))
    offset = sum(len(c) for c in chunks)
    for name, value in params.items():
        if not isinstance(name, str) or not name:
            raise UserError(f"params: tensor names must be non-empty strings, got {name!r}")
        array = np.asarray(value)
        code = _CODE_OF.get(array.dtype.newbyteorder("="))
        if code is None:
            raise UserError(f"params: tensor {name!r} has unsupported dtype {array.dtype}")
        stored = np.ascontiguousarray(array, dtype=DTYPE_CODES[code].newbyteorder("<"))
        data = memoryview(stored.reshape(-1).view(np.uint8))
        encoded = name.encode("utf-8")
        head = (
            _U32.pack(len(encoded))
            + encoded
            + _U32.pack(code)
            + _U32.pack(array.ndim)
            + struct.pack(f"<{array.ndim}q", *array.shape)
            + _U64.pack(data.nbytes)
        )
        offset += len(head)
        padding = b"\0" * _pad_to(offset)
        offset += len(padding) + data.nbytes
        chunks += [head, padding, data]
    if version == VERSION_CHECKED:
        crc = 0
        for c in chunks:
            crc = zlib.crc32(c, crc)
        chunks.append(_U32.pack(crc))
    return chunks


class _Reader:
    """Bounds-checked cursor over the file bytes, so truncation is a UserError, not a crash."""

    def __init__(self, data: bytes | bytearray | memoryview, where: str):
        self.data = memoryview(data)
        self.pos = 0
        self.where = where

    def fail(self, what: str) -> UserError:
        return UserError(f"malformed params file: {what} (at byte {self.pos})", self.where or None)

    def take(self, n: int, what: str) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"truncated while reading {what}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def u32(self, what: str) -> int:
        return _U32.unpack(self.take(4, what))[0]

    def u64(self, what: str) -> int:
        return _U64.unpack(self.take(8, what))[0]


def params_fingerprint(params: Mapping[str, np.ndarray]) -> bytes:
    """A digest of a params store (names, dtypes, shapes, data, in order) hashed in place: what
    the model hash of a build covers, without serializing 100 MB of weights to hash them.

    XXH3-128, not a cryptographic hash: the model hash tells builds apart, it does not
    authenticate them (the RPC server checks an HMAC for that). It runs at 12 GB/s here, where
    sha256 ran at 1.1 GB/s: half a second of each warm build of a 564 MB checkpoint (BLOOM's
    250k-token embedding). A strided view (a weight the importer transposed) is hashed as the
    buffer it views and where in it, not copied."""
    h = xxhash.xxh3_128()
    for name, value in params.items():
        array = np.asarray(value)
        data, where = _hashed_memory(array)
        h.update(f"{name}\0{array.dtype.str}\0{array.shape}\0{where}\0".encode())
        h.update(data)
    return h.digest()


def _hashed_memory(array: np.ndarray) -> tuple[np.ndarray, str]:
    """The bytes that determine `array`'s values and how it reads them: its own when it is
    C-contiguous, else the contiguous array it views with its offset and strides."""
    if array.flags.c_contiguous:
        return array.reshape(-1).view(np.uint8), ""
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root.flags.c_contiguous and root.dtype.itemsize:
        offset = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        return root.reshape(-1).view(np.uint8), f"view {offset} {array.strides}"
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8), ""


def load_params(data: bytes | bytearray | memoryview, where: str = "") -> dict[str, np.ndarray]:
    """Parse a params file; arrays view `data` when it is writable, else they are copies."""
    reader = _Reader(data, where)
    magic = bytes(reader.take(8, "the magic"))
    if magic != MAGIC:
        raise reader.fail(f"bad magic {magic!r}, expected {MAGIC!r}")
    version = reader.u32("the version")
    if version not in VERSIONS:
        raise reader.fail(f"unsupported version {version} (this build reads {VERSIONS})")
    if version == VERSION_CHECKED:
        if len(reader.data) < 4 + reader.pos:
            raise reader.fail("truncated: no checksum")
        body = reader.data[:-4]
        if _U32.unpack(reader.data[-4:])[0] != zlib.crc32(body):
            raise reader.fail("checksum mismatch: the file is corrupt")
        reader.data = body
    count = reader.u32("the tensor count")
    if version != VERSION:
        reader.take(HASH_BYTES, "the model hash")
    writable = not memoryview(data).readonly
    params: dict[str, np.ndarray] = {}
    for k in range(count):
        length = reader.u32(f"the name length of tensor #{k}")
        try:
            name = bytes(reader.take(length, f"the name of tensor #{k}")).decode("utf-8")
        except UnicodeDecodeError:
            raise reader.fail(f"the name of tensor #{k} is not UTF-8") from None
        if not name or name in params:
            raise reader.fail(f"tensor #{k} has an empty or duplicate name {name!r}")
        code = reader.u32(f"the dtype of {name!r}")
        if code not in DTYPE_CODES:
            raise reader.fail(f"tensor {name!r} has unknown dtype code {code}")
        dtype = DTYPE_CODES[code]
        ndim = reader.u32(f"the rank of {name!r}")
        if ndim > 64:
            raise reader.fail(f"tensor {name!r} has implausible rank {ndim}")
        dims = struct.unpack(f"<{ndim}q", reader.take(8 * ndim, f"the shape of {name!r}"))
        if any(d < 0 for d in dims):
            raise reader.fail(f"tensor {name!r} has a negative dimension {list(dims)}")
        nbytes = reader.u64(f"the size of {name!r}")
        expected = math.prod(dims) * dtype.itemsize  # Python ints: no wrap-around
        if nbytes != expected:
            raise reader.fail(
                f"tensor {name!r} declares {nbytes} bytes, but {dtype}{list(dims)} needs {expected}"
            )
        reader.take(_pad_to(reader.pos), f"the padding before {name!r}")
        raw = reader.take(nbytes, f"the data of {name!r}")
        array = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).reshape(dims)
        if array.dtype != dtype:  # big-endian host: convert to native order
            array = array.astype(dtype)
        elif not writable:
            array = array.copy()
        params[name] = array
    if reader.pos != len(reader.data):
        raise reader.fail(f"{len(reader.data) - reader.pos} trailing bytes after the last tensor")
    return params


def params_model_hash(data: bytes | bytearray | memoryview) -> str:
    """The model hash a params file records ("" when tied to no build)."""
    reader = _Reader(data, "")
    if bytes(reader.take(8, "the magic")) != MAGIC:
        raise reader.fail("bad magic")
    version = reader.u32("the version")
    reader.u32("the tensor count")
    if version == VERSION:
        return ""
    return bytes(reader.take(HASH_BYTES, "the model hash")).rstrip(b"\0").decode("ascii")


def save_params_file(
    path: str | os.PathLike[str], params: Mapping[str, np.ndarray], model_hash: str = ""
) -> None:
    """Write atomically: a failed save never leaves a half-written file behind."""
    chunks = param_chunks(params, model_hash)
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_params_file(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read a params file; an unreadable or malformed one is a UserError naming the file."""
    try:
        with open(path, "rb") as f:
            data = bytearray(f.read())
    except OSError as err:
        raise UserError(f"cannot read params file: {err.strerror}", os.fspath(path)) from None
    return load_params(data, os.fspath(path))
