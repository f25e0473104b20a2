"""How a runtime holds a model's weights, checked in fresh processes through their own /proc:

* on 2 MiB pages (targets/cpu/nnvm_runtime.c, alloc_streamed; the Python runtime's
  streamed_copy): kernels stream weights once per run, and with 4 KiB pages under a hypervisor
  the TLB misses halved one core's read bandwidth. The huge-page-advised memory grows by the
  weight when the params are set, and the run's results are those of numpy. The debug runtime
  lays out its arena the same way, so its profile times kernels as a deployed model runs them.
* once: set_input copies each param into the runtime's own buffer, and every thread's C model
  reads it in place (nnvm_create_bound), with no params file serialized, checksummed and copied
  per model. A 64 MiB weight, models on three threads: the resident set grows by one copy."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads its memory from /proc/self, a Linux feature"
)

PRELUDE = textwrap.dedent(
    """
    import re
    import threading
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    import nnvm
    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.runtime import graph_runtime

    def matmul_model(rows, k, n, rng):
        w = rng.standard_normal((k, n)).astype(np.float32)
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, k])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, n])
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y],
            initializer=[numpy_helper.from_array(w, "w")],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        module, params = from_onnx(model)
        graph, lib, params = build(module, params=params)
        return w, graph_runtime.create(graph, lib, nnvm.cpu(0)), params

    rng = np.random.default_rng(0)
    """
)

HUGE_PAGES = """
def advised_kib():
    text = open("/proc/self/smaps").read()
    total = 0
    for block in re.split(r"\\n(?=[0-9a-f]+-[0-9a-f]+ )", text):
        flags = re.search(r"VmFlags:(.*)", block)
        if flags and " hg" in flags.group(1):
            total += int(re.search(r"\\nSize:\\s+(\\d+) kB", block).group(1))
    return total

w, m, params = matmul_model(2, 768, 1024, rng)  # 3 MiB: below numpy's own 4 MiB
before = advised_kib()
m.set_input(**params)
data = rng.standard_normal((2, 768)).astype(np.float32)
m.run(x=data)
after = advised_kib()
np.testing.assert_allclose(m.get_output(0), data @ w, rtol=1e-4, atol=1e-4)
print(before, after)
"""

HELD_ONCE = """
def rss_mib():
    status = open("/proc/self/status").read()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024

w, m, params = matmul_model(1, 4096, 4096, rng)  # 64 MiB
data = rng.standard_normal((1, 4096)).astype(np.float32)
want = data @ w
before = rss_mib()
m.set_input(**params)
errors = []

def run():
    try:
        m.run(x=data)
        np.testing.assert_allclose(m.get_output(0), want, rtol=1e-3, atol=1e-3)
    except Exception as err:  # reported by the main thread
        errors.append(err)

threads = [threading.Thread(target=run) for _ in range(2)]
run()
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not errors, errors
print(before, rss_mib())
"""


def _fresh_process(script: str, tmp_path: Path) -> tuple[float, float]:
    """Run PRELUDE + `script` in a new interpreter; the two numbers it prints last."""
    out = subprocess.run(
        [sys.executable, "-c", PRELUDE + script],
        capture_output=True,
        text=True,
        env={**os.environ, "NNVM_CACHE_DIR": str(tmp_path / "kernel-cache")},
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    before, after = map(float, out.stdout.split()[-2:])
    return before, after


@pytest.mark.skipif(not THP.exists(), reason="this kernel has no transparent huge pages")
def test_weights_are_advised_huge_pages(tmp_path):
    before, after = _fresh_process(HUGE_PAGES, tmp_path)
    # the 3 MiB weight starts on a 2 MiB boundary: at least one whole huge page is advised
    assert after - before >= 2048, (before, after)


def test_params_are_held_once_for_all_threads(tmp_path):
    before, after = _fresh_process(HELD_ONCE, tmp_path)
    # one copy is 64 MiB; a C model per thread with its own copy made it 4 (and 6 at the peak)
    assert 56 < after - before < 96, (before, after)


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


@pytest.mark.skipif(not THP.exists(), reason="this kernel has no transparent huge pages")
def test_debug_runtime_buffers_are_laid_out_as_the_c_runtimes():
    """The debug runtime (profile(), the efficiency report) times kernels over an arena (and
    the runtime's params) laid out as nnvm_runtime.c lays them out: from 2 MiB on, 2 MiB aligned and
    advised huge pages; smaller ones 64-byte aligned."""
    from nnvm.runtime.graph_runtime import HUGE_PAGE_BYTES, streamed_empty

    big = streamed_empty(3 << 20)
    assert big.nbytes == 3 << 20 and big.ctypes.data % HUGE_PAGE_BYTES == 0
    assert " hg" in _vma_flags(big.ctypes.data)
    small = streamed_empty(1000)
    assert small.nbytes >= 1000 and small.ctypes.data % 64 == 0
