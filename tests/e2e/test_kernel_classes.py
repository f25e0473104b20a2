"""The kernel classes that missed the fast paths (issue 14), built and checked against
onnxruntime: matmuls whose row count no register tile divides (197 tokens), rows in torch's
[seq, 1, hidden] layout, grouped convolutions with blocks inside a group and across groups,
convs whose output rows no tile divides (1x7 on 17 columns, dilated on 33). bench/kernels.py
times the same shapes; here they only have to be right."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime
from nnvm.testing.onnx_models import single_op


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))


def _model(node, x_shape, weights):
    return single_op(node, x_shape, weights, scale=0.1, seed=3)


def _model_with_consts(node, x_shape, consts: dict[str, np.ndarray], opset: int):
    """A model of one node over float input "x" and the given constants (any dtype), output
    "y" untyped: for ops whose other inputs are shapes, steps or windows, not weights."""
    graph = helper.make_graph(
        [node],
        node.op_type.lower(),
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check(model, x_shape) -> None:
    x = np.random.default_rng(4).standard_normal(x_shape).astype(np.float32)
    module, params = from_onnx(model)
    graph, lib, p = build(module, params=params)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**p)
    m.run(x=x)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": x})[0]
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize(
    "x_shape, w_shape",
    [
        ([1, 197, 96], [96, 64]),  # 197 rows: full tiles and a tail tile
        ([13, 40], [40, 24]),
        ([197, 1, 96], [96, 64]),  # [seq, batch=1, hidden]
        ([5, 3, 48], [48, 40]),  # 3 rows per batch: flattened
        ([2, 7, 33], [33, 17]),  # odd everything
        ([1, 14, 14, 40], [40, 24]),  # channels-last linear: 14 rows per batch, flattened
        ([37, 1030], [1030, 40]),  # deep: the reduction in blocks, a tail block of 6
        ([1, 3, 1024], [1024, 197]),  # deep, 3 rows, a masked last column tile
        ([1, 3, 768], [768, 96]),  # 3 rows over packed panels (GPT-2 over 3 tokens)
        ([1, 200], [200, 256]),  # a GEMV over packed panels (8-vector tiles), a depth tail
        ([2, 64], [64, 128]),  # two rows: a GEMV too
        ([1, 1, 96], [96, 1000]),  # a classifier's GEMV: stays a dense
    ],
)
def test_matmul_with_rows_no_tile_divides(x_shape, w_shape) -> None:
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    _check(_model(node, x_shape, {"w": w_shape}), x_shape)


@pytest.mark.parametrize(
    "x_shape, w_shape",
    [
        ([1, 16, 256], [256, 96]),  # two row tiles over each depth block (16 tokens)
        ([37, 1030], [1030, 40]),  # three, and a tail block of 6
    ],
)
def test_matmul_spreads_its_weight_prefetch_over_the_row_tiles(x_shape, w_shape) -> None:
    """A depth-blocked matmul with several row tiles fetches the next depth block spread over
    them (te.prefetch ... spread): the schedule says so, and the product is right."""
    from nnvm.tune.space import TaskSpace
    from nnvm.tune.task import extract_tasks

    model = _model(helper.make_node("MatMul", ["x", "w"], ["y"]), x_shape, {"w": w_shape})
    (task,) = [t for t in extract_tasks(*from_onnx(model)) if "matmul" in t.name]
    assert "spread" in TaskSpace(task).default().schedule
    _check(model, x_shape)


@pytest.mark.parametrize("length", [17, 33, 40, 48, 80, 100])
@pytest.mark.parametrize("op", ["Softmax", "Tanh", "Erf", "Sigmoid"])
def test_transcendentals_over_rows_of_any_length(op, length) -> None:
    """Attention rows of 33-48 tokens (MobileBERT's 40, Mistral's 37): exp, tanh and erf run
    on 16-lane slices of the row's vector, and joining three slices back into one used to
    hand LLVM's shufflevector two operands of different lengths (a TypeError at compile)."""
    x_shape = [2, 3, length]
    node = helper.make_node(op, ["x"], ["y"], **({"axis": -1} if op == "Softmax" else {}))
    _check(_model(node, x_shape, {}), x_shape)


def test_attention_scores_written_row_by_row() -> None:
    """q . k^T over a short head dimension writes a large output from a right operand that
    stays in L2: its row tiles run outermost, each sweeping every column panel (whole
    output rows while they are in cache). The schedule says so, and the product is right."""
    from nnvm.tune.task import extract_tasks

    x_shape = [1, 4, 750, 64]
    node = helper.make_node("MatMul", ["x", "kt"], ["y"])
    model = _model(node, x_shape, {"kt": [1, 4, 64, 750]})
    (task,) = [t for t in extract_tasks(*from_onnx(model)) if "matmul" in t.name]
    assert task.default_config["matmul.block_tiles"] == 1, task.default_config
    _check(model, x_shape)


@pytest.mark.parametrize(
    "channels, groups, hw, kernel, stride, dilation",
    [
        (64, 4, 10, 3, 1, 1),  # 16 channels per group: blocked, blocks inside groups
        (32, 2, 9, 3, 2, 1),  # strided
        (128, 32, 12, 3, 1, 1),  # 4 per group: stays NCHW (blocks would span groups)
        (48, 4, 8, 1, 1, 1),  # 12 per group
        (48, 6, 10, 3, 2, 1),  # 8 per group: 8-wide blocks under AVX-512's 16 (RegNet)
        (32, 32, 9, 3, 1, 2),  # depthwise, dilated
    ],
)
def test_grouped_conv(channels, groups, hw, kernel, stride, dilation) -> None:
    pad = dilation * (kernel - 1) // 2
    node = helper.make_node(
        "Conv",
        ["x", "w"],
        ["y"],
        group=groups,
        strides=[stride, stride],
        dilations=[dilation, dilation],
        pads=[pad] * 4,
    )
    w = [channels, channels // groups, kernel, kernel]
    x_shape = [1, channels, hw, hw]
    _check(_model(node, x_shape, {"w": w}), x_shape)


@pytest.mark.parametrize(
    "in_channels, out_channels, hw, expected_cols",
    [
        (32, 3, 128, 64),  # a UNet's last conv: 3 x 4 vectors, tiles that divide the row
        (64, 3, 37, 37),  # the whole row is one tile (3 vectors, the last partial)
        (64, 3, 111, 48),  # no whole vectors divide 111: a masked last tile
        (32, 1, 70, 64),  # a depth or mask head: one channel
        (48, 2, 9, 9),  # a row narrower than a vector
    ],
)
def test_conv_to_few_output_channels_keeps_eight_sums(
    in_channels, out_channels, hw, expected_cols
) -> None:
    """A conv to fewer channels than a block stays NCHW; its tile holds every output channel
    and enough column vectors for 8 independent sums, in tiles that divide the row where
    whole vectors can (one 16-column vector of one channel was one chain of dependent FMAs: a
    UNet's 32 -> 3 conv at 128 x 128, 0.87 -> 0.30 ms)."""
    from nnvm.tune.task import extract_tasks

    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    x_shape = [1, in_channels, hw, hw]
    model = _model(node, x_shape, {"w": [out_channels, in_channels, 3, 3]})
    (task,) = [t for t in extract_tasks(*from_onnx(model)) if "conv2d" in t.name]
    config = task.default_config
    assert config["conv.channels"] == out_channels, config
    assert config["conv.cols"] == expected_cols, config
    _check(model, x_shape)


@pytest.mark.parametrize(
    "channels, hw, kernel, pads, dilation",
    [
        (32, 17, (1, 7), (0, 3, 0, 3), 1),  # 17 output columns
        (32, 17, (7, 1), (3, 0, 3, 0), 1),
        (16, 33, (3, 3), (2, 2, 2, 2), 2),  # 33 columns, dilated
        (16, 23, (3, 3), (6, 6, 6, 6), 6),
    ],
)
def test_conv_rows_no_tile_divides(channels, hw, kernel, pads, dilation) -> None:
    node = helper.make_node(
        "Conv", ["x", "w"], ["y"], pads=list(pads), dilations=[dilation, dilation]
    )
    x_shape = [1, channels, hw, hw]
    _check(_model(node, x_shape, {"w": [channels, channels, *kernel]}), x_shape)


@pytest.mark.parametrize(
    "out_channels, hw, stride",
    [
        (24, 17, 2),  # ShuffleNet's stem: 8-channel output blocks under a 16-wide block
        (40, 9, 1),
        (12, 8, 2),  # no block of 8 or more divides 12: left in NCHW
    ],
)
def test_stem_conv_output_channels_no_block_divides(out_channels, hw, stride) -> None:
    node = helper.make_node("Conv", ["x", "w"], ["y"], strides=[stride, stride], pads=[1] * 4)
    x_shape = [1, 3, hw, hw]
    _check(_model(node, x_shape, {"w": [out_channels, 3, 3, 3]}), x_shape)


@pytest.mark.parametrize(
    "in_channels, out_channels, hw, kernel",
    [
        (40, 40, 9, 3),  # 5 blocks of 8
        (24, 56, 7, 1),  # 7 blocks of 8
        (384, 264, 5, 1),  # 33 blocks of 8, much work per byte: the 1x1 conv runs as a matmul
    ],
)
def test_conv_odd_channel_blocks(in_channels, out_channels, hw, kernel) -> None:
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[kernel // 2] * 4)
    x_shape = [2, in_channels, hw, hw]
    w_shape = [out_channels, in_channels, kernel, kernel]
    _check(_model(node, x_shape, {"w": w_shape}), x_shape)


@pytest.mark.parametrize(
    "in_channels, out_channels, hw, kernel, stride, dilation, batch",
    [
        (2048, 32, 9, 3, 1, 1, 1),  # 2.4 MB of weights a tile
        (576, 64, 33, 3, 2, 2, 1),  # 36 blocks: a tail chunk; strided, dilated, 2-row tiles
        (2048, 256, 28, 1, 1, 1, 1),  # a 1x1: a row group's input (6 MB) read by 8 tiles
    ],
)
def test_conv_input_channels_in_chunks(
    in_channels, out_channels, hw, kernel, stride, dilation, batch
) -> None:
    """A conv whose one-pass nest would not keep its reuse in L2 runs its input channels in
    chunks, the accumulators of its rows in a buffer across them (FCN-ResNet50's head: 3x3
    over 2048 channels): the schedule says so, and the result is right, tails included."""
    from nnvm.tune.space import TaskSpace
    from nnvm.tune.task import extract_tasks

    pad = dilation * (kernel - 1) // 2
    node = helper.make_node(
        "Conv", ["x", "w"], ["y"], strides=[stride] * 2, dilations=[dilation] * 2, pads=[pad] * 4
    )
    x_shape = [batch, in_channels, hw, hw]
    model = _model(node, x_shape, {"w": [out_channels, in_channels, kernel, kernel]})
    (task,) = [t for t in extract_tasks(*from_onnx(model)) if "conv2d" in t.name]
    assert task.default_config.get("conv.depth_block", 0) > 0, task.default_config
    assert re.search(r'te.split "conv2d[.a-z]*" icb by', TaskSpace(task).default().schedule)
    _check(model, x_shape)


@pytest.mark.parametrize(
    "image, block, attrs",
    [
        ([16, 16], [2, 2], {"strides": [2, 2]}),  # MobileViTv2's patches: a transpose
        ([9, 11], [3, 3], {"pads": [1, 1, 1, 1]}),  # overlapping, summed: a transposed conv
        ([10, 9], [3, 2], {"strides": [2, 2], "dilations": [2, 1]}),  # rows no block reaches
    ],
)
def test_col2im_compiled(image, block, attrs) -> None:
    spans = [
        image[a] + sum(attrs.get("pads", [0] * 4)[a :: 2])
        - attrs.get("dilations", [1, 1])[a] * (block[a] - 1) - 1
        for a in range(2)
    ]  # fmt: skip
    strides = attrs.get("strides", [1, 1])
    length = (spans[0] // strides[0] + 1) * (spans[1] // strides[1] + 1)
    x_shape = [2, 4 * block[0] * block[1], length]
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)
    consts = {"image": np.array(image, np.int64), "block": np.array(block, np.int64)}
    _check(_model_with_consts(node, x_shape, consts, opset=18), x_shape)


@pytest.mark.parametrize("op", ["STFT", "DFT"])
def test_fourier_transforms_compiled(op) -> None:
    """STFT with a Hann window (frames by a gather, the window folded into the DFT matrix) and
    an inverse complex DFT along the middle axis (FNet's token mixing), built and run."""
    if op == "STFT":
        x_shape = [2, 400, 1]
        window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(64) / 64)
        inits = {"step": np.asarray(16, np.int64), "window": window.astype(np.float32)}
        node = helper.make_node("STFT", ["x", "step", "window"], ["y"])
    else:
        x_shape = [3, 33, 20, 2]
        inits = {"axis": np.asarray(-3, np.int64)}
        node = helper.make_node("DFT", ["x", "", "axis"], ["y"], inverse=1)
    _check(_model_with_consts(node, x_shape, inits, opset=20), x_shape)


@pytest.mark.parametrize(
    "x_shape, w_shape, attrs",
    [
        # a UNet's upsampling: four 2x2 convs over the input, interleaved
        ([1, 32, 12, 12], [32, 16, 4, 4], {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
        # 3x3, stride 2, output padding 1: phases of 1x1, 1x2, 2x1 and 2x2 taps
        ([1, 16, 9, 9], [16, 24, 3, 3], {"strides": [2, 2], "pads": [1] * 4,
                                         "output_padding": [1, 1]}),
        ([2, 16, 7, 7], [16, 16, 2, 2], {"strides": [2, 2]}),  # 2x2 stride 2: four 1x1 convs
        ([1, 16, 10], [16, 8, 4], {"strides": [2], "pads": [1, 1]}),  # 1-D
    ],
)  # fmt: skip
def test_conv_transpose_by_phases(x_shape, w_shape, attrs) -> None:
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    model = single_op(node, x_shape, {"w": w_shape, "b": [w_shape[1]]}, scale=0.1, seed=3)
    _check(model, x_shape)


def _group_norm_model(batch: int, channels: int, groups: int, hw: int):
    """Conv, then GroupNorm as torch exports it (reshape to [N, G, rest], InstanceNorm,
    reshape back, per-channel affine), then SiLU, then a conv."""
    from onnx import TensorProto, numpy_helper

    rng = np.random.default_rng(5)

    def const(name, array):
        return numpy_helper.from_array(np.asarray(array), name)

    inits = [
        const("w1", (rng.standard_normal((channels, 8, 3, 3)) * 0.2).astype(np.float32)),
        const("b1", (rng.standard_normal(channels) + 2.0).astype(np.float32)),  # a large mean
        const("grouped", np.array([batch, groups, -1], np.int64)),
        const("back", np.array([batch, channels, hw, hw], np.int64)),
        const("s", np.ones(groups, np.float32)),
        const("z", np.zeros(groups, np.float32)),
        const("gamma", rng.standard_normal((channels, 1, 1)).astype(np.float32)),
        const("beta", rng.standard_normal((channels, 1, 1)).astype(np.float32)),
        const("w2", (rng.standard_normal((16, channels, 3, 3)) * 0.2).astype(np.float32)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1] * 4),
        helper.make_node("Reshape", ["c", "grouped"], ["r"]),
        helper.make_node("InstanceNormalization", ["r", "s", "z"], ["n"], epsilon=1e-5),
        helper.make_node("Reshape", ["n", "back"], ["u"]),
        helper.make_node("Mul", ["u", "gamma"], ["g"]),
        helper.make_node("Add", ["g", "beta"], ["a"]),
        helper.make_node("Sigmoid", ["a"], ["sg"]),
        helper.make_node("Mul", ["a", "sg"], ["silu"]),
        helper.make_node("Conv", ["silu", "w2"], ["y"], pads=[1] * 4),
    ]
    graph = helper.make_graph(
        nodes,
        "group_norm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 8, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize(
    "batch, channels, groups, hw",
    [(1, 32, 8, 12), (2, 64, 32, 6), (1, 24, 6, 7)],  # groups inside blocks, 2-channel groups,
)  # channels padded to whole blocks
def test_group_norm_stays_in_blocked_layout(batch, channels, groups, hw) -> None:
    """GroupNorm's statistics per channel, combined per group, the activation blocked."""
    _check(_group_norm_model(batch, channels, groups, hw), [batch, 8, hw, hw])


@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_decode_head_upsamples_blocked(mode) -> None:
    """A decode head (SegFormer / FPN): a small map upsampled x4 and a large one, concat along
    C, a 1x1 conv; the transform into the conv's layout moves above the concat and the resize.
    Channels a block does not divide (24) keep it below."""
    from onnx import TensorProto, numpy_helper

    rng = np.random.default_rng(6)
    for lo_c, hi_c in ((32, 16), (24, 16)):
        inits = [
            numpy_helper.from_array(np.array([1, 1, 4, 4], np.float32), "scales"),
            numpy_helper.from_array(
                (rng.standard_normal((16, lo_c + hi_c, 1, 1)) * 0.2).astype(np.float32), "w"
            ),
        ]
        nodes = [
            helper.make_node("Resize", ["lo", "", "scales"], ["up"], mode=mode),
            helper.make_node("Concat", ["up", "hi"], ["c"], axis=1),
            helper.make_node("Conv", ["c", "w"], ["y"]),
        ]
        graph = helper.make_graph(
            nodes,
            "head",
            [
                helper.make_tensor_value_info("lo", TensorProto.FLOAT, [1, lo_c, 5, 5]),
                helper.make_tensor_value_info("hi", TensorProto.FLOAT, [1, hi_c, 20, 20]),
            ],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            inits,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        feeds = {
            "lo": rng.standard_normal((1, lo_c, 5, 5)).astype(np.float32),
            "hi": rng.standard_normal((1, hi_c, 20, 20)).astype(np.float32),
        }
        module, params = from_onnx(model)
        graph_, lib, p = build(module, params=params)
        m = graph_runtime.create(graph_, lib, nnvm.cpu(0))
        m.set_input(**p)
        m.run(**feeds)
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        want = session.run(None, feeds)[0]
        np.testing.assert_allclose(m.get_output(0), want, rtol=1e-3, atol=1e-4)


SHARED_LAYERS = 4
SHARED_HIDDEN = 64


def _shared_layers(rows: int):
    """SHARED_LAYERS times x = tanh(x @ W^T + b), one W and b, each layer transposing W."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((SHARED_HIDDEN, SHARED_HIDDEN)) / np.sqrt(SHARED_HIDDEN)).astype(
        np.float32
    )
    b = rng.standard_normal(SHARED_HIDDEN).astype(np.float32) * 0.1
    nodes, x = [], "x"
    for k in range(SHARED_LAYERS):
        nodes += [
            helper.make_node("Transpose", ["w"], [f"wt{k}"], perm=[1, 0]),
            helper.make_node("MatMul", [x, f"wt{k}"], [f"m{k}"]),
            helper.make_node("Add", [f"m{k}", "b"], [f"a{k}"]),
            helper.make_node("Tanh", [f"a{k}"], [f"h{k}"]),
        ]
        x = f"h{k}"
    graph = helper.make_graph(
        nodes,
        "shared",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, SHARED_HIDDEN])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [rows, SHARED_HIDDEN])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("rows", [1, 16])  # a GEMV's packed panels; a matmul's
def test_weight_shared_by_layers_is_one_param(rows) -> None:
    """torch exports each layer's use of a shared linear weight (ALBERT's encoder, tied
    embeddings) as its own Transpose of the one initializer; folded and packed per use, an
    ALBERT export built 4.8 GB of params from 0.8 GB and the bench ran out of 24 GiB. The
    importer's folds and fold-constants compute the same thing once."""
    model = _shared_layers(rows)
    module, params = from_onnx(model)
    size = SHARED_HIDDEN * SHARED_HIDDEN
    assert len([v for v in params.values() if v.size == size]) == 1, sorted(params)
    _, _, built = build(module, params=params)
    assert len([v for v in built.values() if v.size >= size]) == 1, sorted(built)
    _check(model, [rows, SHARED_HIDDEN])


@pytest.mark.parametrize(
    "op, hidden, attrs",
    [
        ("GRU", 64, {"linear_before_reset": 1}),
        ("GRU", 32, {"direction": "bidirectional"}),
        ("LSTM", 32, {}),  # 4H = 128: R in four 32-wide column panels
        ("LSTM", 24, {"direction": "bidirectional"}),  # 96 columns: no panels
    ],
)
def test_recurrent_layers_with_constant_weights(op, hidden, attrs) -> None:
    """Constant W and R are moved to [dirs, K, gates] (weights_kn; an LSTM's R into column
    panels where its steps are GEMVs over whole panels): the input projection is one product
    for every step and each step's products by R are matmul tiles."""
    gates = 3 if op == "GRU" else 4
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    seq, inp = 7, 20
    rng = np.random.default_rng(5)
    scale = hidden**-0.5
    consts = {
        "W": rng.uniform(-scale, scale, (dirs, gates * hidden, inp)).astype(np.float32),
        "R": rng.uniform(-scale, scale, (dirs, gates * hidden, hidden)).astype(np.float32),
        "B": rng.uniform(-scale, scale, (dirs, 2 * gates * hidden)).astype(np.float32),
    }
    node = helper.make_node(op, ["x", "W", "R", "B"], ["y"], hidden_size=hidden, **attrs)
    _check(_model_with_consts(node, [seq, 1, inp], consts, 17), [seq, 1, inp])


@pytest.mark.parametrize(
    "starts, ends, axes, steps",
    [
        ([2, 1], [30, 31], [2, 3], [1, 1]),  # an atrous branch's crop (prune-conv-taps' kind)
        ([1, 0], [32, 29], [2, -1], [2, 3]),  # strided, a negative axis
        ([16, 3], [48, 20], [1, 2], [1, 1]),  # whole channel blocks and rows
        ([4], [36], [1], [1]),  # channels inside blocks: stays NCHW
    ],
)
def test_crops_of_a_blocked_map(starts, ends, axes, steps) -> None:
    """A conv, a Slice of its output, a conv of the crop: the crop slices the blocked map
    (alter-layout's SinkThroughSlice) unless it cuts inside a channel block."""
    consts = {
        "w1": np.random.default_rng(1).standard_normal((64, 16, 3, 3)).astype(np.float32) * 0.1,
        "starts": np.array(starts, np.int64),
        "ends": np.array(ends, np.int64),
        "axes": np.array(axes, np.int64),
        "steps": np.array(steps, np.int64),
    }
    sliced = 32 if 1 in axes else 64
    consts["w2"] = np.random.default_rng(2).standard_normal((16, sliced, 1, 1)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["y"], pads=[1, 1, 1, 1]),
        helper.make_node("Slice", ["y", "starts", "ends", "axes", "steps"], ["s"]),
        helper.make_node("Conv", ["s", "w2"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "crops",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 32, 32])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    _check(model, [1, 16, 32, 32])
