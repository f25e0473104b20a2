"""lower-te-to-loops (alias lower-te-to-affine): apply each te kernel's schedule and emit its loop nests over memrefs.

Every function holding te ops becomes a kernel with the kernel ABI's shape: one memref argument
per input, then one per output, no results (`func.func @k(%in0: memref<..>, %out0: memref<..>)`).
Calls to it in graph functions are rewritten in destination-passing style, bridging tensors and
memrefs with `bufferization.to_buffer` / `to_tensor` and a `memref.alloc` per output, for
plan-memory and the entry point to take over.

An illegal schedule is a diagnostic at the primitive that makes it illegal.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import bufferization, func, memref
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from nnvm.dialects.te.analysis import is_te_kernel
from nnvm.dialects.te.stages import ScheduleState
from nnvm.lowering.te_to_loops.kernel import ALIGNMENT, NATIVE_BITS, KernelGenerator, memref_of
from nnvm.support.target import Target, parse_target


def _is_empty(t: Attribute) -> bool:
    return isinstance(t, TensorType) and 0 in t.get_shape()


def lower_empty_kernel(fn: func.FuncOp) -> None:
    """A kernel whose every output has no elements computes nothing: just the ABI signature."""
    in_types = [memref_of(t) for t in fn.function_type.inputs.data]
    out_types = [memref_of(t) for t in fn.function_type.outputs.data]
    block = Block(arg_types=[*in_types, *out_types])
    block.add_op(func.ReturnOp())
    old = fn.body.block
    fn.body.detach_block(old)
    for op in reversed(list(old.ops)):
        op.drop_all_references()
    fn.body.add_block(block)
    fn.function_type = func.FunctionType.from_lists([*in_types, *out_types], [])
    fn.arg_attrs = None
    fn.res_attrs = None


def lower_kernel(fn: func.FuncOp, module: ModuleOp, target: Target) -> None:
    if all(_is_empty(t) for t in fn.function_type.outputs.data):
        lower_empty_kernel(fn)
        return
    state = ScheduleState(fn)
    state.apply_all()
    target.check_schedule(state)
    bits = target.vector_bits or NATIVE_BITS
    KernelGenerator(
        state, module, bits, target.tensor_intrinsics(), target.lane_permutes()
    ).generate()


@dataclass(frozen=True)
class LowerTEToLoops(ModulePass):
    """te kernels -> scf/memref/arith/math/vector loop nests (the kernel ABI)."""

    name = "lower-te-to-loops"

    target: str | Target | None = None
    """The target (object, or target string): its vector width steps long vectorized loops,
    and it decides which schedule primitives are legal. Default: the host CPU."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = parse_target(self.target)
        converted: dict[str, int] = {}
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and not fn.is_declaration and is_te_kernel(fn):
                n_inputs = len(fn.function_type.inputs.data)
                lower_kernel(fn, op, target)
                converted[fn.sym_name.data] = n_inputs
        if converted:
            rewrite_calls(op, converted)


def rewrite_calls(module: ModuleOp, converted: dict[str, int]) -> None:
    """`%r = call @k(%x)` -> `%b = to_buffer %x; %o = alloc; call @k(%b, %o); %r = to_tensor %o`."""
    for call in [o for o in module.walk() if isinstance(o, func.CallOp)]:
        callee = call.callee.root_reference.data
        if callee not in converted:
            continue
        new_ops: list[Operation] = []
        args = []
        for v in call.arguments:
            if isinstance(v.type, TensorType):
                conv = bufferization.ToBufferOp.create(
                    operands=[v], result_types=[memref_of(v.type)]
                )
                new_ops.append(conv)
                args.append(conv.results[0])
            else:
                args.append(v)
        outs = []
        for r in call.results:
            alloc = memref.AllocOp.get(r.type.element_type, ALIGNMENT, r.type.get_shape())  # type: ignore[attr-defined]
            new_ops.append(alloc)
            outs.append(alloc.results[0])
        new_ops.append(func.CallOp(call.callee, [*args, *outs], []))
        tensors = []
        for o in outs:
            t = bufferization.ToTensorOp(o, restrict=True)
            new_ops.append(t)
            tensors.append(t.results[0])
        Rewriter.insert_op(new_ops, InsertPoint.before(call))
        for r, t in zip(call.results, tensors, strict=True):
            r.replace_all_uses_with(t)
        Rewriter.erase_op(call)


@dataclass(frozen=True)
class LowerTEToAffine(LowerTEToLoops):
    """Old name of lower-te-to-loops (it never emitted affine)."""

    name = "lower-te-to-affine"
