"""dialects/te/work.py: the floating-point work and the bytes a te kernel must move, which the
efficiency report (bench/efficiency.py) sets against the machine's roofs."""

from __future__ import annotations

import pytest
from harness import CTX, op_module
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType, f32

from nnvm.dialects.nnvm import binary, conv, nn, pooling
from nnvm.dialects.te.work import Work, kernel_work
from nnvm.lowering.to_te.lower_to_te import LowerToTE


def t(shape: tuple[int, ...]) -> TensorType:
    return TensorType(f32, shape)


def work_of(cls: type, shapes: list[tuple[int, ...]], **props) -> Work:
    module = op_module(cls, [t(s) for s in shapes], **props)
    LowerToTE().apply(CTX, module)
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return kernel_work(fn)


def test_dense_counts_two_flops_per_multiply_accumulate() -> None:
    w = work_of(nn.DenseOp, [(7, 20), (5, 20)])
    assert w.flops == 2 * 7 * 5 * 20
    assert w.bytes == 4 * (7 * 20 + 5 * 20 + 7 * 5)
    assert w.read_bytes == 4 * (7 * 20 + 5 * 20)  # the arguments; the result is written


@pytest.mark.parametrize(("groups", "dilation"), [(1, 1), (4, 1), (8, 2)])
def test_conv_work_is_output_times_window(groups: int, dilation: int) -> None:
    x, wt = (1, 8, 9, 9), (16, 8 // groups, 3, 3)
    w = work_of(
        conv.Conv2DOp,
        [x, wt],
        padding=(dilation,) * 4,
        dilation=(dilation, dilation),
        groups=groups,
    )
    out = 1 * 16 * 9 * 9
    assert w.flops == 2 * out * (8 // groups) * 9  # padding stages do no arithmetic
    assert w.bytes == 4 * (9 * 9 * 8 + 16 * (8 // groups) * 9 + out)


def test_elementwise_and_window_reductions_count_one_per_point() -> None:
    assert work_of(binary.AddOp, [(3, 5), (3, 5)]).flops == 15
    pooled = work_of(pooling.MaxPool2DOp, [(1, 2, 4, 4)], pool_size=(2, 2), strides=(2, 2))
    assert pooled.flops == 2 * 2 * 2 * 4  # one max per window element of each output


def _te_work(body: str, args: str, result: str) -> Work:
    from harness import parse

    module = parse(f"func.func @k({args}) -> {result} {{\n{body}\n}}")
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return kernel_work(fn)


STEP = 'te.compute "{n}" [j] sum [k : 16] = %w[j, k] * {x}[k] : ({w}, {v}) -> {v}'
W, V = "tensor<16x16xf32>", "tensor<16xf32>"


REREAD_CASES = {
    # h1 = W x, h2 = W h1, h3 = W h2: each step needs the one before, so W is read 3 times
    "recurrence": ([("h1", "%x"), ("h2", "%h1"), ("h3", "%h2")], "%h3", 2),
    # W x and W z: one schedule can read W once for both
    "independent": ([("a", "%x"), ("b", "%z")], "%b", 0),
}


@pytest.mark.parametrize("case", list(REREAD_CASES))
def test_a_recurrence_rereads_its_weights_at_every_step_after_the_first(case: str) -> None:
    steps, result, again = REREAD_CASES[case]
    body = [f"%{n} = {STEP.format(n=n, x=x, w=W, v=V)}" for n, x in steps]
    body.append(f"func.return {result} : {V}")
    w = _te_work("\n".join(body), f"%w: {W}, %x: {V}, %z: {V}", V)
    size = 16 * 16 * 4
    assert w.rereads == (((again * size, size),) if again else ())
