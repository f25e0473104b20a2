"""lower-te-to-gpu rejects schedules a GPU cannot run with a located error (exit 1), never a
crash; a legal one lowers to a launch of an outlined kernel."""

from __future__ import annotations

import subprocess
import sys

import pytest

KERNEL = """
func.func @f(%x: tensor<{n}x{m}xf32>) -> tensor<{n}xf32> {{
  %y = te.compute "y" [i] sum [k : {m}] = %x[i, k] : (tensor<{n}x{m}xf32>) -> tensor<{n}xf32>
  te.schedule {{
{schedule}
  }}
  func.return %y : tensor<{n}xf32>
}}
"""


def lower(tmp_path, n: int, m: int, schedule: str) -> subprocess.CompletedProcess[str]:
    src = tmp_path / "k.mlir"
    src.write_text(KERNEL.format(n=n, m=m, schedule=schedule))
    cmd = [sys.executable, "-m", "nnvm.tools.opt", str(src), "-p", "lower-te-to-gpu"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("n", "schedule", "message"),
    [
        (
            4096,
            '    te.split "y" i by 2048 -> (o, t)\n    te.bind "y" t to "threadIdx.x"',
            "a block of 2048 threads is more than the 1024",
        ),
        (
            64,
            '    te.split "y" i by 8 -> (o, t)\n'
            '    te.bind "y" o to "threadIdx.x"\n    te.bind "y" t to "threadIdx.x"',
            "threadIdx.x is already bound to axis 'o'",
        ),
        (64, '    te.bind "y" k to "blockIdx.x"', "cannot be bound to a block index"),
        (
            64,
            '    te.reorder "y" (k, i)\n    te.bind "y" k to "threadIdx.x"',
            "the spatial axis 'i' is inside it",
        ),
        (
            64,
            '    te.split "y" i by 48 -> (o, t)\n    te.bind "y" t to "threadIdx.y"\n'
            '    te.bind "y" k to "threadIdx.x"',
            "barriers of the cross-thread reduction are under a condition",
        ),
        (64, '    te.bind "y" i to "warp.x"', "unknown thread index 'warp.x'"),
        (64, '    te.bind "y" i to "blockIdx.x"\n    te.bind "y" i to "threadIdx.x"', "already"),
    ],
)
def test_bad_bind_is_a_located_error(tmp_path, n, schedule, message):
    r = lower(tmp_path, n, 16, schedule)
    assert r.returncode == 1, r.stderr
    assert message in r.stderr
    assert "k.mlir:" in r.stderr  # located at the primitive
    assert "Traceback" not in r.stderr


def test_legal_bind_launches_an_outlined_kernel(tmp_path):
    r = lower(
        tmp_path,
        100,
        16,
        '    te.split "y" i by 32 -> (b, t)\n'
        '    te.bind "y" b to "blockIdx.x"\n    te.bind "y" t to "threadIdx.x"',
    )
    assert r.returncode == 0, r.stderr
    assert '"gpu.launch_func"(%c4, %c1, %c1, %c32, %c1, %c1' in r.stdout
    assert "gpu.known_block_size = array<i32: 32, 1, 1>" in r.stdout
    host = r.stdout.split("func.func @f")[1]
    assert "gpu.thread_id" not in host  # the indices live in the kernel only
