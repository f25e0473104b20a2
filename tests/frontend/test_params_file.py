"""The params file format (docs/params-format.md): round trips, layout, and rejection of bad
files as UserErrors."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from nnvm.support.errors import UserError
from nnvm.support.params import (
    ALIGNMENT,
    DTYPE_CODES,
    MAGIC,
    load_params,
    load_params_file,
    save_params,
    save_params_file,
)

DTYPES = list(DTYPE_CODES.values())


def _equal(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert list(a) == list(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        np.testing.assert_array_equal(a[k], b[k])


@given(
    st.lists(
        st.tuples(
            st.text(min_size=1, max_size=12),
            st.sampled_from(DTYPES).flatmap(
                lambda dt: hnp.arrays(
                    dt, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)
                )
            ),
        ),
        max_size=5,
        unique_by=lambda t: t[0],
    )
)
def test_round_trip_any_dtype_and_shape(entries: list[tuple[str, np.ndarray]]) -> None:
    params = dict(entries)
    _equal(load_params(save_params(params)), params)


@given(st.sampled_from(DTYPES), st.booleans(), st.booleans())
def test_the_file_written_in_pieces_is_the_blob(dtype, transposed: bool, swapped: bool) -> None:
    """save_params_file streams the tensors' bytes (views, no blob): its file is byte for byte
    save_params's, for strided and big-endian arrays too."""
    import tempfile

    array = np.arange(12).reshape(3, 4).astype(dtype)
    array = array.T if transposed else array
    array = array.astype(array.dtype.newbyteorder(">")) if swapped else array
    params = {"w": array, "s": np.array(7, dtype=dtype)}
    with tempfile.TemporaryDirectory() as d:
        save_params_file(f"{d}/w.params", params)
        with open(f"{d}/w.params", "rb") as f:
            assert f.read() == save_params(params)
    _equal(load_params(save_params(params)), {k: v.astype(dtype) for k, v in params.items()})


def test_header_and_alignment() -> None:
    params = {"a": np.arange(3, dtype=np.float32), "bb": np.ones((2, 2), dtype=np.int64)}
    blob = save_params(params, version=1)
    assert blob[:8] == MAGIC
    assert struct.unpack_from("<II", blob, 8) == (1, 2)
    # first tensor: name length 1, "a", dtype 0, ndim 1, dim 3, nbytes 12, then aligned data
    assert struct.unpack_from("<I", blob, 16)[0] == 1
    assert blob[20:21] == b"a"
    assert struct.unpack_from("<IIqQ", blob, 21) == (0, 1, 3, 12)
    data_at = blob.index(np.arange(3, dtype=np.float32).tobytes())
    assert data_at % ALIGNMENT == 0


def test_scalars_bools_and_empty_tensors() -> None:
    params = {
        "s": np.array(2.5, np.float64),
        "m": np.array([True, False]),
        "e": np.zeros((0, 4), np.int8),
    }
    _equal(load_params(save_params(params)), params)


def test_big_endian_input_is_stored_little_endian() -> None:
    params = {"x": np.arange(4, dtype=">i4")}
    out = load_params(save_params(params))
    assert out["x"].dtype == np.dtype(np.int32)
    np.testing.assert_array_equal(out["x"], [0, 1, 2, 3])


def test_file_round_trip_and_writable_arrays(tmp_path) -> None:
    path = tmp_path / "w.params"
    params = {"w": np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)}
    save_params_file(path, params)
    loaded = load_params_file(path)
    _equal(loaded, params)
    loaded["w"][0, 0] = 1.0  # a store that passes rewrite in place must be writable


def _blob() -> bytes:
    """A version 1 file (no checksum), so each field check below is reached."""
    return save_params({"w": np.arange(6, dtype=np.float32).reshape(2, 3)}, version=1)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda b: b"NOTPARAM" + b[8:], "bad magic"),
        (lambda b: b[:8] + struct.pack("<I", 7) + b[12:], "unsupported version 7"),
        (lambda b: b[:-4], "truncated"),
        (lambda b: b[:14], "truncated"),
        (lambda b: b + b"\0", "trailing bytes"),
        (lambda b: b[:21] + struct.pack("<I", 99) + b[25:], "unknown dtype code 99"),
        (lambda b: b[:29] + struct.pack("<q", -2) + b[37:], "negative dimension"),
        (lambda b: b[:45] + struct.pack("<Q", 8) + b[53:], "declares 8 bytes"),
        (lambda b: b[:12] + struct.pack("<I", 2) + b[16:], "truncated"),
    ],
)
def test_bad_files_are_user_errors(mutate, message) -> None:
    with pytest.raises(UserError, match=message):
        load_params(mutate(_blob()))


def test_duplicate_names_and_bad_utf8_are_rejected() -> None:
    two = save_params({"w": np.zeros(1, np.float32), "x": np.zeros(1, np.float32)}, version=1)
    at = two.rindex(b"\x01\x00\x00\x00x")
    dup = two[: at + 4] + b"w" + two[at + 5 :]
    with pytest.raises(UserError, match="duplicate name 'w'"):
        load_params(dup)
    one = save_params({"w": np.zeros(1, np.float32)}, version=1)
    bad = one[:20] + b"\xff" + one[21:]
    with pytest.raises(UserError, match="not UTF-8"):
        load_params(bad)


def test_missing_file_is_a_user_error(tmp_path) -> None:
    with pytest.raises(UserError, match="cannot read params file") as info:
        load_params_file(tmp_path / "nope.params")
    assert "nope.params" in info.value.format()


def test_unsupported_dtype_is_rejected_on_save() -> None:
    with pytest.raises(UserError, match="unsupported dtype"):
        save_params({"c": np.zeros(2, np.complex64)})


def test_model_hash_is_recorded_in_version_2_files():
    from nnvm.support.params import load_params, params_model_hash, save_params

    params = {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}
    tagged = save_params(params, model_hash="0123456789abcdef0123456789abcdef")
    assert params_model_hash(tagged) == "0123456789abcdef0123456789abcdef"
    np.testing.assert_array_equal(load_params(bytearray(tagged))["w"], params["w"])
    assert params_model_hash(save_params(params)) == ""


def test_version_3_is_written_with_a_checksum_that_catches_every_bit_flip() -> None:
    import zlib

    params = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(2, np.int64)}
    blob = save_params(params, "0123456789abcdef0123456789abcdef")
    assert struct.unpack_from("<II", blob, 8) == (3, 2)
    assert struct.unpack_from("<I", blob, len(blob) - 4)[0] == zlib.crc32(blob[:-4])
    _equal(load_params(blob), params)
    for bit in range(8 * len(blob)):
        flipped = bytearray(blob)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(UserError):
            load_params(bytes(flipped))


def test_version_3_field_checks_still_apply_under_a_good_checksum() -> None:
    import zlib

    blob = save_params({"w": np.arange(6, dtype=np.float32)})
    body = bytearray(blob[:-4])
    body += b"\0"  # a trailing byte, sealed with a valid checksum
    with pytest.raises(UserError, match="trailing bytes"):
        load_params(bytes(body) + struct.pack("<I", zlib.crc32(bytes(body))))
