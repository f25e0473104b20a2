"""Control flow whose decisions are known at import: If with a known condition imports the
taken branch inline; Loop with a known trip count/condition is unrolled. The graph dialect has
no control flow, and shape-static graphs (what exporters emit for fixed input shapes) rarely
need it at run time."""

from __future__ import annotations

import numpy as np

from nnvm.frontend.onnx.builder import Known, Unsupported, Value
from nnvm.frontend.onnx.registry import NodeContext, converter

#: Unrolling bound: a loop longer than this is reported instead of bloating the graph.
MAX_UNROLL = 1024


@converter("If", attrs=("then_branch", "else_branch"))
def _if(ctx: NodeContext) -> list[Value | None]:
    cond = ctx.const(0, "cond")
    branch = (
        ctx.attr("then_branch")
        if bool(np.asarray(cond).reshape(-1)[0])
        else ctx.attr("else_branch")
    )
    return list(ctx.subgraph(branch, {}))


def _stack(ctx: NodeContext, values: list[Value]) -> Value:
    rows = [ctx.emit("nnvm.expand_dims", v, axes=[0]) for v in values]
    return rows[0] if len(rows) == 1 else ctx.emit("nnvm.concat", *rows, axis=0)


@converter("Loop", attrs=("body",))
def _loop(ctx: NodeContext) -> list[Value | None]:
    body = ctx.attr("body")
    trip = ctx.const(0, "M")
    cond_v = ctx.const(1, "cond")
    trips = None if trip is None else int(np.asarray(trip).reshape(-1)[0])
    cond = True if cond_v is None else bool(np.asarray(cond_v).reshape(-1)[0])
    if trips is None and cond_v is None:
        raise Unsupported("a loop with neither a trip count nor a condition never ends")
    carried: list[Value] = [v for v in ctx.inputs[2:] if v is not None]
    if len(carried) != len(ctx.inputs) - 2:
        raise Unsupported("omitted loop-carried inputs are not supported")
    names = [i.name for i in body.input]
    n_scan = len(body.output) - 1 - len(carried)
    scans: list[list[Value]] = [[] for _ in range(n_scan)]
    step = 0
    while cond and (trips is None or step < trips):
        if step >= MAX_UNROLL:
            raise Unsupported(f"loops of more than {MAX_UNROLL} iterations are not unrolled")
        bindings: dict[str, Value] = {
            names[0]: Known(np.asarray(step, np.int64), f"{ctx.output_name(0)}.iter"),
            names[1]: Known(np.asarray(cond), f"{ctx.output_name(0)}.cond"),
        }
        bindings.update(zip(names[2:], carried, strict=True))
        outs = ctx.subgraph(body, bindings)
        next_cond = outs[0]
        if not isinstance(next_cond, Known):
            raise Unsupported("the loop condition depends on run-time values")
        cond = bool(np.asarray(next_cond.array).reshape(-1)[0])
        carried = outs[1 : 1 + len(carried)]
        for k, v in enumerate(outs[1 + len(carried) :]):
            scans[k].append(v)
        step += 1
    if n_scan and step == 0:
        raise Unsupported("a loop that runs zero times has scan outputs of unknown shape")
    return [*carried, *(_stack(ctx, s) for s in scans)]
