"""The GPU conv2d template with shared-memory tiles (targets/gpu/schedules/shared_conv.py): blocked
(NCHWc) convs of every kind the template takes (1x1, 3x3 stride 1 and 2, the 7x7 stride-2 stem
from NCHW, dilated, 1x7 / 7x1, odd maps, channel blocks of 4, 8 and 16, input and output blocks
that differ, batches) against the reference executor under `cuda -emulate` (threads of a block
as host threads), the shapes it refuses (depthwise, grouped, too big a window) on the register
template, its PTX accepted by ptxas (skipped without one), on PoCL (skipped without an OpenCL
platform), and a ResNet-style model built at O3 (alter-layout's NCHWc) matching the CPU."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from opencl_harness import check_opencl, lower_for_opencl, random_inputs, requires_opencl
from xdsl.dialects import func
from xdsl.dialects.builtin import f32

from nnvm.dialects.nnvm import conv
from nnvm.dialects.nnvm.base import tensor
from nnvm.dialects.te.schedule import CacheReadOp, ComputeInlineOp, ScheduleOp, SplitOp
from nnvm.lowering.to_te.lower_to_te import LowerToTE
from nnvm.reference import run_reference
from nnvm.registry import make_context
from nnvm.support.ir_text import ir_text
from nnvm.support.target import parse_target
from nnvm.targets.gpu.cuda.host_emulator import load_emulated, run_plan
from nnvm.targets.gpu.cuda.ptx import emit_ptx
from nnvm.targets.gpu.cuda.ptxas import find_ptxas, run_ptxas
from nnvm.targets.gpu.cuda.target import CudaTarget
from nnvm.targets.gpu.schedules import default_schedule
from nnvm.testing.op_modules import op_module

CTX = make_context()
EMULATED = CudaTarget(emulate=True)
needs_ptxas = pytest.mark.skipif(
    find_ptxas() is None, reason="no ptxas (PATH or pip install nvidia-cuda-nvcc)"
)


def blocked(
    x: tuple[int, ...], w: tuple[int, ...], cb: int, ob: int | None = None, **props: Any
) -> Any:
    """A conv2d in NCHW<cb>c with an OIHW<cb>i<ob>o kernel (NCHW<ob>c out), from the logical
    NCHW / OIHW shapes."""
    ob = ob or cb
    n, c, h, wd = x
    o, i, kh, kw = w
    return op_module(
        conv.Conv2DOp,
        [tensor((n, c // cb, h, wd, cb), f32), tensor((o // ob, i // cb, kh, kw, cb, ob), f32)],
        data_layout=f"NCHW{cb}c",
        kernel_layout=f"OIHW{cb}i{ob}o",
        out_layout=f"NCHW{ob}c",
        **props,
    )


def stem(x: tuple[int, ...], o: int, k: int, stride: int, pad: int, ob: int = 16) -> Any:
    """The NCHW -> NCHW<ob>c stem conv (a ResNet's 7x7 stride 2)."""
    c = x[1]
    return op_module(
        conv.Conv2DOp,
        [tensor(x, f32), tensor((o // ob, 1, k, k, c, ob), f32)],
        data_layout="NCHW",
        kernel_layout=f"OIHW{c}i{ob}o",
        out_layout=f"NCHW{ob}c",
        strides=(stride, stride),
        padding=(pad,) * 4,
    )


P1 = {"padding": (1, 1, 1, 1)}
SHARED = {
    "1x1-c16": lambda: blocked((1, 32, 8, 8), (32, 32, 1, 1), 16),
    "1x1-s2-c8-tails": lambda: blocked((1, 16, 13, 13), (24, 16, 1, 1), 8, strides=(2, 2)),
    "3x3-c8-13x17": lambda: blocked((1, 8, 13, 17), (8, 8, 3, 3), 8, **P1),
    "3x3-s2-c8-batch2": lambda: blocked((2, 16, 15, 15), (32, 16, 3, 3), 8, strides=(2, 2), **P1),
    "3x3-c16-chunked": lambda: blocked((1, 32, 8, 8), (64, 32, 3, 3), 16, **P1),
    "7x7-s2-stem": lambda: stem((1, 3, 32, 32), 32, 7, 2, 3),
    "3x3-dilated-c4": lambda: blocked(
        (1, 8, 12, 12), (8, 8, 3, 3), 4, dilation=(2, 2), padding=(2, 2, 2, 2)
    ),
    "1x7-c8": lambda: blocked((1, 16, 9, 9), (16, 16, 1, 7), 8, padding=(0, 3, 0, 3)),
    "7x1-c8": lambda: blocked((1, 16, 9, 9), (16, 16, 7, 1), 8, padding=(3, 0, 3, 0)),
    "3x3-c8-7x7-3-blocks": lambda: blocked((1, 24, 7, 7), (24, 24, 3, 3), 8, **P1),
    "1x1-c16-in-c8-out": lambda: blocked((1, 32, 8, 8), (24, 32, 1, 1), 16, ob=8),
    "5x5-c4-batch3": lambda: blocked((3, 8, 9, 11), (12, 8, 5, 5), 4, padding=(2, 2, 2, 2)),
}
REGISTERS = {
    # the input read depends on the output channel: the register template
    "depthwise-c8": lambda: op_module(
        conv.Conv2DOp,
        [tensor((1, 2, 8, 8, 8), f32), tensor((2, 1, 3, 3, 1, 8), f32)],
        data_layout="NCHW8c",
        kernel_layout="OIHW1i8o",
        groups=16,
        **P1,
    ),
    # the input block is a division of the output block
    "grouped-c8": lambda: blocked((1, 32, 6, 6), (32, 16, 3, 3), 8, groups=2, **P1),
    # one input channel's 25x25 window for 64 outputs: 40 KiB of weights, over the budget
    "25x25-c16": lambda: blocked((1, 16, 28, 28), (16, 16, 25, 25), 16),
}


def te_module(module):
    m = module.clone()
    LowerToTE(target=EMULATED).apply(CTX, m)
    return m


def schedule_of(module, target: Any = EMULATED, **knobs: Any) -> ScheduleOp:
    fn = next(o for o in te_module(module).ops if isinstance(o, func.FuncOp))
    return default_schedule(fn, target, **knobs)


def staged(sched: ScheduleOp) -> list[str | None]:
    return [p.scope_name for p in sched.primitives if isinstance(p, CacheReadOp)]


def lowered(module, target: Any = EMULATED):
    m = module.clone()
    for p in target.kernel_passes():
        p.apply(CTX, m)
    return m


def check_emulated(module) -> None:
    """The module on `cuda -emulate` computes what the reference executor computes."""
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp))
    out_t = fn.function_type.outputs.data[0]
    kernel = load_emulated(EMULATED.emit_kernel(lowered(module), "k"), "k")
    inputs = random_inputs(module, seed=7)
    out = np.full(tuple(out_t.get_shape()), np.nan, np.float32)  # type: ignore[attr-defined]
    run_plan(kernel, [np.ascontiguousarray(x).ctypes.data for x in inputs] + [out.ctypes.data])
    want = np.asarray(run_reference(module, None, inputs, function="k")[0])
    np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("case", list(SHARED))
def test_shared_conv_matches_the_reference(case: str) -> None:
    module = SHARED[case]()
    sched = schedule_of(module)
    assert staged(sched) == ["shared", "shared"]  # the input patch and the weights
    check_emulated(module)


def test_the_padding_is_inlined_and_a_wide_step_is_chunked() -> None:
    """The padding stage is computed inside the input's shared copy (no padded input in
    global memory: one kernel); 16 channels of 4 output blocks' 3x3 weights (36 KiB) are over
    the budget, so each step takes 8 of an input block's 16 channels."""
    module = SHARED["3x3-c16-chunked"]()
    sched = schedule_of(module)
    assert [p.stage_name for p in sched.primitives if isinstance(p, ComputeInlineOp)] == [
        "conv2d.pad"
    ]
    splits = {(p.axis.data, p.factor_value) for p in sched.primitives if isinstance(p, SplitOp)}
    assert ("ic", 8) in splits
    text = ir_text(lowered(module))
    assert text.count("gpu.launch_func") == 1
    assert text.count("llvm.nvvm.barrier0") == 2  # before the two copies and after them


@pytest.mark.parametrize("case", list(REGISTERS))
def test_shapes_it_does_not_suit_take_the_register_template(case: str) -> None:
    module = REGISTERS[case]()
    assert staged(schedule_of(module)) == []
    check_emulated(module)


def test_shared_off_takes_the_register_template() -> None:
    module = SHARED["3x3-c8-13x17"]()
    assert staged(schedule_of(module, shared=False)) == []
    for spec in ("cuda -arch=sm_90 -tiles=registers -emulate", "opencl -tiles=registers"):
        fn = next(o for o in te_module(module).ops if isinstance(o, func.FuncOp))
        assert staged(parse_target(spec).default_schedule(fn)) == []


PTX_CASES = ["3x3-s2-c8-batch2", "3x3-c16-chunked", "7x7-s2-stem", "1x1-c16"]


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("case", PTX_CASES)
def test_shared_conv_kernels_pass_ptxas(case: str, arch: str) -> None:
    ptx = emit_ptx(lowered(SHARED[case](), CudaTarget(arch=arch)), arch)
    assert ".shared .align" in ptx and "bar.sync" in ptx
    assert "ld.shared" in ptx and "st.shared" in ptx
    (res,) = run_ptxas(ptx, arch)
    assert 0 < res.shared_bytes <= 32 * 1024 and res.spill_bytes == 0, res


@requires_opencl
@pytest.mark.parametrize("case", ["3x3-c8-13x17", "7x7-s2-stem", "1x1-s2-c8-tails"])
def test_shared_conv_on_opencl(case: str) -> None:
    module = SHARED[case]()
    code = json.loads(lower_for_opencl(module))["code"]
    assert "__local float" in code and "barrier(" in code
    check_opencl(module, rtol=1e-3, atol=1e-4)


@pytest.mark.slow
def test_a_resnet_style_model_on_emulated_cuda_matches_the_cpu(tmp_path, monkeypatch) -> None:
    """At O3 (alter-layout makes the convs NCHW<c>c): the stem, 3x3 and strided 1x1 convs with
    their fused epilogues (folded batch norm, relu, the residual add), two images; every conv
    kernel stages its tiles in shared memory."""
    import nnvm
    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.runtime import graph_runtime
    from nnvm.targets.gpu.cuda.blob import decode_blob
    from nnvm.testing import onnx_models

    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path))
    model = onnx_models.resnet_like(batch=2, image=16, width=16, stages=(1, 1))
    inputs = onnx_models.random_inputs(model, seed=3)
    module, params = from_onnx(model)

    def outputs(graph, lib, p):
        m = graph_runtime.create(graph, lib, nnvm.cpu(0))
        m.set_input(**p)
        m.run(**inputs)
        return [m.get_output(k) for k in range(m.get_num_outputs())]

    graph, lib, p = build(module, params=params, devices=["cuda -emulate"])
    got = outputs(graph, lib, p)
    want = outputs(*build(module, params=params))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)
    convs = [n.kernel for n in graph.nodes if n.device and "conv" in n.kernel]
    assert len(convs) >= 5
    for name in convs:
        assert ".shared" in decode_blob(lib.blob(name))[1], name
