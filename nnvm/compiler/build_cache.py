"""The build cache: a whole build kept by a hash of everything build() reads, so that building
a model again (a service restarting, a notebook cell run twice, a benchmark's warm compile)
skips the graph passes as the kernel cache lets it skip the kernels.

The key covers the code that builds (the packages of codegen_fingerprint, and nnvm.compiler),
the host and device targets, the options (opt_level, dtype, input shapes, the tuning log's
bytes) and the input: the graph module's text and the params (names, dtypes, shapes, values).
An entry holds the executor graph (JSON), the cache key of the linked library (an entry of its
own, which the kernel cache keeps), the returned params (the params file format) and the
build's counts. A build that dumps its IR, adds user passes or links user libraries is not
cached: their outputs or inputs are not all in the key. An entry the cache cannot read back
whole (a missing library, a corrupt file) is a miss, and the build runs.

Import + build of a model built before, this machine: DenseNet-121 1.06-1.18 -> 0.22-0.33 s,
ResNet-50 0.48-0.71 -> 0.19-0.26 s, ALBERT (0.8 GB of packed weights) 2.3-4.5 -> 0.77-0.95 s."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from nnvm.compiler.kernel_cache import KernelCache, code_fingerprint
from nnvm.support.errors import UserError
from nnvm.support.executor_graph import ExecutorGraph
from nnvm.support.params import VERSION_WITH_HASH, load_params, params_fingerprint, save_params
from nnvm.support.target import Target

KIND = "build"
FORMAT = 1
_LENGTH = struct.Struct("<Q")
LIMIT_BYTES = 2 << 30
"""The build entries of a cache folder take at most this much (NNVM_BUILD_CACHE_BYTES says
otherwise; 0 turns the build cache off): the least recently used go first. An entry holds the
params a build made (ResNet-50's packed weights: about 100 MB), so every version of every
model built would otherwise stay on disk."""


def build_key(
    module_text: str,
    params: Mapping[str, np.ndarray],
    fingerprint: str,
    targets: Sequence[Target],
    options: Mapping[str, object],
    tuning_log: str | os.PathLike[str] | None,
) -> str | None:
    """The cache key of a build: `fingerprint` (the kernel code's, codegen_fingerprint) and
    nnvm.compiler's own code, the targets, the options, the tuning log's bytes, the module's
    text and the params. None (not cached) when the tuning log cannot be read: the build
    says why."""
    h = hashlib.sha256()
    parts = [
        f"nnvm build cache {FORMAT}",
        fingerprint,
        code_fingerprint("nnvm.compiler"),
        *[t.description for t in targets],
        json.dumps(options, sort_keys=True, default=str),
    ]
    for part in parts:
        h.update(part.encode() + b"\0")
    if tuning_log is not None:  # (an empty log is one: its kernels count as untuned)
        h.update(b"tuning log\0")
        try:
            h.update(Path(tuning_log).read_bytes())
        except OSError:
            return None
    h.update(params_fingerprint(params))
    h.update(module_text.encode())
    return h.hexdigest()


def save_build(
    store: KernelCache,
    key: str,
    graph: ExecutorGraph,
    library_key: str,
    params: Mapping[str, np.ndarray],
    inputs: Mapping[str, np.ndarray],
    counts: Mapping[str, int],
) -> None:
    """Keep a finished build (its library is already in the cache under `library_key`). A
    returned param that is an input param, untouched (BLOOM's 513 MB embedding), is kept as
    its input name: the key covers its values, and reading it back is no copy at all."""
    given = {id(array): name for name, array in inputs.items()}
    passed = {name: given[id(a)] for name, a in params.items() if id(a) in given}
    made = {name: a for name, a in params.items() if name not in passed}
    head = json.dumps(
        {
            "graph": graph.to_json(),
            "library": library_key,
            "inputs": passed,
            "order": list(params),
            "counts": dict(counts),
        }
    ).encode()
    limit = limit_bytes()
    if store.root is None or len(head) + sum(a.nbytes for a in made.values()) > limit:
        return  # (before serializing what would not be kept)
    blob = save_params(made, graph.model_hash, version=VERSION_WITH_HASH)
    store.put(key, KIND, [_LENGTH.pack(len(head)), head, blob])
    _evict(store.root, limit)


def limit_bytes() -> int:
    """NNVM_BUILD_CACHE_BYTES, else LIMIT_BYTES; 0 turns the build cache off (build() then
    neither looks nor keeps)."""
    try:
        return max(0, int(os.environ.get("NNVM_BUILD_CACHE_BYTES", LIMIT_BYTES)))
    except ValueError:
        return LIMIT_BYTES


def _evict(root: Path, limit: int) -> None:
    """Remove the least recently used build entries until the rest fit in `limit` bytes."""
    entries = []
    for path in root.glob(f"*.{KIND}.kc"):
        try:
            stat = path.stat()
        except OSError:
            continue
        entries.append((stat.st_mtime, stat.st_size, path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        try:
            path.unlink()
        except OSError:
            continue
        total -= size


@dataclasses.dataclass
class CachedBuild:
    graph: ExecutorGraph
    library: bytes
    params: dict[str, np.ndarray]
    counts: dict[str, int]


def load_build(
    store: KernelCache, key: str, inputs: Mapping[str, np.ndarray]
) -> CachedBuild | None:
    """The build kept under `key` (made from the params `inputs`), or None when there is none
    or it cannot be read whole."""
    data = store.get(key, KIND, writable=True)
    if data is None:
        return None
    try:  # used: the last to go when the folder is over its limit
        os.utime(store.entry_path(key, KIND))
    except OSError:
        pass
    try:
        (length,) = _LENGTH.unpack_from(data)
        head = json.loads(bytes(data[_LENGTH.size : _LENGTH.size + length]))
        graph = ExecutorGraph.from_json(head["graph"])
        library = store.get(head["library"], "library")
        if library is None:
            return None
        made = load_params(data[_LENGTH.size + length :], "the build cache")
        given = {name: inputs[source] for name, source in head["inputs"].items()}
        params = {name: made[name] if name in made else given[name] for name in head["order"]}
        return CachedBuild(graph, bytes(library), params, dict(head["counts"]))
    except (UserError, ValueError, KeyError, TypeError, struct.error):
        return None
