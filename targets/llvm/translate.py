"""llvm dialect -> LLVM IR (llvmlite `ir.Module`, printable as text).

Each op goes through xDSL's `xdsl.backend.llvm.convert_op.convert_op`; around it this module adds
what `xdsl.backend.llvm.convert.convert_module` lacks in 0.74: linkage of functions, alignment of
globals, fast-math flags on `llvm.call_intrinsic` and `llvm.intr.fma` (xDSL raises on both), and
a located user error, instead of a NotImplementedError, for ops that were never lowered.
"""

from __future__ import annotations

from collections.abc import Iterable

import llvmlite.ir as ir
from xdsl.backend.llvm.convert_op import convert_op, create_constant
from xdsl.backend.llvm.convert_type import convert_type
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp, StringAttr, UnrealizedConversionCastOp
from xdsl.ir import Block, Operation, SSAValue

from nnvm.support.errors import UserError

_ARG_FLAGS = {
    "llvm.noalias": "noalias",
    "llvm.nonnull": "nonnull",
    "llvm.noundef": "noundef",
    "llvm.readonly": "readonly",
    "llvm.writeonly": "writeonly",
    "llvm.nocapture": "nocapture",
}


def unlowered_ops(module: ModuleOp) -> list[Operation]:
    """Ops that are not (yet) in the llvm dialect, in program order."""
    bad: list[Operation] = []
    for op in module.walk():
        if op is module:
            continue
        if isinstance(op, UnrealizedConversionCastOp) or not op.name.startswith("llvm."):
            bad.append(op)
    return bad


def check_fully_lowered(module: ModuleOp) -> None:
    """Raise a user error naming the first ops that the CPU lowering did not convert."""
    bad = unlowered_ops(module)
    if not bad:
        return
    names = sorted({op.name for op in bad})
    first = bad[0]
    hint = ""
    if isinstance(first, UnrealizedConversionCastOp):
        types = ", ".join(str(v.type) for v in first.inputs)
        hint = f" (a value of type {types} is still used by an unconverted op)"
    raise UserError(
        "module is not fully lowered to the llvm dialect; left over: "
        + ", ".join(names)
        + hint
        + "; run -p convert-to-llvm first"
    )


def _fastmath(op: Operation) -> list[str]:
    flags = op.properties.get("fastmathFlags")
    return [f.value for f in getattr(flags, "data", ())] if flags is not None else []


def _call_intrinsic(
    op: llvm.CallIntrinsicOp, builder: ir.IRBuilder, values: dict[SSAValue, ir.Value]
) -> None:
    args = [values[a] for a in op.args]
    ret = convert_type(op.ress.type) if op.ress is not None else ir.VoidType()
    name = op.intrin.data
    module = builder.module
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, [a.type for a in args]), name=name)
    result = builder.call(fn, args, fastmath=_fastmath(op))
    if op.ress is not None:
        values[op.ress] = result


# Intrinsic ops of xDSL's llvm dialect, translated here with type-mangled names: xDSL's
# translator declares e.g. `llvm.minnum` without a suffix, so a module using it on both f32 and
# <8 x float> fails, and it drops fast-math flags on fma and vector reductions.
_INTRINSIC_OPS: dict[type[Operation], str] = {
    llvm.FAbsOp: "llvm.fabs",
    llvm.FExpOp: "llvm.exp",
    llvm.FCeilOp: "llvm.ceil",
    llvm.FSinOp: "llvm.sin",
    llvm.FCosOp: "llvm.cos",
    llvm.FFloorOp: "llvm.floor",
    llvm.FExp2Op: "llvm.exp2",
    llvm.FSqrtOp: "llvm.sqrt",
    llvm.FLogOp: "llvm.log",
    llvm.FLog2Op: "llvm.log2",
    llvm.FPowOp: "llvm.pow",
    llvm.VectorFMaxOp: "llvm.maxnum",
    llvm.VectorFMinOp: "llvm.minnum",
    llvm.FCopySignOp: "llvm.copysign",
    llvm.FMAOp: "llvm.fma",
    llvm.VectorReduceFAddOp: "llvm.vector.reduce.fadd",
    llvm.VectorReduceFMulOp: "llvm.vector.reduce.fmul",
}


def _suffix(t: ir.Type) -> str:
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{_suffix(t.element)}"
    return t.intrinsic_name


def _intrinsic_op(op: Operation, builder: ir.IRBuilder, values: dict[SSAValue, ir.Value]) -> None:
    args = [values[a] for a in op.operands]
    ret = convert_type(op.results[0].type)
    overload = args[-1].type  # reductions are overloaded on the vector, the rest on the result
    name = f"{_INTRINSIC_OPS[type(op)]}.{_suffix(overload)}"
    fn = builder.module.globals.get(name)
    if fn is None:
        fn = ir.Function(builder.module, ir.FunctionType(ret, [a.type for a in args]), name=name)
    values[op.results[0]] = builder.call(fn, args, fastmath=_fastmath(op))


def _gep(op: llvm.GEPOp, builder: ir.IRBuilder, values: dict[SSAValue, ir.Value]) -> None:
    """GEP on the opaque pointer itself (xDSL bitcasts it to a typed pointer first, which then
    rejects storing a `ptr` through a struct field's address)."""
    dynamic = iter(op.ssa_indices)
    indices = [
        values[next(dynamic)] if idx == llvm.GEP_USE_SSA_VAL else ir.Constant(ir.IntType(32), idx)
        for idx in op.rawConstantIndices.iter_values()
    ]
    values[op.result] = builder.gep(
        values[op.ptr],
        indices,
        inbounds=op.inbounds is not None,
        source_etype=convert_type(op.elem_type),
    )


def _alloca(op: llvm.AllocaOp, builder: ir.IRBuilder, values: dict[SSAValue, ir.Value]) -> None:
    """An alloca whose result is an opaque `ptr` (llvmlite would type it `T*`)."""
    instr = builder.alloca(convert_type(op.elem_type), size=values[op.size])
    instr.type = ir.PointerType()
    if op.alignment is not None:
        instr.align = op.alignment.value.data
    values[op.res] = instr


def _convert_global(op: llvm.GlobalOp, module: ir.Module) -> None:
    gv = ir.GlobalVariable(module, convert_type(op.global_type), name=op.sym_name.data)
    gv.linkage = op.linkage.linkage.data
    if op.constant is not None:
        gv.global_constant = True
    if op.alignment is not None:
        gv.align = op.alignment.value.data
    if op.value is not None:
        if isinstance(op.value, StringAttr):
            raw = op.value.data.encode()
            gv.initializer = ir.Constant(ir.ArrayType(ir.IntType(8), len(raw)), bytearray(raw))
        else:
            gv.initializer = create_constant(op.global_type, op.value)
    elif op.linkage.linkage.data != "external":
        gv.initializer = ir.Constant(convert_type(op.global_type), None)


def _declare_function(op: llvm.FuncOp, module: ir.Module) -> ir.Function:
    ftype = op.function_type
    fn_type = ir.FunctionType(
        convert_type(ftype.output),
        [convert_type(t) for t in ftype.inputs.data],
        var_arg=ftype.is_variadic,
    )
    fn = ir.Function(module, fn_type, name=op.sym_name.data)
    linkage = op.linkage.linkage.data
    if linkage != "external" and op.body.blocks:
        fn.linkage = linkage
    if op.arg_attrs is not None:
        for arg, attrs in zip(fn.args, op.arg_attrs.data, strict=True):
            for key in attrs.data:
                if key in _ARG_FLAGS:
                    arg.add_attribute(_ARG_FLAGS[key])
    return fn


def _convert_body(op: llvm.FuncOp, fn: ir.Function) -> None:
    values: dict[SSAValue, ir.Value] = {}
    blocks: dict[Block, ir.Block] = {}
    body = list(op.body.blocks)
    for i, block in enumerate(body):
        blocks[block] = fn.append_basic_block(name=f"bb{i}")
    for arg, llarg in zip(body[0].args, fn.args, strict=True):
        values[arg] = llarg
        if arg.name_hint:
            llarg.name = arg.name_hint
    for block in body[1:]:
        builder = ir.IRBuilder(blocks[block])
        for arg in block.args:
            values[arg] = builder.phi(convert_type(arg.type))
    for block in body:
        builder = ir.IRBuilder(blocks[block])
        builder.position_at_end(blocks[block])
        for inner in block.ops:
            _convert_op(inner, builder, values, blocks)
            for result in inner.results:
                value = values.get(result)
                if result.name_hint and isinstance(value, ir.Instruction) and not value.name:
                    value.name = result.name_hint


def _convert_op(
    op: Operation,
    builder: ir.IRBuilder,
    values: dict[SSAValue, ir.Value],
    blocks: dict[Block, ir.Block],
) -> None:
    if isinstance(op, llvm.CallIntrinsicOp):
        _call_intrinsic(op, builder, values)
    elif isinstance(op, llvm.GEPOp):
        _gep(op, builder, values)
    elif isinstance(op, llvm.AllocaOp):
        _alloca(op, builder, values)
    elif type(op) in _INTRINSIC_OPS:
        _intrinsic_op(op, builder, values)
    else:
        try:
            convert_op(op, builder, values, blocks)
        except NotImplementedError as e:
            raise UserError(f"cannot translate {op.name} to LLVM IR: {e}") from None


def to_llvmlite_module(
    module: ModuleOp, *, triple: str | None = None, data_layout: str = ""
) -> ir.Module:
    """Translate a fully lowered module into an llvmlite IR module."""
    check_fully_lowered(module)
    out = ir.Module()
    attr = module.attributes.get("llvm.target_triple")
    if isinstance(attr, StringAttr):
        out.triple = attr.data
    elif triple is not None:
        out.triple = triple
    else:
        import llvmlite.binding as binding

        out.triple = binding.get_process_triple()
    if data_layout:
        out.data_layout = data_layout
    top: Iterable[Operation] = list(module.ops)
    for op in top:
        if isinstance(op, llvm.GlobalOp):
            _convert_global(op, out)
        elif not isinstance(op, llvm.FuncOp):
            raise UserError(f"cannot translate top-level {op.name} to LLVM IR")
    functions = [(op, _declare_function(op, out)) for op in top if isinstance(op, llvm.FuncOp)]
    for op, fn in functions:
        if op.body.blocks:
            _convert_body(op, fn)
    return out


def translate_to_llvm_ir(module: ModuleOp) -> str:
    """LLVM IR text of a module in the llvm dialect (what `--mlir-to-llvmir` prints)."""
    return str(to_llvmlite_module(module))
