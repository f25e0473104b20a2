"""The data-movement ops of the graph dialect against onnxruntime: each test parses a one-op
module, verifies it (the declared result types come from onnxruntime, so shape inference is
checked too), runs it through the reference executor and compares with the one-node ONNX model."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from nnvm.dialects.nnvm import NNVM
from nnvm.dialects.nnvm.traits import OpPatternKind, pattern_kind
from nnvm.reference import run_reference

PROPERTY = settings(max_examples=25, deadline=None, derandomize=True)
RNG = np.random.default_rng(0)

_ELT = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.int64): "i64",
    np.dtype(np.int32): "i32",
    np.dtype(np.bool_): "i1",
}


def ttype(shape: Sequence[int], dtype: Any) -> str:
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{_ELT[np.dtype(dtype)]}>"


def parse(text: str) -> ModuleOp:
    ctx = Context()
    for dialect in (Builtin, Func, NNVM):
        ctx.load_dialect(dialect)
    return Parser(ctx, text).parse_module()


def one_op_module(
    op: str, attrs: str, inputs: Sequence[np.ndarray], results: Sequence[tuple[Sequence[int], Any]]
) -> str:
    """`func.func @main` holding just `op` on the inputs with the given result types."""
    in_types = [ttype(x.shape, x.dtype) for x in inputs]
    out_types = [ttype(s, d) for s, d in results]
    args = ", ".join(f"%x{k}: {t}" for k, t in enumerate(in_types))
    names = ", ".join(f"%r{k}" for k in range(len(results)))
    operands = ", ".join(f"%x{k}" for k in range(len(inputs)))
    attr_text = f" {{{attrs}}}" if attrs else ""
    outs = ", ".join(out_types)
    return (
        f"func.func @main({args}) -> ({outs}) {{\n"
        f"  {names} = {op} {operands}{attr_text} : ({', '.join(in_types)}) -> ({outs})\n"
        f"  func.return {names} : {outs}\n"
        "}\n"
    )


def run_nnvm(
    op: str, attrs: str, inputs: Sequence[np.ndarray], results: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """Parse, verify and run the one-op module whose result types are those of `results`."""
    module = parse(one_op_module(op, attrs, inputs, [(r.shape, r.dtype) for r in results]))
    module.verify()
    # the printed form parses back to the same text
    assert str(parse(str(module))) == str(module)
    return run_reference(module, {}, list(inputs))


def run_onnx(
    op_type: str,
    inputs: Sequence[np.ndarray],
    consts: dict[str, np.ndarray] | None = None,
    attrs: dict[str, Any] | None = None,
    node_inputs: Sequence[str] | None = None,
    n_outputs: int = 1,
    opset: int = 19,
) -> list[np.ndarray]:
    """Run a one-node ONNX model; runtime inputs are x0.., constant inputs initializers."""
    consts = consts or {}
    names = [f"x{k}" for k in range(len(inputs))]
    node = helper.make_node(
        op_type,
        list(node_inputs) if node_inputs is not None else [*names, *consts],
        [f"y{k}" for k in range(n_outputs)],
        **(attrs or {}),
    )
    graph = helper.make_graph(
        [node],
        "one_node",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
            for n, x in zip(names, inputs, strict=True)
        ],
        [helper.make_empty_tensor_value_info(f"y{k}") for k in range(n_outputs)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(names, inputs, strict=True)))


def check(
    op: str,
    op_attrs: str,
    inputs: Sequence[np.ndarray],
    onnx_op: str,
    *,
    tol: dict[str, float] | None = None,
    **onnx_args: Any,
) -> None:
    want = run_onnx(onnx_op, inputs, **onnx_args)
    got = run_nnvm(op, op_attrs, inputs, want)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        if tol is None:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, **tol)


def data(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def ints(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


# ----------------------------------------------------------------------------------------------
# Reshaping
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 6), (24,), (2, 3, 2, 2), (1, 24, 1)])
def test_reshape(shape: tuple[int, ...]) -> None:
    check(
        "nnvm.reshape",
        f"shape = {ints(shape)}",
        [data(2, 3, 4)],
        "Reshape",
        consts={"shape": np.array(shape, np.int64)},
    )


def test_reshape_integer_data() -> None:
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    check("nnvm.reshape", "shape = [2, 6]", [x], "Reshape", consts={"s": np.array([2, 6])})


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
def test_flatten(axis: int) -> None:
    check("nnvm.flatten", f"axis = {axis}", [data(2, 3, 4)], "Flatten", attrs={"axis": axis})


@pytest.mark.parametrize("axes", [[0], [0, 2], [-1], [2, 0]])
def test_squeeze(axes: list[int]) -> None:
    check(
        "nnvm.squeeze",
        f"axes = {ints(axes)}",
        [data(1, 3, 1)],
        "Squeeze",
        consts={"axes": np.array(axes, np.int64)},
    )


@pytest.mark.parametrize("axes", [[0], [0, 3], [-1], [1, -1], [4, 0, 2]])
def test_expand_dims(axes: list[int]) -> None:
    check(
        "nnvm.expand_dims",
        f"axes = {ints(axes)}",
        [data(2, 3)],
        "Unsqueeze",
        consts={"axes": np.array(axes, np.int64)},
    )


# ----------------------------------------------------------------------------------------------
# Reordering
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("perm", [[1, 0, 2], [2, 1, 0], [0, 1, 2]])
def test_transpose(perm: list[int]) -> None:
    check(
        "nnvm.transpose", f"perm = {ints(perm)}", [data(2, 3, 4)], "Transpose", attrs={"perm": perm}
    )


@PROPERTY
@given(
    st.lists(st.integers(1, 3), min_size=1, max_size=5).flatmap(
        lambda shape: st.tuples(st.just(shape), st.permutations(range(len(shape))))
    )
)
def test_transpose_matches_numpy(case: tuple[list[int], list[int]]) -> None:
    shape, perm = case
    x = data(*shape)
    want = np.transpose(x, perm)
    (got,) = run_nnvm("nnvm.transpose", f"perm = {ints(perm)}", [x], [want])
    np.testing.assert_array_equal(got, want)


def blocked_nchw(x: np.ndarray, c: int) -> np.ndarray:
    n, ch, h, w = x.shape
    return x.reshape(n, ch // c, c, h, w).transpose(0, 1, 3, 4, 2)


@pytest.mark.parametrize(
    ("src", "dst", "convert"),
    [
        ("NCHW", "NCHW4c", lambda x: blocked_nchw(x, 4)),
        ("NCHW", "NHWC", lambda x: x.transpose(0, 2, 3, 1)),
        ("NCHW8c", "NCHW", lambda x: x.transpose(0, 1, 4, 2, 3).reshape(2, 8, 3, 5)),
        (
            "NCHW4c",
            "NCHW2c",
            lambda x: blocked_nchw(x.transpose(0, 1, 4, 2, 3).reshape(2, 8, 3, 5), 2),
        ),
    ],
)
def test_layout_transform(src: str, dst: str, convert: Any) -> None:
    x = data(2, 8, 3, 5) if src == "NCHW" else blocked_nchw(data(2, 8, 3, 5), int(src[4]))
    want = np.ascontiguousarray(convert(x))
    (got,) = run_nnvm(
        "nnvm.layout_transform", f'src_layout = "{src}", dst_layout = "{dst}"', [x], [want]
    )
    np.testing.assert_array_equal(got, want)


def test_layout_transform_kernel_layout() -> None:
    w = data(8, 4, 3, 3)
    want = w.reshape(2, 4, 2, 2, 3, 3).transpose(0, 2, 4, 5, 3, 1)  # OIHW2i4o
    (got,) = run_nnvm(
        "nnvm.layout_transform", 'src_layout = "OIHW", dst_layout = "OIHW2i4o"', [w], [want]
    )
    np.testing.assert_array_equal(got, want)


@PROPERTY
@given(
    st.sampled_from(["NCHW", "NHWC", "CHWN", "HWCN"]),
    st.sampled_from([2, 4]),
    st.sampled_from(["N", "C", "H", "W"]),
)
def test_layout_transform_there_and_back(src: str, factor: int, blocked: str) -> None:
    """Blocking any axis and unblocking it again is the identity."""
    dst = src + f"{factor}{blocked.lower()}"
    x = data(*[4 if a == blocked else 2 + k for k, a in enumerate(src)])
    t = ttype(x.shape, x.dtype)
    module = parse(
        f"""func.func @main(%x: {t}) -> {t} {{
  %b = nnvm.layout_transform %x {{src_layout = "{src}", dst_layout = "{dst}"}}
       : ({t}) -> tensor<*xf32>
  %y = nnvm.layout_transform %b {{src_layout = "{dst}", dst_layout = "{src}"}}
       : (tensor<*xf32>) -> {t}
  func.return %y : {t}
}}"""
    )
    module.verify()
    (got,) = run_reference(module, {}, [x])
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(mode: str) -> None:
    check(
        "nnvm.depth_to_space",
        f'blocksize = 2, mode = "{mode}"',
        [data(2, 8, 3, 4)],
        "DepthToSpace",
        attrs={"blocksize": 2, "mode": mode},
    )


def test_space_to_depth() -> None:
    check(
        "nnvm.space_to_depth",
        "blocksize = 2",
        [data(2, 3, 4, 6)],
        "SpaceToDepth",
        attrs={"blocksize": 2},
    )


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_inverts_depth_to_space(mode: str) -> None:
    x = data(1, 8, 2, 3)
    d2s = run_nnvm(
        "nnvm.depth_to_space",
        f'blocksize = 2, mode = "{mode}"',
        [x],
        [np.zeros((1, 2, 4, 6), np.float32)],
    )
    (back,) = run_nnvm("nnvm.space_to_depth", f'blocksize = 2, mode = "{mode}"', d2s, [x])
    np.testing.assert_array_equal(back, x)


# ----------------------------------------------------------------------------------------------
# Joining and splitting
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis: int) -> None:
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for k, s in enumerate(shapes):
        s[axis] += k
    check(
        "nnvm.concat", f"axis = {axis}", [data(*s) for s in shapes], "Concat", attrs={"axis": axis}
    )


def test_concat_single_operand() -> None:
    check("nnvm.concat", "axis = 0", [data(2, 3)], "Concat", attrs={"axis": 0})


@pytest.mark.parametrize(("axis", "sizes"), [(1, [1, 2, 3]), (0, [2]), (-1, [3, 1]), (1, [0, 6])])
def test_split(axis: int, sizes: list[int]) -> None:
    shape = [2, 6, 4]
    if axis == -1:
        shape[-1] = sum(sizes)
    check(
        "nnvm.split",
        f"axis = {axis}, sizes = {ints(sizes)}",
        [data(*shape)],
        "Split",
        consts={"split": np.array(sizes, np.int64)},
        attrs={"axis": axis},
        n_outputs=len(sizes),
    )


# ----------------------------------------------------------------------------------------------
# Selecting
# ----------------------------------------------------------------------------------------------

SLICE_CASES = [
    ([0], [2], [0], [1]),
    ([1, 0], [3, -1], [1, 2], [1, 2]),
    ([-3], [100], [-1], [1]),  # negative start, clamped end
    ([-1], [-100], [1], [-1]),  # full reversal
    ([4], [0], [2], [-2]),  # negative step, start past the end
    ([0, 1, 2], [2, 2, 2], [0, 1, 2], [1, 1, 1]),  # empty axis
    ([2], [-9223372036854775808], [0], [-1]),  # INT64_MIN end
    ([1], [9223372036854775807], [2], [3]),  # INT64_MAX end
]


@pytest.mark.parametrize(("starts", "ends", "axes", "steps"), SLICE_CASES)
def test_slice(starts: list[int], ends: list[int], axes: list[int], steps: list[int]) -> None:
    check(
        "nnvm.slice",
        f"starts = {ints(starts)}, ends = {ints(ends)}, axes = {ints(axes)}, steps = {ints(steps)}",
        [data(3, 4, 5)],
        "Slice",
        consts={
            "starts": np.array(starts, np.int64),
            "ends": np.array(ends, np.int64),
            "axes": np.array(axes, np.int64),
            "steps": np.array(steps, np.int64),
        },
    )


@PROPERTY
@given(
    st.lists(
        st.tuples(st.integers(-7, 7), st.integers(-7, 7), st.sampled_from([-3, -2, -1, 1, 2, 3])),
        min_size=3,
        max_size=3,
    ),
    st.permutations([0, 1, 2]),
    st.integers(1, 3),
)
def test_slice_matches_onnxruntime(
    entries: list[tuple[int, int, int]], axes: list[int], count: int
) -> None:
    entries, axes = entries[:count], axes[:count]
    starts, ends, steps = (list(v) for v in zip(*entries, strict=True))
    test_slice(starts, ends, axes, steps)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_gather(axis: int, index_dtype: Any) -> None:
    x = data(3, 4, 5)
    extent = x.shape[axis]
    indices = np.array([[0, -1], [extent - 1, 1], [-extent, 0]], index_dtype)
    check("nnvm.gather", f"axis = {axis}", [x, indices], "Gather", attrs={"axis": axis})


def test_gather_scalar_index() -> None:
    check(
        "nnvm.gather", "axis = 1", [data(3, 4), np.array(-2, np.int64)], "Gather", attrs={"axis": 1}
    )


def test_gather_out_of_range_index_is_an_error() -> None:
    x, idx = data(3, 4), np.array([3], np.int64)
    module = parse(one_op_module("nnvm.gather", "", [x, idx], [((1, 4), np.float32)]))
    module.verify()
    with pytest.raises(IndexError, match="out of range"):
        run_reference(module, {}, [x, idx])


@pytest.mark.parametrize(
    ("data_shape", "indices", "batch_dims"),
    [
        ((3, 4), [[0, 1], [2, -1]], 0),
        ((3, 4, 2), [[1], [-1]], 0),
        ((3, 4, 2), [[[0, 1, 1]], [[2, 3, 0]]], 0),
        ((2, 3, 4), [[1], [2]], 1),
        ((2, 3, 4), [[[0, 1], [2, 3]], [[1, 0], [0, -1]]], 1),
        ((2, 2, 3, 4), [[[1, 2], [0, 1]], [[0, 0], [2, 3]]], 2),
    ],
)
def test_gather_nd(data_shape: tuple[int, ...], indices: list[Any], batch_dims: int) -> None:
    idx = np.array(indices, np.int64)
    check(
        "nnvm.gather_nd",
        f"batch_dims = {batch_dims}" if batch_dims else "",
        [data(*data_shape), idx],
        "GatherND",
        attrs={"batch_dims": batch_dims},
    )


# ----------------------------------------------------------------------------------------------
# Growing
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "target"), [((3, 1), (2, 3, 4)), ((1,), (5,)), ((2, 1, 4), (2, 3, 4)), ((), (2, 2))]
)
def test_broadcast_to(src: tuple[int, ...], target: tuple[int, ...]) -> None:
    check(
        "nnvm.broadcast_to",
        f"shape = {ints(target)}",
        [data(*src)],
        "Expand",
        consts={"shape": np.array(target, np.int64)},
    )


@pytest.mark.parametrize("repeats", [[1, 1], [2, 3], [3, 1], [1, 0]])
def test_tile(repeats: list[int]) -> None:
    check(
        "nnvm.tile",
        f"repeats = {ints(repeats)}",
        [data(2, 3)],
        "Tile",
        consts={"repeats": np.array(repeats, np.int64)},
    )


PAD_CASES = [
    [1, 2, 0, 3],
    [0, 0, 2, 1],
    [-1, 1, 1, -2],  # crop and grow on one tensor
    [2, -1, -1, 2],
    [3, 3, 3, 3],
]


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads", PAD_CASES)
def test_pad(mode: str, pads: list[int]) -> None:
    x = data(4, 5)
    if mode == "reflect" and max(pads) >= 3:
        pads = [min(p, 2) for p in pads]  # reflect pads must stay below the extent
    consts: dict[str, np.ndarray] = {"pads": np.array(pads, np.int64)}
    attrs = f"pads = {ints(pads)}"
    if mode == "constant":
        consts["value"] = np.array(1.5, np.float32)
        attrs += ", value = 1.5"
    else:
        attrs += f', mode = "{mode}"'
    check("nnvm.pad", attrs, [x], "Pad", consts=consts, attrs={"mode": mode})


def test_pad_integer_default_value() -> None:
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    check("nnvm.pad", "pads = [1, 0, 0, 2]", [x], "Pad", consts={"pads": np.array([1, 0, 0, 2])})


# ----------------------------------------------------------------------------------------------
# Resize
# ----------------------------------------------------------------------------------------------

RESIZE_TOL = {"rtol": 1e-3, "atol": 1e-5}
COORDINATE_MODES = [
    "half_pixel",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "half_pixel_symmetric",
    "tf_crop_and_resize",
]


def check_resize(
    x: np.ndarray,
    *,
    sizes: Sequence[int] | None = None,
    scales: Sequence[float] | None = None,
    roi: Sequence[float] | None = None,
    **attrs: Any,
) -> None:
    """Resize by sizes or by scales (the output size then floors in * scale, as ONNX does)."""
    consts: dict[str, np.ndarray] = {}
    node_inputs = ["x0", "", "", ""]
    if roi is not None:
        consts["roi"] = np.array(roi, np.float32)
        node_inputs[1] = "roi"
    if scales is not None:
        consts["scales"] = np.array(scales, np.float32)
        node_inputs[2] = "scales"
        out = [int(np.floor(d * np.float32(s))) for d, s in zip(x.shape, scales, strict=True)]
    else:
        assert sizes is not None
        consts["sizes"] = np.array(sizes, np.int64)
        node_inputs[3] = "sizes"
        out = list(sizes)
    while node_inputs[-1] == "":
        node_inputs.pop()
    text = [f"size = {ints(out)}"]
    if scales is not None:
        text.append("scales = [" + ", ".join(repr(float(np.float32(s))) for s in scales) + "]")
    if roi is not None:
        text.append("roi = [" + ", ".join(repr(float(v)) for v in roi) + "]")
    for key, value in attrs.items():
        if isinstance(value, str):
            text.append(f'{key} = "{value}"')
        elif isinstance(value, bool):
            text.append(f"{key} = {str(value).lower()}")
        else:
            text.append(f"{key} = {float(value)!r}")
    onnx_attrs = {k: int(v) if isinstance(v, bool) else v for k, v in attrs.items()}
    check(
        "nnvm.resize",
        ", ".join(text),
        [x],
        "Resize",
        consts=consts,
        attrs=onnx_attrs,
        node_inputs=node_inputs,
        tol=RESIZE_TOL if x.dtype.kind == "f" else None,
    )


def _roi_for(ctm: str, rank: int) -> list[float] | None:
    if ctm != "tf_crop_and_resize":
        return None
    return [0.0] * (rank - 2) + [0.1, 0.2] + [1.0] * (rank - 2) + [0.8, 1.1]


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("ctm", COORDINATE_MODES)
@pytest.mark.parametrize(("sizes", "scales"), [((1, 2, 7, 9), None), (None, (1, 1, 0.6, 1.7))])
def test_resize_modes(
    mode: str, ctm: str, sizes: tuple[int, ...] | None, scales: tuple[float, ...] | None
) -> None:
    x = data(1, 2, 4, 5)
    check_resize(
        x,
        sizes=sizes,
        scales=scales,
        roi=_roi_for(ctm, 4),
        mode=mode,
        coordinate_transformation_mode=ctm,
        extrapolation_value=-3.0,
    )


@pytest.mark.parametrize(
    "nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
)
@pytest.mark.parametrize("ctm", ["half_pixel", "asymmetric", "align_corners"])
def test_resize_nearest_modes(nearest_mode: str, ctm: str) -> None:
    # scale 2 and 0.5 put many source coordinates exactly on .5 ties
    check_resize(
        data(1, 1, 4, 6),
        scales=(1, 1, 2.0, 0.5),
        mode="nearest",
        nearest_mode=nearest_mode,
        coordinate_transformation_mode=ctm,
    )


@pytest.mark.parametrize("exclude_outside", [False, True])
@pytest.mark.parametrize("a", [-0.75, -0.5])
def test_resize_cubic_options(exclude_outside: bool, a: float) -> None:
    check_resize(
        data(2, 1, 5, 4),
        sizes=(2, 1, 3, 9),
        mode="cubic",
        cubic_coeff_a=a,
        exclude_outside=exclude_outside,
    )


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_crop_leaves_unscaled_axes_alone(mode: str) -> None:
    """onnxruntime ignores the roi on an axis whose scale is 1; so do we."""
    check_resize(
        data(1, 1, 4, 5),
        sizes=(1, 1, 4, 7),
        roi=[0, 0, 0.2, 0.1, 1, 1, 0.7, 0.9],
        mode=mode,
        coordinate_transformation_mode="tf_crop_and_resize",
    )


def test_resize_trilinear() -> None:
    check_resize(data(1, 2, 3, 4, 5), sizes=(1, 2, 5, 3, 8), mode="linear")


def test_resize_linear_2d() -> None:
    check_resize(
        data(4, 5), scales=(2.5, 0.5), mode="linear", coordinate_transformation_mode="asymmetric"
    )


def test_resize_nearest_all_axes_integer_data() -> None:
    x = np.arange(2 * 3 * 4, dtype=np.int32).reshape(2, 3, 4)
    check_resize(x, sizes=(3, 5, 2), mode="nearest")


# ----------------------------------------------------------------------------------------------
# Pass-throughs and scans
# ----------------------------------------------------------------------------------------------


def test_identity() -> None:
    check("nnvm.identity", "", [data(2, 3)], "Identity")


def test_dropout_is_identity_at_inference() -> None:
    check("nnvm.dropout", "", [data(2, 3)], "Dropout")


@pytest.mark.parametrize(("exclusive", "reverse"), list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("axis", [0, -1])
def test_cumsum(exclusive: bool, reverse: bool, axis: int) -> None:
    x = RNG.integers(-5, 5, (3, 4)).astype(np.float32)
    attrs = [f"axis = {axis}"]
    if exclusive:
        attrs.append("exclusive = true")
    if reverse:
        attrs.append("reverse = true")
    check(
        "nnvm.cumsum",
        ", ".join(attrs),
        [x],
        "CumSum",
        consts={"axis": np.array(axis, np.int64)},
        attrs={"exclusive": int(exclusive), "reverse": int(reverse)},
    )


def test_cumsum_integer() -> None:
    x = np.arange(10, dtype=np.int32).reshape(2, 5)
    check("nnvm.cumsum", "axis = 1", [x], "CumSum", consts={"axis": np.array(1, np.int64)})


# ----------------------------------------------------------------------------------------------
# Pattern kinds and shape errors
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "kind"),
    [
        ("nnvm.reshape %x {shape = [6]}", OpPatternKind.INJECTIVE),
        ("nnvm.transpose %x {perm = [1, 0]}", OpPatternKind.INJECTIVE),
        ("nnvm.broadcast_to %x {shape = [4, 2, 3]}", OpPatternKind.BROADCAST),
        ("nnvm.identity %x", OpPatternKind.ELEMWISE),
        ("nnvm.dropout %x", OpPatternKind.ELEMWISE),
        ("nnvm.cumsum %x {axis = 0}", OpPatternKind.OPAQUE),
        ('nnvm.resize %x {size = [4, 6], mode = "linear"}', OpPatternKind.INJECTIVE),
    ],
)
def test_pattern_kinds(op: str, kind: OpPatternKind) -> None:
    module = parse(
        f"func.func @main(%x: tensor<2x3xf32>) -> tensor<*xf32> {{\n"
        f"  %r = {op} : (tensor<2x3xf32>) -> tensor<*xf32>\n"
        "  func.return %r : tensor<*xf32>\n}"
    )
    module.verify()
    fn = next(iter(module.ops))
    assert pattern_kind(next(iter(fn.body.block.ops))) is kind  # type: ignore[attr-defined]


BAD_OPS = [
    ("nnvm.reshape %x {shape = [5]}", "cannot reshape"),
    ("nnvm.reshape %x {shape = [-1]}", "must be static"),
    ("nnvm.flatten %x {axis = 3}", "out of range"),
    ("nnvm.squeeze %x {axes = [0]}", "not 1"),
    ("nnvm.squeeze %x {axes = [2]}", "out of range"),
    ("nnvm.expand_dims %x {axes = [1, 1]}", "twice"),
    ("nnvm.expand_dims %x {axes = [4]}", "out of range"),
    ("nnvm.transpose %x {perm = [0, 0]}", "not a permutation"),
    ("nnvm.transpose %x {perm = [0, 1, 2]}", "not a permutation"),
    ("nnvm.concat %x, %i {axis = 0}", "element type"),
    ("nnvm.concat %x, %y {axis = 1}", "differs"),
    ("nnvm.concat %x, %x {axis = 2}", "out of range"),
    ("nnvm.split %x {axis = 1, sizes = [1, 1]}", "do not add up"),
    ("nnvm.slice %x {starts = [0], ends = [1], axes = [0, 1], steps = [1]}", "one length"),
    ("nnvm.slice %x {starts = [0], ends = [1], axes = [0], steps = [0]}", "non-zero"),
    ("nnvm.slice %x {starts = [0], ends = [1], axes = [5], steps = [1]}", "out of range"),
    ("nnvm.gather %x, %x {axis = 0}", "indices must be integers"),
    ("nnvm.gather %x, %i {axis = 2}", "out of range"),
    ("nnvm.gather_nd %x, %i {batch_dims = 0}", "address 3 axes"),
    ("nnvm.gather_nd %x, %i {batch_dims = 2}", "batch_dims"),
    ("nnvm.broadcast_to %x {shape = [3, 3]}", "does not broadcast"),
    ("nnvm.broadcast_to %x {shape = [3]}", "does not broadcast"),
    ("nnvm.tile %x {repeats = [2]}", "repeats for a tensor of rank"),
    ("nnvm.pad %x {pads = [1, 1]}", "need 4"),
    ('nnvm.pad %x {pads = [0, 3, 0, 0], mode = "reflect"}', "exceed"),
    ("nnvm.pad %x {pads = [-2, 0, -1, 0]}", "crop more"),
    ('nnvm.pad %x {pads = [0, 0, 0, 0], mode = "symmetric"}', "mode must be"),
    ("nnvm.resize %x {size = [4]}", "one entry per axis"),
    ('nnvm.resize %x {size = [4, 6], mode = "bilinear"}', "mode must be"),
    ('nnvm.resize %x {size = [4, 6], coordinate_transformation_mode = "odd"}', "unknown"),
    ('nnvm.resize %i {size = [4, 6], mode = "linear"}', "needs a float tensor"),
    ("nnvm.resize %x {size = [4, 6], scales = [2.0]}", "scales must be"),
    ('nnvm.layout_transform %x {src_layout = "NC", dst_layout = "NCHW"}', "not a layout"),
    (
        'nnvm.layout_transform %x {src_layout = "NC", dst_layout = "NC2c", logical = array<i64: 2, 5>}',
        "does not hold the logical shape",
    ),
    ('nnvm.layout_transform %x {src_layout = "NCHW", dst_layout = "NHWC"}', "rank 2"),
    ("nnvm.depth_to_space %x {blocksize = 2}", "4-D"),
    ("nnvm.cumsum %x {axis = 2}", "out of range"),
]


@pytest.mark.parametrize(("op", "message"), BAD_OPS)
def test_shape_errors(op: str, message: str) -> None:
    """x: 2x3 f32, y: 3x3 f32, i: 2x3 i64; every op here is malformed for those operands."""
    operands = re.findall(r"%(\w+)", op)
    types = {"x": "tensor<2x3xf32>", "y": "tensor<3x3xf32>", "i": "tensor<2x3xi64>"}
    results = "tensor<*xf32>, tensor<*xf32>" if "split" in op else "tensor<*xf32>"
    names = "%r, %s" if "split" in op else "%r"
    module = parse(
        "func.func @main(%x: tensor<2x3xf32>, %y: tensor<3x3xf32>, %i: tensor<2x3xi64>) {\n"
        f"  {names} = {op} : ({', '.join(types[o] for o in operands)}) -> ({results})\n"
        "  func.return\n}"
    )
    with pytest.raises(VerifyException, match=message):
        module.verify()


def test_declared_result_type_must_agree() -> None:
    module = parse(
        "func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
        "  %r = nnvm.transpose %x {perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<2x3xf32>\n"
        "  func.return %r : tensor<2x3xf32>\n}"
    )
    with pytest.raises(VerifyException, match="disagrees"):
        module.verify()


def test_split_result_count_must_match_sizes() -> None:
    module = parse(
        "func.func @main(%x: tensor<2x4xf32>) {\n"
        "  %a = nnvm.split %x {axis = 1, sizes = [2, 2]} : (tensor<2x4xf32>) -> tensor<2x2xf32>\n"
        "  func.return\n}"
    )
    with pytest.raises(VerifyException, match="2 results"):
        module.verify()
