"""Params integrity (the reliability issue, defect 7): every single-bit flip of a small model's
params file is refused by the Python loader and by the C entry point, and the two accept the
same files (versions 1 to 3, the model hash, no trailing bytes)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.support.errors import UserError
from nnvm.support.params import load_params, save_params
from nnvm.testing import onnx_models


@pytest.fixture(scope="module")
def small():
    module, params = from_onnx(onnx_models.mlp(sizes=(4, 3, 2)))
    graph, lib, p = build(module, params=params)
    return graph, lib, p


def _c_accepts(lib, blob: bytes) -> bool:
    handle = lib.lib.nnvm_create(blob, len(blob))
    if handle:
        lib.lib.nnvm_destroy(ctypes.c_void_p(handle))
    return bool(handle)


def _py_accepts(blob: bytes) -> bool:
    try:
        load_params(blob)
    except UserError:
        return False
    return True


def test_every_bit_flip_is_refused_by_python_and_c(small) -> None:
    graph, lib, p = small
    blob = save_params(p, graph.model_hash)
    assert _c_accepts(lib, blob) and _py_accepts(blob)
    missed = []
    for bit in range(8 * len(blob)):
        flipped = bytearray(blob)
        flipped[bit // 8] ^= 1 << (bit % 8)
        if _c_accepts(lib, bytes(flipped)) or _py_accepts(bytes(flipped)):
            missed.append(bit)
    assert not missed, f"{len(missed)} of {8 * len(blob)} flips undetected, e.g. bit {missed[0]}"


def test_python_and_c_accept_the_same_files(small) -> None:
    graph, lib, p = small
    cases = {
        "v1": save_params(p, version=1),
        "v2": save_params(p, graph.model_hash, version=2),
        "v3": save_params(p, graph.model_hash),
        "v3 unhashed": save_params(p),
        "v1 + trailing byte": save_params(p, version=1) + b"\0",
        "v2 + trailing bytes": save_params(p, graph.model_hash, version=2) + b"\0" * 64,
    }
    for name, blob in cases.items():
        assert _c_accepts(lib, blob) == _py_accepts(blob), name
    assert not _c_accepts(lib, cases["v1 + trailing byte"])
    other = save_params(p, "f" * 32)
    assert not _c_accepts(lib, other) and "belongs to model" in lib.last_error()


def test_the_python_runtime_refuses_params_of_another_build(small) -> None:
    """The Python runtime checks the file's model hash as C does (defect 7)."""
    import nnvm
    from nnvm.runtime import graph_runtime

    graph, lib, p = small
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    with pytest.raises(UserError, match="belong to model f{32}, not to this build"):
        m.load_params(save_params(p, "f" * 32))
    m.load_params(save_params(p, graph.model_hash))
    m.load_params(save_params(p))  # tied to no build
    x = np.ones((1, 4), np.float32)
    m.run(input=x)
    assert m.get_output(0).shape == (1, 2)
