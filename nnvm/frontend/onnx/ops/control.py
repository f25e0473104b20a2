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


@converter("Loop", attrs=("body",))
def _loop(ctx: NodeContext) -> list[Value | None]:
    body = ctx.attr("body")
    trips = ctx.int_const(0, "M")
    cond_v = ctx.const(1, "cond")
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
    return [*carried, *(_stack_on(ctx, s, 0) for s in scans)]


def _stack_on(ctx: NodeContext, values: list[Value], axis: int) -> Value:
    rows = [ctx.emit("nnvm.expand_dims", v, axes=[axis]) for v in values]
    return rows[0] if len(rows) == 1 else ctx.emit("nnvm.concat", *rows, axis=axis)


def _axes(ctx: NodeContext, name: str, count: int) -> list[int]:
    given = ctx.attr(name)
    values = [0] * count if given is None else [int(a) for a in given]
    if len(values) != count:
        raise Unsupported(f"{name} has {len(values)} entries for {count} values")
    return values


@converter(
    "Scan",
    attrs=(
        "body", "num_scan_inputs", "scan_input_axes", "scan_input_directions",
        "scan_output_axes", "scan_output_directions",
    ),
    since=9,
)  # fmt: skip
def _scan(ctx: NodeContext) -> list[Value | None]:
    """Unrolled over the (static) sequence length: each step slices the scan inputs, runs the
    body on the states and the slices, and the per-step scan outputs are stacked."""
    body = ctx.attr("body")
    m = int(ctx.attr("num_scan_inputs"))
    inputs = [ctx.required(k) for k in range(len(ctx.inputs))]
    n = len(inputs) - m
    if n < 0:
        raise Unsupported(f"num_scan_inputs = {m} exceeds the {len(inputs)} inputs")
    states, xs = inputs[:n], inputs[n:]
    k_out = len(body.output) - n
    in_axes = [a % ctx.rank(x) for a, x in zip(_axes(ctx, "scan_input_axes", m), xs, strict=True)]
    in_dirs = _axes(ctx, "scan_input_directions", m)
    out_dirs = _axes(ctx, "scan_output_directions", k_out)
    lengths = {ctx.shape(x)[a] for x, a in zip(xs, in_axes, strict=True)}
    if len(lengths) != 1:
        raise Unsupported(f"the scan inputs have different sequence lengths {sorted(lengths)}")
    (steps,) = lengths
    if steps == 0:
        raise Unsupported("a scan over zero steps has scan outputs of unknown shape")
    if steps > MAX_UNROLL:
        raise Unsupported(f"scans of more than {MAX_UNROLL} steps are not unrolled")
    names = [i.name for i in body.input]
    scans: list[list[Value]] = [[] for _ in range(k_out)]
    for t in range(steps):
        slices = []
        for x, axis, backward in zip(xs, in_axes, in_dirs, strict=True):
            at = steps - 1 - t if backward else t
            piece = ctx.emit("nnvm.slice", x, starts=[at], ends=[at + 1], axes=[axis], steps=[1])
            shape = [d for k, d in enumerate(ctx.shape(x)) if k != axis]
            slices.append(ctx.emit("nnvm.reshape", piece, shape=shape))
        outs = ctx.subgraph(body, dict(zip(names, [*states, *slices], strict=True)))
        states = outs[:n]
        for k, v in enumerate(outs[n:]):
            scans[k].append(v)
    results: list[Value | None] = list(states)
    out_axes = _axes(ctx, "scan_output_axes", k_out)
    for k, values in enumerate(scans):
        if out_dirs[k]:
            values = values[::-1]
        axis = out_axes[k] % (ctx.rank(values[0]) + 1)
        results.append(_stack_on(ctx, values, axis))
    return results
