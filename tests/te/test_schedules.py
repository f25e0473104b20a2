"""Schedules change how, never what: every primitive (alone, combined, with split factors that
leave tails) and random legal schedules keep the results of matmul, conv2d and an
elementwise chain."""

from __future__ import annotations

import numpy as np
import pytest
from harness import CTX, check, lower, parse, random_inputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func

from nnvm.dialects.te.schedule import (
    CacheWriteOp,
    ComputeAtOp,
    ComputeInlineOp,
    FuseOp,
    ParallelOp,
    Primitive,
    ReorderOp,
    RFactorOp,
    ScheduleOp,
    SplitOp,
    UnrollOp,
    VectorizeOp,
)
from nnvm.dialects.te.stages import ScheduleState
from nnvm.lowering.to_te.lower_to_te import LowerToTE
from nnvm.support.diagnostics import DiagnosticError

MATMUL_BIAS_RELU = """
func.func @k(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>, %b: tensor<9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j] + %b[j], 0.0) : (tensor<5x9xf32>, tensor<9xf32>) -> tensor<5x9xf32>
  func.return %D : tensor<5x9xf32>
}
"""

SCHEDULES = {
    "none": "",
    "split_tail": 'te.split "D" j by 4 -> (j.o, j.i)',
    "split_nparts": 'te.split "D" j nparts 2 -> (j.o, j.i)\nte.reorder "D" (j.o, i, j.i)',
    "split_bigger_than_axis": 'te.split "D" i by 8 -> (i.o, i.i)',
    "reorder_reduction_outside": 'te.split "C" j by 4 -> (jo, ji)\nte.reorder "C" (k, jo, i, ji)',
    "tile": 'te.tile "D" (i, j) by (2, 4) -> (io, jo, ii, ji)',
    "fuse_split": 'te.fuse "D" (i, j) -> f\nte.split "D" f by 7 -> (fo, fi)',
    "vectorize": 'te.split "D" j by 4 -> (jo, ji)\nte.vectorize "D" ji',
    "vectorize_whole_row": 'te.vectorize "D" j',
    "vectorize_fused": 'te.fuse "D" (i, j) -> f\nte.split "D" f by 8 -> (fo, fi)\nte.vectorize "D" fi',
    "parallel": 'te.parallel "D" i\nte.parallel "C" j',
    "unroll": 'te.split "D" j by 4 -> (jo, ji)\nte.unroll "D" ji\nte.unroll "C" i',
    "compute_at_row": 'te.compute_at "C" at "D" i',
    "compute_at_tile": (
        'te.tile "D" (i, j) by (2, 4) -> (io, jo, ii, ji)\nte.compute_at "C" at "D" jo\n'
        'te.reorder "C" (k, i, j)\nte.unroll "C" i\nte.vectorize "C" j\nte.vectorize "D" ji'
    ),
    "compute_at_fused_parallel": (
        'te.tile "D" (i, j) by (2, 4) -> (io, jo, ii, ji)\nte.fuse "D" (io, jo) -> f\n'
        'te.parallel "D" f\nte.compute_at "C" at "D" f'
    ),
    "compute_inline": (
        'te.cache_write "C" -> "C.l"\nte.compute_inline "C"\nte.compute_at "C.l" at "D" i'
    ),
    "cache_write": (
        'te.cache_write "C" -> "C.l"\nte.split "C" j by 4 -> (jo, ji)\n'
        'te.compute_at "C.l" at "C" jo\nte.reorder "C.l" (i, k, j)\nte.vectorize "C.l" j'
    ),
    "cache_read": 'te.cache_read "arg1" for ["C"] -> "B.l"\nte.compute_at "B.l" at "C" i',
    # packed copies: B[k, j] read as B.p[j // f, k, j % f]; 4 and 5 leave zero-padded tails
    "cache_read_panel": 'te.cache_read "arg1" for ["C"] -> "B.p" panel 1 by 4',
    "cache_read_panel_rows": 'te.cache_read "arg1" for ["C"] -> "B.p" panel 0 by 5',
    "cache_read_panel_at": (
        'te.cache_read "arg1" for ["C"] -> "B.p" panel 1 by 4\n'
        'te.split "C" j by 4 -> (jo, ji)\nte.reorder "C" (jo, i, k, ji)\n'
        'te.vectorize "C" ji\nte.compute_at "B.p" at "C" jo'
    ),
    "cache_read_panel_bias": 'te.cache_read "arg2" for ["D"] -> "b.p" panel 0 by 8',
    "rfactor": (
        'te.split "C" k by 5 -> (ko, ki)\nte.rfactor "C" ki -> "C.rf"\n'
        'te.reorder "C.rf" (i, j, ko, ki)\nte.vectorize "C.rf" ki\nte.compute_at "C.rf" at "C" j'
    ),
    "rfactor_outer": 'te.split "C" k by 3 -> (ko, ki)\nte.rfactor "C" ko -> "C.rf"',
    "rfactor_tail": (
        'te.split "C" k by 6 -> (ko, ki)\nte.rfactor "C" ki -> "C.rf"\n'
        'te.reorder "C.rf" (i, j, ko, ki)\nte.vectorize "C.rf" ki\nte.compute_at "C.rf" at "C" j'
    ),
    "rfactor_tail_inner_first": (
        'te.split "C" k by 6 -> (ko, ki)\nte.rfactor "C" ki -> "C.rf"\n'
        'te.reorder "C.rf" (i, j, ki, ko)'
    ),
    "rfactor_whole_axis": 'te.rfactor "C" k -> "C.rf"\nte.vectorize "C.rf" k',
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_primitive_keeps_results(name: str) -> None:
    module = parse(MATMUL_BIAS_RELU)
    a, b, bias = random_inputs(module)
    want = [np.maximum(a @ b + bias, 0)]
    check(module, [a, b, bias], schedule=SCHEDULES[name] or None, atol=1e-4, want=want)


def test_rfactor_tail_is_a_loop_bound_not_a_select() -> None:
    """k = 16 split by 6: the last of three ko iterations has 4 ki. The rf stage skips the two
    missing ones by a bound on its ki loop (min(6, 16 - 6 ko); vectorized, a full one is one
    vector and the tail is scalar), not by a select of each element against the identity,
    which no vector loop can take."""
    lowered = lower(parse(MATMUL_BIAS_RELU), SCHEDULES["rfactor_tail"])
    names = {op.name for op in lowered.walk()}
    assert "arith.select" not in names
    assert "arith.minsi" in names


# ----------------------------------------------------------------------------------------------
# Random legal schedules
# ----------------------------------------------------------------------------------------------

CONV = """
func.func @k(%x: tensor<1x2x6x6x4xf32>, %w: tensor<2x2x3x3x4x4xf32>) -> tensor<1x2x6x6x4xf32> {
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1], data_layout = "NCHW4c", kernel_layout = "OIHW4i4o"} : (tensor<1x2x6x6x4xf32>, tensor<2x2x3x3x4x4xf32>) -> tensor<1x2x6x6x4xf32>
  %r = nnvm.relu %c : (tensor<1x2x6x6x4xf32>) -> tensor<1x2x6x6x4xf32>
  func.return %r : tensor<1x2x6x6x4xf32>
}
"""

MATMUL = """
func.func @k(%a: tensor<6x10xf32>, %b: tensor<10x7xf32>) -> tensor<6x7xf32> {
  %m = nnvm.matmul %a, %b : (tensor<6x10xf32>, tensor<10x7xf32>) -> tensor<6x7xf32>
  func.return %m : tensor<6x7xf32>
}
"""

CHAIN = """
func.func @k(%x: tensor<3x4x10xf32>, %y: tensor<4x1xf32>) -> tensor<3x4x10xf32> {
  %a = nnvm.add %x, %y : (tensor<3x4x10xf32>, tensor<4x1xf32>) -> tensor<3x4x10xf32>
  %e = nnvm.exp %a : (tensor<3x4x10xf32>) -> tensor<3x4x10xf32>
  %m = nnvm.mul %e, %x : (tensor<3x4x10xf32>, tensor<3x4x10xf32>) -> tensor<3x4x10xf32>
  func.return %m : tensor<3x4x10xf32>
}
"""


def _te_kernel(text: str) -> func.FuncOp:
    module = parse(text)
    LowerToTE().apply(CTX, module)
    return next(o for o in module.ops if isinstance(o, func.FuncOp))


def _legal(fn: func.FuncOp, prims: list[Primitive]) -> bool:
    clone = fn.clone()
    ret = clone.body.block.last_op
    assert ret is not None
    clone.body.block.insert_op_before(ScheduleOp([p.clone() for p in prims]), ret)
    try:
        ScheduleState(clone).apply_all()
    except DiagnosticError:
        return False
    return True


def _stage_view(fn: func.FuncOp, prims: list[Primitive]) -> ScheduleState:
    clone = fn.clone()
    ret = clone.body.block.last_op
    assert ret is not None
    clone.body.block.insert_op_before(ScheduleOp([p.clone() for p in prims]), ret)
    state = ScheduleState(clone)
    for sched in state.schedule_ops:
        for p in sched.primitives:
            state.apply(p)
    return state


@st.composite
def schedules(draw: st.DrawFn, text: str) -> list[Primitive]:
    """A random schedule, kept legal step by step (an illegal draw is dropped)."""
    fn = _te_kernel(text)
    prims: list[Primitive] = []
    fresh = iter(range(1000))
    for _ in range(draw(st.integers(1, 7))):
        state = _stage_view(fn, prims)
        computes = [s for s in state.stages if s.compute is not None and s.attach != "inline"]
        stage = draw(st.sampled_from(computes))
        leaves = stage.leaves
        kind = draw(st.sampled_from(
            ["split", "split", "reorder", "fuse", "vectorize", "parallel", "unroll",
             "inline", "compute_at", "cache_write", "rfactor"]
        ))  # fmt: skip
        name = stage.name
        cand: Primitive | None = None
        if kind == "split" and leaves:
            v = draw(st.sampled_from(leaves))
            n = next(fresh)
            cand = SplitOp.make(
                name, v.name, draw(st.integers(1, v.extent + 2)), None, f"o{n}", f"i{n}"
            )
        elif kind == "reorder" and len(leaves) > 1:
            order = draw(st.permutations([v.name for v in leaves]))
            cand = ReorderOp.make(name, list(order))
        elif kind == "fuse" and len(leaves) > 1:
            k = draw(st.integers(0, len(leaves) - 2))
            cand = FuseOp.make(name, [leaves[k].name, leaves[k + 1].name], f"f{next(fresh)}")
        elif kind == "vectorize" and leaves:
            cand = VectorizeOp.make(name, leaves[-1].name)
        elif kind == "parallel" and leaves:
            cand = ParallelOp.make(name, draw(st.sampled_from(leaves)).name)
        elif kind == "unroll" and leaves:
            cand = UnrollOp.make(name, draw(st.sampled_from(leaves)).name)
        elif kind == "inline":
            cand = ComputeInlineOp.make(name)
        elif kind == "compute_at":
            readers = state.effective_readers(stage)
            targets = [r for r in readers if r.compute is not None and r.leaves]
            if targets:
                target = draw(st.sampled_from(targets))
                cand = ComputeAtOp.make(
                    name, target.name, draw(st.sampled_from(target.leaves)).name
                )
        elif kind == "cache_write":
            cand = CacheWriteOp.make(name, f"{name}.c{next(fresh)}")
        elif kind == "rfactor":
            reduce_leaves = [v for v in leaves if v.reduce]
            if reduce_leaves:
                cand = RFactorOp.make(
                    name, draw(st.sampled_from(reduce_leaves)).name, f"{name}.rf{next(fresh)}"
                )
        if cand is not None and _legal(fn, [*prims, cand]):
            prims.append(cand)
    return prims


def _print(prims: list[Primitive]) -> str:
    import io

    from xdsl.printer import Printer

    out = io.StringIO()
    printer = Printer(stream=out)
    for p in prims:
        printer.print_op(p)
        out.write("\n")
    return out.getvalue()


@pytest.mark.parametrize("text", [MATMUL, CONV, CHAIN], ids=["matmul", "conv2d", "chain"])
@settings(max_examples=12, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_random_legal_schedules_keep_results(text: str, data: st.DataObject) -> None:
    prims = data.draw(schedules(text))
    module = parse(text)
    inputs = random_inputs(module)
    check(module, inputs, schedule=_print(prims) or None, atol=1e-4)


def test_default_schedule_is_legal_for_every_case() -> None:
    for text in (MATMUL, CONV, CHAIN):
        check(parse(text), atol=1e-4)


PACKED_MATMUL = """
func.func @k(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %m = nnvm.matmul %a, %b : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  func.return %m : tensor<{m}x{n}xf32>
}}
"""


@pytest.mark.parametrize("m,k,n", [(32, 32, 32), (40, 96, 64), (33, 40, 96)])
def test_packed_matmul_panels_keep_results(m: int, k: int, n: int) -> None:
    """A matmul whose second operand is packed into [N/32][K][32] column panels (the default
    schedule's GEMM path): the panels are read at j // 32, j % 32 inside the register tiles."""
    text = PACKED_MATMUL.format(m=m, k=k, n=n)
    module = parse(text)
    LowerToTE().apply(CTX, module)
    assert "pack" in str(module)
    check(parse(text), atol=1e-4)
    check(parse(text), schedule=None, atol=1e-4)


UNBLOCK_RESHAPE = """
func.func @k(%x: tensor<1x3x5x7x16xf32>) -> tensor<1x48x35xf32> {
  %t = nnvm.layout_transform %x {src_layout = "NCHW16c", dst_layout = "NCHW"} : (tensor<1x3x5x7x16xf32>) -> tensor<1x48x5x7xf32>
  %r = nnvm.reshape %t {shape = [1, 48, 35]} : (tensor<1x48x5x7xf32>) -> tensor<1x48x35xf32>
  func.return %r : tensor<1x48x35xf32>
}
"""


def test_reshape_of_an_inlined_unblocking_is_not_a_vector_of_gathers() -> None:
    """The reshape reads its input along its last axis, but the inlined NCHW16c -> NCHW
    transform under it reads with a stride of 16: the default schedule must see through the
    inlining and keep a scalar inner loop (a fused vector loop lowers to per-lane div/mod)."""
    module = parse(UNBLOCK_RESHAPE)
    LowerToTE().apply(CTX, module)
    from nnvm.passes.apply_default_schedule import ApplyDefaultSchedulePass

    ApplyDefaultSchedulePass().apply(CTX, module)
    prims = [p for op in module.walk() if isinstance(op, ScheduleOp) for p in op.body.block.ops]
    assert any(isinstance(p, ComputeInlineOp) for p in prims)
    assert not any(isinstance(p, VectorizeOp) for p in prims)
    check(parse(UNBLOCK_RESHAPE), atol=0)


def test_unblocking_a_plane_larger_than_l2_runs_in_tiles() -> None:
    """NCHW16c -> NCHW of 160 x 160 (1.6 MB a block) flattened: untiled, each of a block's
    16 channels would read the whole plane again from L3; the loop over channels runs inside
    tiles of the flattened axis instead, still scalar. The 5 x 7 plane above stays untiled."""
    from nnvm.passes.apply_default_schedule import ApplyDefaultSchedulePass

    text = UNBLOCK_RESHAPE.replace("1x3x5x7x16", "1x2x160x160x16").replace("48", "32")
    text = text.replace("5x7", "160x160").replace("35", "25600")
    for source, tiled in ((text, True), (UNBLOCK_RESHAPE, False)):
        module = parse(source)
        LowerToTE().apply(CTX, module)
        ApplyDefaultSchedulePass().apply(CTX, module)
        prims = [p for op in module.walk() if isinstance(op, ScheduleOp) for p in op.body.block.ops]
        assert any(isinstance(p, SplitOp) for p in prims) == tiled
        assert not any(isinstance(p, VectorizeOp) for p in prims)
    check(parse(text), atol=0)


SWAP_BLOCKED_AXES = """
func.func @k(%x: tensor<4x2x5x6x16xf32>, %b: tensor<32xf32>) -> tensor<1x2x4x30x16xf32> {
  %u = nnvm.layout_transform %x {src_layout = "NCHW16c", dst_layout = "NCHW"} : (tensor<4x2x5x6x16xf32>) -> tensor<4x32x5x6xf32>
  %r = nnvm.reshape %u {shape = [1, 4, 32, 5, 6]} : (tensor<4x32x5x6xf32>) -> tensor<1x4x32x5x6xf32>
  %t = nnvm.transpose %r {perm = [0, 2, 1, 3, 4]} : (tensor<1x4x32x5x6xf32>) -> tensor<1x32x4x5x6xf32>
  %a = nnvm.bias_add %t, %b {axis = 1} : (tensor<1x32x4x5x6xf32>, tensor<32xf32>) -> tensor<1x32x4x5x6xf32>
  %v = nnvm.relu %a : (tensor<1x32x4x5x6xf32>) -> tensor<1x32x4x5x6xf32>
  %f = nnvm.reshape %v {shape = [1, 32, 4, 30]} : (tensor<1x32x4x5x6xf32>) -> tensor<1x32x4x30xf32>
  %o = nnvm.layout_transform %f {src_layout = "NCHW", dst_layout = "NCHW16c"} : (tensor<1x32x4x30xf32>) -> tensor<1x2x4x30x16xf32>
  func.return %o : tensor<1x2x4x30x16xf32>
}
"""


def test_moving_whole_channel_blocks_through_reshapes_is_vectors() -> None:
    """S3D's move between its spatial and temporal convs, [T, C/16, H, W, 16] ->
    [C/16, T, H * W, 16] through NCHW, a transpose and reshapes: the block's channels are
    indexed (16 j + m) // 16 and (16 j + m) % 16, which the lowering folds, so a vector of the
    16 channels is one load (and the bias one vector) instead of 16 scalar copies (S3D's
    25.7 MB move: 24.2 -> 8.2 ms)."""
    from nnvm.passes.apply_default_schedule import ApplyDefaultSchedulePass

    module = parse(SWAP_BLOCKED_AXES)
    LowerToTE().apply(CTX, module)
    ApplyDefaultSchedulePass().apply(CTX, module)
    prims = [p for op in module.walk() if isinstance(op, ScheduleOp) for p in op.body.block.ops]
    assert any(isinstance(p, VectorizeOp) for p in prims)
    lowered = check(parse(SWAP_BLOCKED_AXES), atol=0)
    text = str(lowered)
    assert "vector.load %x[" in text and "vector.load %b[" in text  # the block; the bias
    assert "memref.load" not in text


UNBLOCK_MERGED_AXES = """
func.func @k(%x: tensor<1x2x8x4096x16xf32>) -> tensor<1x256x64x64xf32> {
  %t = nnvm.layout_transform %x {src_layout = "NCHW16c", dst_layout = "NCHW"} : (tensor<1x2x8x4096x16xf32>) -> tensor<1x32x8x4096xf32>
  %r = nnvm.reshape %t {shape = [1, 256, 64, 64]} : (tensor<1x32x8x4096xf32>) -> tensor<1x256x64x64xf32>
  func.return %r : tensor<1x256x64x64xf32>
}
"""


def test_unblocking_merged_with_another_axis_runs_in_tiles() -> None:
    """NCHW16c -> NCHW with the channels merged with the next axis (C x T frames into one
    axis, as S3D's 3-D blocks flatten them): a line of the input comes back T = 8 channel
    rows later, after 8 passes over the 64 x 64 plane (2 MB, over REREAD_PASS_BYTES), so the
    transform runs in tiles although one pass (256 KB) would stay in L2. S3D's
    [4, 8, 12544, 16] -> [512, 112, 112]: 19.0 -> 10.1 ms."""
    from nnvm.passes.apply_default_schedule import ApplyDefaultSchedulePass

    small = UNBLOCK_MERGED_AXES.replace("8x4096", "1x4096").replace("256x64", "32x64")
    small = small.replace("[1, 256,", "[1, 32,")
    for source, tiled in ((UNBLOCK_MERGED_AXES, True), (small, False)):
        module = parse(source)
        LowerToTE().apply(CTX, module)
        ApplyDefaultSchedulePass().apply(CTX, module)
        prims = [p for op in module.walk() if isinstance(op, ScheduleOp) for p in op.body.block.ops]
        # tiled: the channel rows loop inside the row's tiles (one tile: the row is 64 long)
        assert any(isinstance(p, ReorderOp) for p in prims) == tiled, source
    check(parse(UNBLOCK_MERGED_AXES), atol=0)


FEW_ROWS_MATMUL = """
func.func @k(%a: tensor<16x256xf32>, %b: tensor<256x64xf32>) -> tensor<16x64xf32> {
  %m = nnvm.matmul %a, %b : (tensor<16x256xf32>, tensor<256x64xf32>) -> tensor<16x64xf32>
  func.return %m : tensor<16x64xf32>
}
"""


def test_few_row_tiles_stream_their_depth_in_parts() -> None:
    """A matmul of two row tiles (16 tokens) reads rows k and k + K/2 of its column panel in
    one depth iteration by default (two memory streams), and its other stream counts
    (matmul.streams) keep the results too."""
    from nnvm.support.target import parse_target
    from nnvm.tune.space import TaskSpace
    from nnvm.tune.task import kernel_task

    module = parse(FEW_ROWS_MATMUL)
    LowerToTE().apply(CTX, module)
    task = kernel_task(parse_target("llvm"), "k", module, FEW_ROWS_MATMUL)
    assert task is not None
    assert task.default_config["matmul.streams"] == 2
    assert set(task.knobs["matmul.streams"].candidates) == {1, 2, 4}
    space = TaskSpace(task)
    for streams in (1, 2, 4):
        schedule = space.make({"matmul.streams": streams}).schedule
        assert ("-> (k.s, k.h)" in schedule) == (streams > 1)
        check(parse(FEW_ROWS_MATMUL), schedule=schedule, atol=1e-4)


def test_a_gemv_keeps_one_stream() -> None:
    """One row (an LSTM's step, a decoder's token) keeps its depth in one stream by default:
    an LSTM's weights stay in L2 across its steps, where two streams ran slower."""
    from nnvm.support.target import parse_target
    from nnvm.tune.task import kernel_task

    text = FEW_ROWS_MATMUL.replace("16x", "1x")
    module = parse(text)
    LowerToTE().apply(CTX, module)
    task = kernel_task(parse_target("llvm"), "k", module, text)
    assert task is not None
    assert task.default_config.get("matmul.streams", 1) == 1
    check(parse(text), atol=1e-4)


@pytest.mark.parametrize("m, tile", [(29, 10), (32, 11), (42, 14), (17, 9)])
def test_three_row_tiles_are_balanced_and_block_their_depth(m: int, tile: int) -> None:
    """Up to three row tiles (LLaMA's 29 tokens, GPT-2's 32) take tiles of nearly equal
    height and a depth-blocked nest in one stream: 29 rows run as 10 + 10 + 9, not 14 + 14 + 1.
    The product keeps its values with every tile height a knob allows."""
    from nnvm.support.target import parse_target
    from nnvm.tune.space import TaskSpace
    from nnvm.tune.task import kernel_task

    text = FEW_ROWS_MATMUL.replace("16x", f"{m}x")
    module = parse(text)
    LowerToTE().apply(CTX, module)
    task = kernel_task(parse_target("llvm"), "k", module, text)
    assert task is not None
    assert task.default_config["matmul.rows"] == tile
    assert task.default_config["matmul.depth_block"] > 0
    assert task.default_config.get("matmul.streams", 1) == (2 if -(-m // tile) <= 2 else 1)
    space = TaskSpace(task)
    for rows in {tile, 14, 5}:
        check(parse(text), schedule=space.make({"matmul.rows": rows}).schedule, atol=1e-4)
