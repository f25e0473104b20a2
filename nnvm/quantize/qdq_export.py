"""The quantized graph as an ONNX QDQ model, so onnxruntime runs the same int8 model as we do.

From the float ONNX model, the prepared nnvm graph and the Calibration that quantize() made:
each quantized MatMul gets QuantizeLinear/DequantizeLinear pairs at the scales quantize-int8
uses (per-tensor symmetric activations, zero point 0), its int8 per-column weights with their
scales, and a Q/DQ pair at its output unless that is a graph result (as the pass skips the int8
rounding there). onnxruntime fuses DQ-MatMul-Q into its int8 kernels. The anchors of the
prepared graph are matched to the ONNX MatMul nodes in order, and each pair must agree in its
operand shapes. Conv and Gemm anchors are not exported yet (a UserError says so).
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


def _matched(model: onnx.ModelProto, anchors: list[Anchor]) -> list[tuple[int, Anchor]]:
    """The position of each anchor's ONNX MatMul node, checked by the shapes of their operands."""
    others = [a.key for a in anchors if not a.key.startswith(("dense:", "matmul:"))]
    if others:
        raise UserError(f"QDQ export handles dense and matmul anchors only; not {others[:3]}")
    where = [i for i, n in enumerate(model.graph.node) if n.op_type == "MatMul"]
    if len(where) != len(anchors):
        raise UserError(
            f"QDQ export: {len(anchors)} quantized anchors but {len(where)} ONNX MatMul nodes "
            "(Gemm and fused forms are not matched)"
        )
    shapes = _shapes(model)
    inits = {t.name for t in model.graph.initializer}
    for i, a in zip(where, anchors, strict=True):
        node = model.graph.node[i]
        x = shapes.get(node.input[0])
        ours = shape_of(a.op.operands[0])
        known = x is not None and all(d > 0 for d in x)
        constant = node.input[1] in inits
        if constant != (a.weight is not None) or (
            known and (int(np.prod(x)) != int(np.prod(ours)) or x[-1] != ours[-1])
        ):
            raise UserError(f"QDQ export: {a.key} {ours} does not match {node.name} {x}")
        if a.bias is not None:
            raise UserError(f"QDQ export: {a.key} has a folded bias (not exported yet)")
    return list(zip(where, anchors, strict=True))


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

    renames: dict[str, str] = {}
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
            w = constant_value(a.weight, store)  # dense: [N, K]
            ws = rq.weight_scales(w, a.weight_axis, False)
            wq = rq.quantize_weight(w, ws, a.weight_axis)
            wname, sname = f"qdq.{tag}.weight", f"qdq.{tag}.weight_scale"
            inits.append(numpy_helper.from_array(np.ascontiguousarray(wq.T), wname))
            inits.append(numpy_helper.from_array(ws.astype(np.float32), sname))
            zeros = f"qdq.{tag}.weight_zero"
            inits.append(numpy_helper.from_array(np.zeros(len(ws), np.int8), zeros))
            pre.append(
                helper.make_node("DequantizeLinear", [wname, sname, zeros], [f"{tag}.w.dq"], axis=1)
            )
            ins.append(f"{tag}.w.dq")
        y = node.output[0]
        node.input[:] = ins
        if not _is_graph_result(a.output):
            raw = f"{tag}.out.raw"
            node.output[0] = raw
            s = rq.activation_scale(calibration.range_of(f"{a.key}/out", method), False)
            renames[qdq(raw, s, f"{tag}.out", post, False)] = y
        inserted[i] = [*pre, node, *post]
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
