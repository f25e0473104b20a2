"""Seeded ONNX model builders (onnx.helper only): the models the tests, benchmarks and the README
demo share. Defaults are small (fast tests); the parameters reach the full-size variants:

    resnet_like(image=224, width=64, stages=(2, 2, 2, 2), num_classes=1000)     # ResNet-18
    mobilenet_like(image=224, width_mult=1.0, blocks=MOBILENET_V2_BLOCKS,
                   last_channels=1280, num_classes=1000)                        # MobileNetV2
    transformer_encoder(layers=2, seq=128, hidden=256, heads=4, ffn=1024)       # "bert2"
    lstm_model(seq=32, input_size=128, hidden=256)
    mlp(sizes=(784, 512, 512, 10))
    grouped_block(width=48, group=8, stride=2)                                  # RegNetY-like

Weights are initializers drawn from numpy's default_rng(seed), scaled so activations stay O(1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17  # LayerNormalization needs 17


class _Graph:
    """A small accumulator of nodes and initializers with unique names."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"

    def init(self, name: str, array: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, name: str, shape: Sequence[int], fan_in: int) -> str:
        scale = math.sqrt(2.0 / max(fan_in, 1))
        return self.init(name, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def vector(self, name: str, n: int, scale: float = 0.1, offset: float = 0.0) -> str:
        return self.init(name, (offset + self.rng.standard_normal(n) * scale).astype(np.float32))

    def op(self, op_type: str, inputs: Sequence[str], n_out: int = 1, **attrs: object) -> list[str]:
        name = self.name(op_type.lower())
        outputs = [f"{name}_out{k}" if n_out > 1 else f"{name}_out" for k in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outputs, name=name, **attrs))
        return outputs

    def op1(self, op_type: str, inputs: Sequence[str], **attrs: object) -> str:
        return self.op(op_type, inputs, 1, **attrs)[0]

    def model(
        self,
        name: str,
        inputs: Sequence[tuple[str, Sequence[int | str]]],
        outputs: Sequence[tuple[str, str, Sequence[int | str]]],
    ) -> onnx.ModelProto:
        """Rename the last producers to the declared output names and wrap everything up."""
        graph_outputs = []
        for value, out_name, shape in outputs:
            self.nodes.append(
                helper.make_node("Identity", [value], [out_name], name=f"{out_name}_id")
            )
            graph_outputs.append(
                helper.make_tensor_value_info(out_name, TensorProto.FLOAT, list(shape))
            )
        graph = helper.make_graph(
            self.nodes,
            name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs],
            graph_outputs,
            self.inits,
        )
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="nnvm.testing"
        )
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


# -- CNN pieces ----------------------------------------------------------------------------------


def _conv_bn(g: _Graph, x: str, c_in: int, c_out: int, k: int, stride: int, groups: int = 1) -> str:
    """Conv (no bias, as exporters emit before BN) + BatchNormalization with real statistics."""
    base = g.name("conv")
    w = g.weight(f"{base}.weight", [c_out, c_in // groups, k, k], (c_in // groups) * k * k)
    pad = k // 2
    y = g.op1(
        "Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, group=groups
    )
    gamma = g.vector(f"{base}.bn.weight", c_out, 0.1, 1.0)
    beta = g.vector(f"{base}.bn.bias", c_out, 0.1)
    mean = g.vector(f"{base}.bn.running_mean", c_out, 0.1)
    var = g.init(f"{base}.bn.running_var", (1.0 + 0.2 * g.rng.random(c_out)).astype(np.float32))
    return g.op1("BatchNormalization", [y, gamma, beta, mean, var], epsilon=1e-5)


def _relu6(g: _Graph, x: str) -> str:
    lo = g.init(g.name("relu6_min"), np.array(0.0, np.float32))
    hi = g.init(g.name("relu6_max"), np.array(6.0, np.float32))
    return g.op1("Clip", [x, lo, hi])


def _classifier(g: _Graph, x: str, channels: int, num_classes: int) -> str:
    pooled = g.op1("GlobalAveragePool", [x])
    flat = g.op1("Flatten", [pooled], axis=1)
    w = g.weight("fc.weight", [num_classes, channels], channels)
    b = g.vector("fc.bias", num_classes)
    return g.op1("Gemm", [flat, w, b], transB=1)


def resnet_like(
    batch: int = 1,
    image: int = 32,
    width: int = 8,
    stages: Sequence[int] = (1, 1),
    num_classes: int = 10,
    seed: int = 0,
) -> onnx.ModelProto:
    """ResNet with basic blocks: Conv+BN+Relu stem, MaxPool, residual Adds, GAP, Gemm.

    `resnet_like(image=224, width=64, stages=(2, 2, 2, 2), num_classes=1000)` is ResNet-18."""
    g = _Graph(seed)
    x = g.op1("Relu", [_conv_bn(g, "input", 3, width, 7, 2)])
    x = g.op1("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c_in = width
    for s, blocks in enumerate(stages):
        c_out = width * 2**s
        for b in range(blocks):
            stride = 2 if s > 0 and b == 0 else 1
            y = g.op1("Relu", [_conv_bn(g, x, c_in, c_out, 3, stride)])
            y = _conv_bn(g, y, c_out, c_out, 3, 1)
            shortcut = _conv_bn(g, x, c_in, c_out, 1, stride) if stride != 1 or c_in != c_out else x
            x = g.op1("Relu", [g.op1("Add", [y, shortcut])])
            c_in = c_out
    logits = _classifier(g, x, c_in, num_classes)
    return g.model(
        "resnet_like",
        [("input", [batch, 3, image, image])],
        [(logits, "output", [batch, num_classes])],
    )


def grouped_block(
    batch: int = 2,
    image: int = 15,
    channels: int = 24,
    width: int = 40,
    group: int = 8,
    stride: int = 1,
    seed: int = 0,
) -> onnx.ModelProto:
    """One RegNetY / ResNeXt bottleneck: 1x1 conv, a 3x3 conv in groups of `group` channels
    (stride `stride`), squeeze-excite, 1x1 conv, and a residual add over a strided 1x1
    shortcut; BN after each conv, ReLUs between.

    `grouped_block(width=48, group=8, stride=2)` is RegNetY-400MF's first block's shape class,
    `group=4` ResNeXt's first stage's."""
    g = _Graph(seed)
    y = g.op1("Relu", [_conv_bn(g, "input", channels, width, 1, 1)])
    y = g.op1("Relu", [_conv_bn(g, y, width, width, 3, stride, groups=width // group)])
    squeeze = g.op1("GlobalAveragePool", [y])
    reduced = max(width // 4, 1)
    w1 = g.weight(g.name("se.w1"), [reduced, width, 1, 1], width)
    s = g.op1("Relu", [g.op1("Conv", [squeeze, w1, g.vector(g.name("se.b1"), reduced)])])
    w2 = g.weight(g.name("se.w2"), [width, reduced, 1, 1], reduced)
    s = g.op1("Sigmoid", [g.op1("Conv", [s, w2, g.vector(g.name("se.b2"), width)])])
    y = _conv_bn(g, g.op1("Mul", [y, s]), width, channels, 1, 1)
    shortcut = _conv_bn(g, "input", channels, channels, 1, stride)
    out = g.op1("Relu", [g.op1("Add", [y, shortcut])])
    side = (image - 1) // stride + 1
    return g.model(
        "grouped_block",
        [("input", [batch, channels, image, image])],
        [(out, "output", [batch, channels, side, side])],
    )


#: MobileNetV2's inverted-residual settings: (expansion t, channels c, repeats n, stride s).
MOBILENET_V2_BLOCKS: tuple[tuple[int, int, int, int], ...] = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)

SMALL_MOBILENET_BLOCKS: tuple[tuple[int, int, int, int], ...] = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 1, 2),
)


def _make_divisible(v: float, divisor: int = 8) -> int:
    out = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return out + divisor if out < 0.9 * v else out


def mobilenet_like(
    batch: int = 1,
    image: int = 32,
    width_mult: float = 0.5,
    blocks: Sequence[tuple[int, int, int, int]] = SMALL_MOBILENET_BLOCKS,
    last_channels: int = 64,
    num_classes: int = 10,
    seed: int = 0,
) -> onnx.ModelProto:
    """MobileNetV2: inverted residuals with depthwise (group = channels) convolutions and
    Clip(0, 6) as ReLU6. See the module docstring for the full-size arguments."""
    g = _Graph(seed)
    c_in = _make_divisible(32 * width_mult)
    x = _relu6(g, _conv_bn(g, "input", 3, c_in, 3, 2))
    for t, c, n, s in blocks:
        c_out = _make_divisible(c * width_mult)
        for k in range(n):
            stride = s if k == 0 else 1
            hidden = c_in * t
            y = x
            if t != 1:
                y = _relu6(g, _conv_bn(g, y, c_in, hidden, 1, 1))
            y = _relu6(g, _conv_bn(g, y, hidden, hidden, 3, stride, groups=hidden))
            y = _conv_bn(g, y, hidden, c_out, 1, 1)
            x = g.op1("Add", [x, y]) if stride == 1 and c_in == c_out else y
            c_in = c_out
    last = _make_divisible(last_channels * max(1.0, width_mult))
    x = _relu6(g, _conv_bn(g, x, c_in, last, 1, 1))
    logits = _classifier(g, x, last, num_classes)
    return g.model(
        "mobilenet_like",
        [("input", [batch, 3, image, image])],
        [(logits, "output", [batch, num_classes])],
    )


# -- transformer ---------------------------------------------------------------------------------


def _linear(g: _Graph, x: str, name: str, k: int, n: int) -> str:
    w = g.weight(f"{name}.weight", [k, n], k)
    b = g.vector(f"{name}.bias", n, 0.02)
    return g.op1("Add", [g.op1("MatMul", [x, w]), b])


def _dynamic_shape(g: _Graph, x: str, tail: Sequence[int]) -> str:
    """Shape(x)[0:2] ++ tail, built as exporters do (Shape -> Gather -> Unsqueeze -> Concat)."""
    shape = g.op1("Shape", [x])
    parts = []
    for axis in (0, 1):
        idx = g.init(g.name("idx"), np.array(axis, np.int64))
        dim = g.op1("Gather", [shape, idx], axis=0)
        parts.append(g.op1("Unsqueeze", [dim, g.init(g.name("axes"), np.array([0], np.int64))]))
    parts.append(g.init(g.name("tail"), np.array(list(tail), np.int64)))
    return g.op1("Concat", parts, axis=0)


def _layer_norm(g: _Graph, x: str, name: str, hidden: int) -> str:
    gamma = g.vector(f"{name}.weight", hidden, 0.1, 1.0)
    beta = g.vector(f"{name}.bias", hidden, 0.05)
    return g.op1("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-5)


def _gelu_erf(g: _Graph, x: str) -> str:
    """0.5 * x * (1 + erf(x / sqrt(2))): GELU as the torch exporter writes it."""
    sqrt2 = g.init(g.name("sqrt2"), np.array(math.sqrt(2.0), np.float32))
    one = g.init(g.name("one"), np.array(1.0, np.float32))
    half = g.init(g.name("half"), np.array(0.5, np.float32))
    erf = g.op1("Erf", [g.op1("Div", [x, sqrt2])])
    return g.op1("Mul", [g.op1("Mul", [x, g.op1("Add", [erf, one])]), half])


def transformer_encoder(
    layers: int = 2,
    batch: int = 1,
    seq: int = 16,
    hidden: int = 32,
    heads: int = 2,
    ffn: int = 64,
    seed: int = 0,
) -> onnx.ModelProto:
    """Post-norm BERT-style encoder layers: multi-head self-attention (MatMul, Reshape,
    Transpose, Softmax) and an Erf-GELU feed-forward, each with residual + LayerNormalization.
    Head reshapes go through Shape/Gather/Concat chains, as exporters emit them."""
    if hidden % heads:
        raise ValueError("hidden must be divisible by heads")
    d = hidden // heads
    g = _Graph(seed)
    x = "input"
    scale = g.init("attention.scale", np.array(1.0 / math.sqrt(d), np.float32))
    for n in range(layers):
        p = f"layer{n}"
        split_shape = _dynamic_shape(g, x, [heads, d])
        qkv = []
        for which in ("query", "key", "value"):
            y = g.op1("Reshape", [_linear(g, x, f"{p}.{which}", hidden, hidden), split_shape])
            perm = [0, 2, 3, 1] if which == "key" else [0, 2, 1, 3]
            qkv.append(g.op1("Transpose", [y], perm=perm))
        scores = g.op1("Mul", [g.op1("MatMul", [qkv[0], qkv[1]]), scale])
        probs = g.op1("Softmax", [scores], axis=-1)
        context = g.op1("Transpose", [g.op1("MatMul", [probs, qkv[2]])], perm=[0, 2, 1, 3])
        merge_shape = _dynamic_shape(g, x, [hidden])
        context = g.op1("Reshape", [context, merge_shape])
        attn = _linear(g, context, f"{p}.attention.output", hidden, hidden)
        x = _layer_norm(g, g.op1("Add", [attn, x]), f"{p}.attention.norm", hidden)
        h = _gelu_erf(g, _linear(g, x, f"{p}.ffn.up", hidden, ffn))
        h = _linear(g, h, f"{p}.ffn.down", ffn, hidden)
        x = _layer_norm(g, g.op1("Add", [h, x]), f"{p}.ffn.norm", hidden)
    return g.model(
        "transformer_encoder",
        [("input", [batch, seq, hidden])],
        [(x, "output", [batch, seq, hidden])],
    )


# -- recurrent and MLP ---------------------------------------------------------------------------


def lstm_model(
    seq: int = 8,
    batch: int = 1,
    input_size: int = 16,
    hidden: int = 32,
    num_classes: int = 10,
    seed: int = 0,
) -> onnx.ModelProto:
    """One forward LSTM layer over [seq, batch, input], then a Gemm on the last hidden state."""
    g = _Graph(seed)
    scale = 1.0 / math.sqrt(hidden)
    w = g.init(
        "lstm.W", (g.rng.uniform(-scale, scale, (1, 4 * hidden, input_size))).astype(np.float32)
    )
    r = g.init("lstm.R", (g.rng.uniform(-scale, scale, (1, 4 * hidden, hidden))).astype(np.float32))
    b = g.init("lstm.B", (g.rng.uniform(-scale, scale, (1, 8 * hidden))).astype(np.float32))
    _, y_h, _ = g.op("LSTM", ["input", w, r, b], 3, hidden_size=hidden)
    last = g.op1("Squeeze", [y_h, g.init("squeeze.axes", np.array([0], np.int64))])
    fc_w = g.weight("fc.weight", [num_classes, hidden], hidden)
    fc_b = g.vector("fc.bias", num_classes)
    logits = g.op1("Gemm", [last, fc_w, fc_b], transB=1)
    return g.model(
        "lstm_model",
        [("input", [seq, batch, input_size])],
        [(logits, "output", [batch, num_classes])],
    )


def mlp(batch: int = 1, sizes: Sequence[int] = (64, 32, 32, 10), seed: int = 0) -> onnx.ModelProto:
    """Gemm(transB) + Relu layers, as torch.nn.Linear exports; the last layer has no Relu.
    `mlp(sizes=(784, 512, 512, 10))` is the benchmark size."""
    g = _Graph(seed)
    x = "input"
    for k, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        w = g.weight(f"fc{k}.weight", [n_out, n_in], n_in)
        b = g.vector(f"fc{k}.bias", n_out)
        x = g.op1("Gemm", [x, w, b], transB=1)
        if k < len(sizes) - 2:
            x = g.op1("Relu", [x])
    return g.model("mlp", [("input", [batch, sizes[0]])], [(x, "output", [batch, sizes[-1]])])


def single_op(
    node: onnx.NodeProto,
    x_shape: Sequence[int],
    weights: dict[str, Sequence[int]],
    scale: float = 0.05,
    seed: int = 0,
    opset: int = 17,
) -> onnx.ModelProto:
    """A model of one node over float input "x" and seeded normal float weights of the given
    shapes (times `scale`), output "y" untyped (its type is inferred)."""
    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)
        for name, shape in weights.items()
    ]
    graph = helper.make_graph(
        [node],
        node.op_type.lower(),
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def random_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Standard-normal float32 inputs for every (static-shaped) graph input."""
    rng = np.random.default_rng(seed)
    initialized = {t.name for t in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in initialized:
            continue
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


MODELS = {
    "resnet_like": resnet_like,
    "mobilenet_like": mobilenet_like,
    "transformer_encoder": transformer_encoder,
    "lstm_model": lstm_model,
    "mlp": mlp,
}
