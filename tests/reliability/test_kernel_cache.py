"""The kernel cache heals itself (the reliability issue, defect 8): a flipped, truncated, empty
or foreign entry (a kernel's object, the linked library or a whole build) is a warning, rebuilt
and replaced; an unwritable cache compiles uncached; a failed link leaves no temporary folder.
The kernel and library tests drop the whole-build entries first (an identical build would
otherwise come from one, reading no kernel at all)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

import nnvm
from nnvm.compiler import build
from nnvm.compiler.kernel_cache import KernelCacheWarning
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime
from nnvm.support.errors import UserError
from nnvm.testing import onnx_models

MODEL = onnx_models.mlp()


def _build_and_run(keep_builds: bool = False, **kwargs):
    if not keep_builds:
        for entry in Path(os.environ["NNVM_CACHE_DIR"]).glob("*.build.kc"):
            entry.unlink()
    module, params = from_onnx(MODEL)
    graph, lib, p = build(module, params=params, **kwargs)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**p)
    x = onnx_models.random_inputs(MODEL, seed=4)
    m.run(**x)
    return lib.build_times, m.get_output(0)


def _corrupt(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "flip":
        data[len(data) // 2] ^= 0x10
    elif how == "truncate":
        data = data[: len(data) // 2]
    elif how == "empty":
        data = bytearray()
    elif how == "foreign":
        data[8] = ord("0") if data[8] != ord("0") else ord("1")  # another key in the header
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["flip", "truncate", "empty", "foreign"])
def test_bad_entry_is_recompiled_and_replaced(tmp_path, monkeypatch, how: str) -> None:
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path))
    first, want = _build_and_run()
    entries = sorted(tmp_path.glob("*.llvm.kc"))
    assert entries and first.kernels_compiled == len(entries)
    _corrupt(entries[0], how)
    with pytest.warns(KernelCacheWarning, match="recompiling"):
        second, got = _build_and_run()
    assert second.kernels_compiled == 1 and second.kernels_cached == len(entries) - 1
    np.testing.assert_array_equal(got, want)
    third, _ = _build_and_run()  # healed: everything from the cache again
    assert third.kernels_compiled == 0 and third.kernels_cached == len(entries)


@pytest.mark.parametrize("how", ["flip", "truncate", "empty", "foreign"])
def test_bad_library_entry_is_relinked_and_replaced(tmp_path, monkeypatch, how: str) -> None:
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path))
    first, want = _build_and_run()
    assert not first.library_cached
    assert _build_and_run()[0].library_cached  # an identical build links nothing
    (library,) = tmp_path.glob("*.library.kc")
    _corrupt(library, how)
    with pytest.warns(KernelCacheWarning, match="recompiling"):
        second, got = _build_and_run()
    assert not second.library_cached and second.kernels_compiled == 0
    np.testing.assert_array_equal(got, want)
    assert _build_and_run()[0].library_cached


@pytest.mark.parametrize("how", ["flip", "truncate", "empty", "foreign"])
def test_bad_build_entry_is_rebuilt_and_replaced(tmp_path, monkeypatch, how: str) -> None:
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path))
    first, want = _build_and_run(keep_builds=True)
    assert not first.build_cached
    again, got = _build_and_run(keep_builds=True)
    assert again.build_cached and again.kernels_compiled == 0
    np.testing.assert_array_equal(got, want)
    (entry,) = tmp_path.glob("*.build.kc")
    _corrupt(entry, how)
    with pytest.warns(KernelCacheWarning, match="recompiling"):
        second, got = _build_and_run(keep_builds=True)
    assert not second.build_cached and second.library_cached
    np.testing.assert_array_equal(got, want)
    assert _build_and_run(keep_builds=True)[0].build_cached


def test_a_build_entry_without_its_library_is_a_miss(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path))
    _, want = _build_and_run(keep_builds=True)
    (library,) = tmp_path.glob("*.library.kc")
    library.unlink()
    times, got = _build_and_run(keep_builds=True)
    assert not times.build_cached and not times.library_cached
    np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_cache_compiles_uncached(tmp_path, monkeypatch) -> None:
    tmp_path.chmod(0o555)
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path))
    try:
        with pytest.warns(KernelCacheWarning, match="not writable"):
            times, _ = _build_and_run()
        assert times.kernels_compiled > 0
    finally:
        tmp_path.chmod(0o755)


def test_unwritable_cache_compiles_uncached(tmp_path, monkeypatch) -> None:
    """A cache path that is a file, not a folder (writable by nobody, root included)."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("NNVM_CACHE_DIR", str(blocker / "kernels"))
    with pytest.warns(KernelCacheWarning, match="cannot be created"):
        times, _ = _build_and_run()
    assert times.kernels_compiled > 0


def test_failed_link_leaves_no_temporary_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(UserError, match="nnvm_no_such_library"):
        _build_and_run(libraries=["nnvm_no_such_library"])
    assert not list(tmp_path.glob("nnvm-build-*"))


def _random_corruption(path: Path, rng) -> str:
    data = bytearray(path.read_bytes())
    kind = rng.integers(4)
    if kind == 0:
        for _ in range(int(rng.integers(1, 8))):
            data[int(rng.integers(len(data)))] ^= 1 << int(rng.integers(8))
        what = "bit flips"
    elif kind == 1:
        data = data[: int(rng.integers(len(data)))]
        what = "truncated"
    elif kind == 2:
        data += bytes(rng.integers(0, 256, int(rng.integers(1, 64)), dtype=np.uint8))
        what = "trailing garbage"
    else:
        start = int(rng.integers(len(data)))
        data[start : start + 64] = bytes(rng.integers(0, 256, 64, dtype=np.uint8))
        what = "overwritten run"
    path.write_bytes(bytes(data))
    return what


@pytest.mark.parametrize(
    "trials", [pytest.param(6, id="fast"), pytest.param(60, id="full", marks=pytest.mark.slow)]
)
def test_randomly_corrupted_entries_are_healed(tmp_path, monkeypatch, trials: int) -> None:
    """The cache fuzzer: seeded random damage to a random entry; every time, the next build
    warns, recompiles that kernel (or relinks the library), gives the same output, and the
    build after is all cached."""
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path))
    _, want = _build_and_run()
    entries = [e for e in sorted(tmp_path.glob("*.kc")) if not e.name.endswith(".build.kc")]
    rng = np.random.default_rng(11)
    for trial in range(trials):
        entry = entries[int(rng.integers(len(entries)))]
        what = _random_corruption(entry, rng)
        with pytest.warns(KernelCacheWarning, match="recompiling"):
            times, got = _build_and_run()
        library = entry.name.endswith(".library.kc")
        assert times.kernels_compiled == (0 if library else 1), f"trial {trial} ({what})"
        assert not (library and times.library_cached), f"trial {trial} ({what})"
        np.testing.assert_array_equal(got, want, err_msg=f"trial {trial} ({what})")
    times, _ = _build_and_run()
    assert times.kernels_compiled == 0 and times.library_cached
