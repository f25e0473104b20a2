"""The quantized graph as an ONNX QDQ model, so onnxruntime runs the same int8 model as we do.

From the float ONNX model, the prepared nnvm graph and the Calibration that quantize() made:
each quantized Conv, Gemm or MatMul gets QuantizeLinear/DequantizeLinear pairs at the scales
quantize-int8 uses (per-tensor symmetric activations, zero point 0), its int8 per-channel
weights with their scales, its bias as int32 in accumulator units (DequantizeLinear at
x_scale * w_scale[c]), and a Q/DQ pair at its output unless that is a graph result (as the
pass skips the int8 rounding there). A BatchNormalization that alone follows a Conv is
dropped: prepare() folded it into the conv's weights and bias, which are what is exported.
onnxruntime fuses DQ-op-Q into its int8 kernels (QLinearConv, QGemm, QLinearMatMul). The
anchors of the prepared graph are matched to the ONNX nodes of their kind in order, and each
pair must agree in its operand shapes.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference
from xdsl.dialects.builtin import ModuleOp

from nnvm.dialects.nnvm.base import shape_of
from nnvm.passes import quantize_requant as rq
from nnvm.passes.quantize_calibration import Anchor, Calibration, find_anchors
from nnvm.passes.quantize_int8 import _is_graph_result, constant_value
from nnvm.support.errors import UserError
from nnvm.support.param_store import params_of


def _shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    inferred = shape_inference.infer_shapes(model)
    g = inferred.graph
    out = {i.name: list(i.dims) for i in g.initializer}
    for vi in [*g.input, *g.value_info, *g.output]:
        out[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    return out


def _copy(node: onnx.NodeProto) -> onnx.NodeProto:
    out = onnx.NodeProto()
    out.CopyFrom(node)
    return out


ANCHOR_NODES = {"conv2d": ("Conv",), "dense": ("MatMul", "Gemm"), "matmul": ("MatMul", "Gemm")}
"""The ONNX nodes an anchor of each kind comes from."""


def _matched(model: onnx.ModelProto, anchors: list[Anchor]) -> list[tuple[int, Anchor]]:
    """The position of each anchor's ONNX node (a Conv for conv2d, a MatMul or Gemm for dense
    and matmul; each kind in order), checked by the shapes of their operands."""
    shapes = _shapes(model)
    inits = {t.name for t in model.graph.initializer}
    pairs = []
    for ops in dict.fromkeys(ANCHOR_NODES.values()):
        kinds = "/".join(k for k, v in ANCHOR_NODES.items() if v == ops)
        mine = [a for a in anchors if ANCHOR_NODES[a.key.split(":")[0]] == ops]
        where = [i for i, n in enumerate(model.graph.node) if n.op_type in ops]
        if len(where) != len(mine):
            raise UserError(
                f"QDQ export: {len(mine)} quantized {kinds} anchors but {len(where)} ONNX "
                f"{'/'.join(ops)} nodes"
            )
        for i, a in zip(where, mine, strict=True):
            node = model.graph.node[i]
            x = shapes.get(node.input[0])
            ours = shape_of(a.op.operands[0])
            known = x is not None and len(x) > 0 and all(d > 0 for d in x)
            constant = node.input[1] in inits
            if constant != (a.weight is not None) or (
                known and (int(np.prod(x)) != int(np.prod(ours)) or x[-1] != ours[-1])
            ):
                raise UserError(f"QDQ export: {a.key} {ours} does not match {node.name} {x}")
            if node.op_type == "Gemm":
                attrs = {at.name: helper.get_attribute_value(at) for at in node.attribute}
                if attrs.get("transA", 0) or attrs.get("alpha", 1.0) != 1.0:
                    raise UserError(f"QDQ export: Gemm {node.name} with transA or alpha")
                if attrs.get("beta", 1.0) != 1.0:
                    raise UserError(f"QDQ export: Gemm {node.name} with beta != 1")
            pairs.append((i, a))
    order = {id(a): k for k, a in enumerate(anchors)}
    return sorted(pairs, key=lambda p: order[id(p[1])])


def _folded_norm(model: onnx.ModelProto, node: onnx.NodeProto) -> int | None:
    """The index of the BatchNormalization that alone reads a Conv's output (prepare() folded
    it into the conv's weights and bias), if any."""
    out = node.output[0]
    readers = [i for i, n in enumerate(model.graph.node) if out in n.input]
    if len(readers) == 1 and model.graph.node[readers[0]].op_type == "BatchNormalization":
        return readers[0]
    return None


def qdq_model(
    model: onnx.ModelProto,
    prepared: ModuleOp,
    calibration: Calibration,
    method: str = "percentile",
    skip_first: bool = True,
) -> onnx.ModelProto:
    """A copy of `model` with the Q/DQ nodes of quantize(..., requant="multiplier")."""
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if opset < 13:
        raise UserError(f"QDQ export needs opset >= 13 (per-axis DequantizeLinear), not {opset}")
    anchors = find_anchors(prepared)
    pairs = _matched(model, anchors)
    if skip_first:
        pairs = pairs[1:]
    store = params_of(prepared)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    inits: list[TensorProto] = []
    zero = "qdq.zero"
    inits.append(numpy_helper.from_array(np.array(0, np.int8), zero))
    inserted: dict[int, list[onnx.NodeProto]] = {}

    def qdq(value: str, scale: float, tag: str, before: list[onnx.NodeProto], sym: bool) -> str:
        s = f"qdq.{tag}.scale"
        inits.append(numpy_helper.from_array(np.array(scale, np.float32), s))
        if sym:  # the pass clips inputs to [-127, 127]; QuantizeLinear alone saturates at -128
            lo, hi = f"qdq.{tag}.lo", f"qdq.{tag}.hi"
            edge = np.float32(rq.QMAX * scale)
            inits.append(numpy_helper.from_array(np.array(-edge, np.float32), lo))
            inits.append(numpy_helper.from_array(np.array(edge, np.float32), hi))
            before.append(helper.make_node("Clip", [value, lo, hi], [f"{tag}.clipped"]))
            value = f"{tag}.clipped"
        before.append(helper.make_node("QuantizeLinear", [value, s, zero], [f"{tag}.q"]))
        before.append(helper.make_node("DequantizeLinear", [f"{tag}.q", s, zero], [f"{tag}.dq"]))
        return f"{tag}.dq"

    def per_channel(
        values: np.ndarray, scales: np.ndarray, name: str, axis: int, before: list
    ) -> str:
        """An integer initializer dequantized per channel along `axis` (zero points 0)."""
        q, s, z = f"qdq.{name}", f"qdq.{name}_scale", f"qdq.{name}_zero"
        inits.append(numpy_helper.from_array(values, q))
        inits.append(numpy_helper.from_array(scales.astype(np.float32), s))
        inits.append(numpy_helper.from_array(np.zeros(len(scales), values.dtype), z))
        before.append(helper.make_node("DequantizeLinear", [q, s, z], [f"{name}.dq"], axis=axis))
        return f"{name}.dq"

    renames: dict[str, str] = {}
    dropped: set[int] = set()
    for i, a in pairs:
        node = g.node[i]
        tag = a.key.replace(":", "")
        pre: list[onnx.NodeProto] = []
        post: list[onnx.NodeProto] = []
        scales = [
            rq.activation_scale(calibration.range_of(f"{a.key}/in{k}", method), False)
            for k in range(len(a.activations))
        ]
        ins = [qdq(node.input[k], s, f"{tag}.in{k}", pre, True) for k, s in enumerate(scales)]
        if a.weight is not None:
            w = constant_value(a.weight, store)  # dense: [N, K]; conv2d: [O, I, KH, KW]
            ws = rq.weight_scales(w, a.weight_axis, False)
            wq, axis = rq.quantize_weight(w, ws, a.weight_axis), 0
            if node.op_type == "MatMul" or (
                node.op_type == "Gemm"
                and not any(at.name == "transB" and at.i for at in node.attribute)
            ):
                wq, axis = np.ascontiguousarray(wq.T), 1  # [K, N]
            ins.append(per_channel(wq, ws, f"{tag}.weight", axis, pre))
            if a.bias is not None:  # int32 in accumulator units, as quantize-int8 adds it
                if node.op_type == "MatMul":
                    raise UserError(f"QDQ export: {a.key} has a folded bias (MatMul has none)")
                b = constant_value(a.bias, store).astype(np.float64).reshape(-1)
                b = np.broadcast_to(b, ws.shape) if b.size == 1 else b
                bq = rq.quantize_bias(b, scales[0], ws)
                ins.append(per_channel(bq, scales[0] * ws, f"{tag}.bias", 0, pre))
        elif a.bias is not None:
            raise UserError(f"QDQ export: {a.key} has a bias but no constant weight")
        y = node.output[0]
        if node.op_type == "Conv":
            norm = _folded_norm(model, node)
            if norm is not None:  # its scale and shift are in the exported weight and bias
                y = g.node[norm].output[0]
                dropped.add(norm)
        node.input[:] = ins
        node.output[0] = y
        if not _is_graph_result(a.output):
            raw = f"{tag}.out.raw"
            node.output[0] = raw
            s = rq.activation_scale(calibration.range_of(f"{a.key}/out", method), False)
            renames[qdq(raw, s, f"{tag}.out", post, False)] = y
        inserted[i] = [*pre, node, *post]
    for k in dropped:
        inserted[k] = []
    nodes = [_copy(n) for i, old in enumerate(g.node) for n in inserted.get(i, [old])]
    for n in nodes:  # the output's DQ writes the MatMul's old name, so readers need no edit
        n.output[:] = [renames.get(o, o) for o in n.output]
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(inits)
    used = {i for n in nodes for i in n.input}
    kept = [t for t in g.initializer if t.name in used or t.name in {o.name for o in g.output}]
    del g.initializer[:]
    g.initializer.extend(kept)
    onnx.checker.check_model(out)
    return out
