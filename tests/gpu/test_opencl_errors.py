"""The OpenCL target's bad inputs are located errors or UserErrors, never a crash: schedules a
kernel cannot run (rejected at the primitive), bad target options, a missing device, a blob
that is not a launch plan, an op the printer has no rule for."""

from __future__ import annotations

import subprocess
import sys

import pytest
from opencl_harness import requires_opencl
from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp

from nnvm.support.errors import UserError
from nnvm.support.target import parse_target
from nnvm.targets.gpu.launch_plan import read_blob
from nnvm.targets.gpu.opencl.print_opencl_c import print_opencl_c
from nnvm.targets.gpu.opencl.runtime import OpenCLRuntime, opencl_devices

KERNEL = """
func.func @f(%x: tensor<64xf32>) -> tensor<64xf32> {{
  %y = te.compute "y" [i] = exp(%x[i]) : (tensor<64xf32>) -> tensor<64xf32>
  te.schedule {{
    te.split "y" i by 8 -> (o, t)
    te.bind "y" o to "blockIdx.x"
{extra}
  }}
  func.return %y : tensor<64xf32>
}}
"""


@pytest.mark.parametrize(
    ("target", "extra", "message"),
    [
        ("cuda", '    te.vectorize "y" t', "te.vectorize: target 'cuda' does not print vector ops"),
        ("opencl", '    te.parallel "y" t', "te.parallel: target 'opencl' runs no thread pool"),
        ("opencl", '    te.bind "y" t to "blockIdx.x"', "blockIdx.x is already bound to axis 'o'"),
    ],
)
def test_schedule_a_kernel_cannot_run_is_located(
    tmp_path, target: str, extra: str, message: str
) -> None:
    src = tmp_path / "k.mlir"
    src.write_text(KERNEL.format(extra=extra))
    pipeline = f'lower-te-to-gpu{{target="{target}" outline_all=true}}'
    cmd = [sys.executable, "-m", "nnvm.tools.opt", str(src), "-p", pipeline]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert message in r.stderr
    assert "k.mlir:" in r.stderr and "Traceback" not in r.stderr


def test_target_options() -> None:
    assert parse_target("opencl").description == "opencl"
    assert parse_target("opencl -device=1").description == "opencl -device=1"
    with pytest.raises(UserError, match="unknown opencl target option '-arch=sm_90'"):
        parse_target("opencl -arch=sm_90")


def test_printer_without_a_rule_names_the_op_and_kernel() -> None:
    text = """
    "gpu.module"() <{sym_name = "m"}> ({
      "gpu.func"() <{function_type = () -> (), kernel}> ({
        %a = "gpu.lane_id"() : () -> index
        "gpu.return"() : () -> ()
      }) {sym_name = "k0"} : () -> ()
    }) : () -> ()
    """
    from xdsl.context import Context
    from xdsl.dialects import arith, builtin
    from xdsl.parser import Parser

    ctx = Context()
    for d in (builtin.Builtin, arith.Arith, gpu.GPU):
        ctx.load_dialect(d)
    module = Parser(ctx, text).parse_module()
    assert isinstance(module, ModuleOp)
    kernels = next(op for op in module.ops if isinstance(op, gpu.ModuleOp))
    with pytest.raises(UserError, match="cannot print gpu.lane_id in kernel k0"):
        print_opencl_c(kernels)


def test_blob_that_is_not_a_plan() -> None:
    with pytest.raises(UserError, match="not a launch plan"):
        read_blob(b"not json")
    with pytest.raises(UserError, match="not a launch plan"):
        read_blob(b'{"code": ""}')


@requires_opencl
def test_missing_device_and_wrong_buffer_count() -> None:
    with pytest.raises(UserError, match=r"no OpenCL device 99: \d+ found"):
        OpenCLRuntime(None, device=99)
    from nnvm.targets.gpu.launch_plan import LaunchPlan, plan_blob

    rt = OpenCLRuntime(None, sources={"k": plan_blob("", LaunchPlan(2))})
    with pytest.raises(UserError, match="kernel k takes 2 buffers, got 1"):
        rt.launch("k", [rt.alloc(4)])
    bad = OpenCLRuntime(None, sources={"k": plan_blob("__kernel void k( {", LaunchPlan(0))})
    with pytest.raises(UserError, match="OpenCL could not build kernel k"):
        bad.launch("k", [])
    assert opencl_devices()


def test_kernels_of_types_a_gpu_kernel_cannot_take_stay_on_the_host() -> None:
    from opencl_harness import op_module
    from xdsl.dialects import func
    from xdsl.dialects.builtin import f32, f64

    from nnvm.dialects.nnvm import elementwise
    from nnvm.dialects.nnvm.base import tensor
    from nnvm.targets.gpu.opencl.target import OpenCLTarget

    def kernel(elt):  # noqa: ANN001, ANN202
        m = op_module(elementwise.ExpOp, [tensor((3, 5), elt)])
        return next(o for o in m.ops if isinstance(o, func.FuncOp))

    assert OpenCLTarget().accepts(kernel(f32)) is None
    assert "f64" in (OpenCLTarget().accepts(kernel(f64)) or "")
