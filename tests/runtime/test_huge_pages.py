"""A model's weights and arena are asked to live on 2 MiB pages (targets/cpu/nnvm_runtime.c,
alloc_streamed): kernels stream them once per run, and with 4 KiB pages under a hypervisor the
TLB misses halved one core's read bandwidth. Checked in a fresh process through its own
/proc/self/smaps: the huge-page-advised memory grows by the weight when the params are set (the
runtime's copy, which the C model reads in place), and the run's results are those of numpy. The debug runtime lays out its arena and
params the same way, so its profile times kernels as a deployed model runs them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not THP.exists(),
    reason="transparent huge pages are a Linux feature this kernel lacks",
)

SCRIPT = textwrap.dedent(
    """
    import re
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    import nnvm
    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.runtime import graph_runtime

    def advised_kib():
        text = open("/proc/self/smaps").read()
        total = 0
        for block in re.split(r"\\n(?=[0-9a-f]+-[0-9a-f]+ )", text):
            flags = re.search(r"VmFlags:(.*)", block)
            if flags and " hg" in flags.group(1):
                total += int(re.search(r"\\nSize:\\s+(\\d+) kB", block).group(1))
        return total

    rng = np.random.default_rng(0)
    w = rng.standard_normal((768, 1024)).astype(np.float32)  # 3 MiB: below numpy's own 4 MiB
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 768])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1024])
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y],
        initializer=[numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    module, params = from_onnx(model)
    graph, lib, params = build(module, params=params)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    before = advised_kib()
    m.set_input(**params)
    data = rng.standard_normal((2, 768)).astype(np.float32)
    m.run(x=data)
    after = advised_kib()
    np.testing.assert_allclose(m.get_output(0), data @ w, rtol=1e-4, atol=1e-4)
    print(before, after)
    """
)


def test_weights_are_advised_huge_pages(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        env={**os.environ, "NNVM_CACHE_DIR": str(tmp_path / "kernel-cache")},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    before, after = map(int, out.stdout.split()[-2:])
    # the 3 MiB weight starts on a 2 MiB boundary: at least one whole huge page is advised
    assert after - before >= 2048, (before, after)


def _vma_flags(address: int) -> str:
    """The VmFlags of this process's mapping that holds `address`."""
    text = Path("/proc/self/smaps").read_text()
    current = None
    for line in text.splitlines():
        head = line.split()[0] if line else ""
        if "-" in head and all(c in "0123456789abcdef-" for c in head):
            lo, hi = (int(x, 16) for x in head.split("-"))
            current = lo <= address < hi
        elif line.startswith("VmFlags:") and current:
            return line
    return ""


def test_debug_runtime_buffers_are_laid_out_as_the_c_runtimes():
    """The debug runtime (profile(), the efficiency report) times kernels over an arena and a
    params copy laid out as nnvm_runtime.c lays them out: from 2 MiB on, 2 MiB aligned and
    advised huge pages; smaller ones 64-byte aligned."""
    from nnvm.runtime.graph_runtime import HUGE_PAGE_BYTES, streamed_empty

    big = streamed_empty(3 << 20)
    assert big.nbytes == 3 << 20 and big.ctypes.data % HUGE_PAGE_BYTES == 0
    assert " hg" in _vma_flags(big.ctypes.data)
    small = streamed_empty(1000)
    assert small.nbytes >= 1000 and small.ctypes.data % 64 == 0
