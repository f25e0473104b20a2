"""OpenCL C from a lowered `gpu.module`: each `gpu.func kernel` becomes a `__kernel void` taking
`__global` pointers, its scf/arith/math/memref ops one C statement per SSA value (the OpenCL
compiler folds them); a buffer in memory space 3 is a `__local` array. An op it has no rule for
is a UserError naming the op and the kernel."""

from __future__ import annotations

import math

from xdsl.dialects import gpu, memref, scf
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    Signedness,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from nnvm.lowering.te_to_gpu.memory_scopes import WORKGROUP_SPACE
from nnvm.support.errors import UserError

PRELUDE = """\
static inline long nnvm_floordiv(long a, long b) {
  long q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline long nnvm_ceildiv(long a, long b) {
  long q = a / b;
  return (q * b != a && ((a < 0) == (b < 0))) ? q + 1 : q;
}
"""
"""Helpers the arith ops without a C operator use (MLIR's floor / ceil division)."""

BINARY = {
    "arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/",
    "arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.divsi": "/",
    "arith.remsi": "%", "arith.andi": "&", "arith.ori": "|", "arith.xori": "^",
    "arith.shli": "<<", "arith.shrsi": ">>",
}  # fmt: skip
UNSIGNED_BINARY = {"arith.divui": "/", "arith.remui": "%", "arith.shrui": ">>"}
CALLS = {
    "arith.maxnumf": "fmax", "arith.minnumf": "fmin", "arith.maxsi": "max", "arith.minsi": "min",
    "arith.remf": "fmod", "math.exp": "exp", "math.exp2": "exp2", "math.expm1": "expm1",
    "math.log": "log", "math.log2": "log2", "math.log10": "log10", "math.log1p": "log1p",
    "math.sqrt": "sqrt", "math.rsqrt": "rsqrt", "math.cbrt": "cbrt", "math.tanh": "tanh",
    "math.erf": "erf", "math.sin": "sin", "math.cos": "cos", "math.tan": "tan",
    "math.asin": "asin", "math.acos": "acos", "math.atan": "atan", "math.atan2": "atan2",
    "math.sinh": "sinh", "math.cosh": "cosh", "math.asinh": "asinh", "math.acosh": "acosh",
    "math.atanh": "atanh", "math.absf": "fabs", "math.absi": "abs", "math.floor": "floor",
    "math.ceil": "ceil", "math.round": "round", "math.roundeven": "rint", "math.trunc": "trunc",
    "math.powf": "pow", "math.fma": "fma", "math.copysign": "copysign",
    "math.ctpop": "popcount", "math.ctlz": "clz",
}  # fmt: skip
UNSIGNED_CALLS = {"arith.maxui": "max", "arith.minui": "min"}
CMPF = {
    "oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<=", "one": "!=",
    "ueq": "==", "ugt": ">", "uge": ">=", "ult": "<", "ule": "<=", "une": "!=",
}  # fmt: skip
CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">="}
CMPI_UNSIGNED = {"ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}
CASTS = (
    "arith.sitofp", "arith.fptosi", "arith.extf", "arith.truncf", "arith.extsi", "arith.trunci",
    "arith.index_cast",
)  # fmt: skip
UNSIGNED_CASTS = ("arith.uitofp", "arith.fptoui", "arith.extui", "arith.index_castui")
GPU_INDEX = {
    "gpu.block_id": "get_group_id",
    "gpu.thread_id": "get_local_id",
    "gpu.block_dim": "get_local_size",
    "gpu.grid_dim": "get_num_groups",
    "gpu.global_id": "get_global_id",
}


def c_type(t: Attribute, memory: bool = False) -> str:
    """The OpenCL C type of a scalar (`memory`: as stored in a buffer, where bool is a byte)."""
    if isinstance(t, Float32Type):
        return "float"
    if isinstance(t, Float64Type):
        return "double"
    if isinstance(t, IndexType):
        return "long"
    if isinstance(t, IntegerType):
        width = t.width.data
        if width == 1:
            return "uchar" if memory else "bool"
        names = {8: "char", 16: "short", 32: "int", 64: "long"}
        if width not in names:
            raise UserError(f"OpenCL C has no {width}-bit integers")
        name = names[width]
        return f"u{name}" if t.signedness.data == Signedness.UNSIGNED else name
    raise UserError(f"OpenCL C kernels do not take {t}")


def _is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def unsigned_type(t: Attribute) -> str:
    name = c_type(t)
    return name if name.startswith("u") or name == "bool" else f"u{name}"


def literal(attr: Attribute, t: Attribute) -> str:
    if isinstance(attr, FloatAttr):
        v = float(attr.value.data)
        suffix = "f" if isinstance(t, Float32Type) else ""
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "(-INFINITY)"
        return f"{v!r}{suffix}"
    if isinstance(attr, IntegerAttr):
        v = int(attr.value.data)
        if isinstance(t, IntegerType) and t.width.data == 1:
            return "true" if v else "false"
        if isinstance(t, IndexType) or (isinstance(t, IntegerType) and t.width.data == 64):
            return f"{v}L" if v != -(2**63) else "(-9223372036854775807L - 1)"
        return str(v)
    raise UserError(f"OpenCL C: no literal for {attr}")


class KernelPrinter:
    """One gpu.func kernel -> its OpenCL C function."""

    def __init__(self, kernel: gpu.FuncOp):
        self.kernel = kernel
        self.lines: list[str] = []
        self.names: dict[SSAValue, str] = {}
        self.taken: set[str] = set()
        self.depth = 1

    # -- names and emission -------------------------------------------------------------

    def name(self, v: SSAValue) -> str:
        if v not in self.names:
            hint = v.name_hint or ""
            base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint)
            if not base or not (base[0].isalpha() or base[0] == "_") or base in self.taken:
                base = f"v{len(self.names)}" if not base else f"{base}_{len(self.names)}"
            self.taken.add(base)
            self.names[v] = base
        return self.names[v]

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def define(self, v: SSAValue, expr: str) -> None:
        self.line(f"{c_type(v.type)} {self.name(v)} = {expr};")

    def fail(self, op: Operation, why: str = "") -> UserError:
        what = f"{op.name} ({why})" if why else op.name
        return UserError(
            f"the OpenCL C printer cannot print {what} in kernel {self.kernel.sym_name.data}"
        )

    # -- the kernel ---------------------------------------------------------------------

    def print(self) -> str:
        block = self.kernel.body.block
        params = []
        for arg in block.args:
            t = arg.type
            if not isinstance(t, MemRefType):
                raise UserError(
                    f"kernel {self.kernel.sym_name.data} takes {t}; GPU kernels take buffers"
                )
            params.append(
                f"__global {c_type(t.element_type, memory=True)}* restrict {self.name(arg)}"
            )
        size = self.kernel.attributes.get("gpu.known_block_size") or self.kernel.properties.get(
            "known_block_size"
        )
        attr = ""
        if size is not None:
            x, y, z = (int(d) for d in size.get_values())  # type: ignore[attr-defined]
            attr = f"__attribute__((reqd_work_group_size({x}, {y}, {z}))) "
        self.block(block)
        head = f"__kernel {attr}void {self.kernel.sym_name.data}({', '.join(params)}) {{"
        return "\n".join([head, *self.lines, "}"])

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        name = op.name
        r = op.results[0] if op.results else None
        args = [self.name(v) for v in op.operands]
        if name == "arith.constant":
            self.define(r, literal(op.properties["value"], r.type))  # type: ignore[arg-type]
        elif name in BINARY:
            self.define(r, f"{args[0]} {BINARY[name]} {args[1]}")  # type: ignore[arg-type]
        elif name in UNSIGNED_BINARY:
            u = unsigned_type(r.type)  # type: ignore[union-attr]
            expr = f"({u}){args[0]} {UNSIGNED_BINARY[name]} ({u}){args[1]}"
            self.define(r, expr)  # type: ignore[arg-type]
        elif name == "math.fpowi":  # pown takes an int exponent
            self.define(r, f"pown({args[0]}, (int){args[1]})")  # type: ignore[arg-type]
        elif name in CALLS:
            self.define(r, f"{CALLS[name]}({', '.join(args)})")  # type: ignore[arg-type]
        elif name in UNSIGNED_CALLS:
            u = unsigned_type(r.type)  # type: ignore[union-attr]
            self.define(r, f"{UNSIGNED_CALLS[name]}(({u}){args[0]}, ({u}){args[1]})")  # type: ignore[arg-type]
        elif name in ("arith.maximumf", "arith.minimumf"):  # NaN-propagating, as LLVM's
            f = "fmax" if name == "arith.maximumf" else "fmin"
            a, b = args
            self.define(r, f"(isnan({a}) || isnan({b})) ? ({a} + {b}) : {f}({a}, {b})")  # type: ignore[arg-type]
        elif name == "arith.negf":
            self.define(r, f"-{args[0]}")  # type: ignore[arg-type]
        elif name in ("arith.floordivsi", "arith.ceildivsi"):
            fn = "nnvm_floordiv" if name == "arith.floordivsi" else "nnvm_ceildiv"
            self.define(r, f"({c_type(r.type)}){fn}({args[0]}, {args[1]})")  # type: ignore[union-attr, arg-type]
        elif name == "arith.ceildivui":
            u = unsigned_type(r.type)  # type: ignore[union-attr]
            a, b = f"({u}){args[0]}", f"({u}){args[1]}"
            self.define(r, f"({a} + {b} - 1) / {b}")  # type: ignore[arg-type]
        elif name == "arith.cmpf":
            self.cmpf(op, args)
        elif name == "arith.cmpi":
            self.cmpi(op, args)
        elif name == "arith.select":
            self.define(r, f"{args[0]} ? {args[1]} : {args[2]}")  # type: ignore[arg-type]
        elif name in ("arith.trunci", "arith.extsi") and _is_bool(
            r.type if name == "arith.trunci" else op.operands[0].type  # type: ignore[union-attr]
        ):  # MLIR keeps the low bit; a sign-extended true is -1
            expr = (
                f"({args[0]} & 1) != 0"
                if name == "arith.trunci"
                else f"-({c_type(r.type)}){args[0]}"
            )  # type: ignore[union-attr]
            self.define(r, expr)  # type: ignore[arg-type]
        elif name in CASTS:
            self.define(r, f"({c_type(r.type)}){args[0]}")  # type: ignore[union-attr, arg-type]
        elif name in UNSIGNED_CASTS:
            src = unsigned_type(op.operands[0].type)
            self.define(r, f"({c_type(r.type)})(({src}){args[0]})")  # type: ignore[union-attr, arg-type]
        elif name == "arith.bitcast":
            self.define(r, f"as_{c_type(r.type)}({args[0]})")  # type: ignore[union-attr, arg-type]
        elif name in GPU_INDEX:
            dim = "xyz".index(op.properties["dimension"].data.value)  # type: ignore[attr-defined]
            self.define(r, f"(long){GPU_INDEX[name]}({dim})")  # type: ignore[arg-type]
        elif name == "gpu.barrier":
            self.line("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);")
        elif name == "memref.load":
            self.define(r, self.load(op, args))  # type: ignore[arg-type]
        elif name == "memref.store":
            self.store(op, args)
        elif name in ("memref.alloca", "memref.alloc"):
            self.private(op)
        elif name == "memref.dealloc":
            pass
        elif name == "scf.for":
            self.for_(op)  # type: ignore[arg-type]
        elif name == "scf.if":
            self.if_(op)  # type: ignore[arg-type]
        elif name in ("gpu.return", "scf.yield"):
            if op.operands:
                raise self.fail(op, "yields outside scf.for / scf.if")
        else:
            raise self.fail(op)

    # -- ops with more to them ----------------------------------------------------------

    def cmpf(self, op: Operation, args: list[str]) -> None:
        pred = op.properties["predicate"].value.data  # type: ignore[attr-defined]
        names = [
            "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
            "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
        ]  # fmt: skip
        p = names[pred]
        a, b = args
        if p in ("false", "true"):
            expr = p
        elif p == "ord":
            expr = f"!isnan({a}) && !isnan({b})"
        elif p == "uno":
            expr = f"isnan({a}) || isnan({b})"
        elif p.startswith("o"):
            expr = f"{a} {CMPF[p]} {b}" if p != "one" else f"({a} < {b} || {a} > {b})"
        else:  # unordered: true when either is NaN
            expr = f"(isnan({a}) || isnan({b}) || {a} {CMPF[p]} {b})"
            if p == "une":
                expr = f"{a} != {b}"
        self.define(op.results[0], expr)

    def cmpi(self, op: Operation, args: list[str]) -> None:
        pred = op.properties["predicate"].value.data  # type: ignore[attr-defined]
        names = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
        p = names[pred]
        a, b = args
        if p in CMPI:
            self.define(op.results[0], f"{a} {CMPI[p]} {b}")
        else:
            u = unsigned_type(op.operands[0].type)
            self.define(op.results[0], f"({u}){a} {CMPI_UNSIGNED[p]} ({u}){b}")

    def offset(self, op: Operation, ref: SSAValue, indices: list[str]) -> str:
        t = ref.type
        if not isinstance(t, MemRefType):
            raise self.fail(op, "not a memref")
        shape = t.get_shape()
        if any(d < 0 for d in shape):
            raise self.fail(op, "a dynamic shape")
        layout = t.layout
        if layout is not None and str(layout) not in ("", "#none", "none"):
            if "strided" in str(layout) or "affine_map" in str(layout):
                raise self.fail(op, f"layout {layout}")
        if not indices:
            return "0"
        expr = indices[0]
        for d, i in zip(shape[1:], indices[1:], strict=True):
            expr = f"({expr}) * {d}L + {i}"
        return expr

    def load(self, op: Operation, args: list[str]) -> str:
        ref, *idx = op.operands
        text = f"{args[0]}[{self.offset(op, ref, args[1:])}]"
        elt = ref.type.element_type  # type: ignore[attr-defined]
        if isinstance(elt, IntegerType) and elt.width.data == 1:
            return f"({text} != 0)"
        return text

    def store(self, op: Operation, args: list[str]) -> None:
        ref = op.operands[1]
        off = self.offset(op, ref, args[2:])
        elt = ref.type.element_type  # type: ignore[attr-defined]
        v = args[0]
        if isinstance(elt, IntegerType) and elt.width.data == 1:
            v = f"(uchar){v}"
        self.line(f"{args[1]}[{off}] = {v};")

    def private(self, op: Operation) -> None:
        """A buffer allocated inside a kernel is the thread's own: a private array; one in
        memory space 3 (lower-te-to-gpu's shared stages) is the work-group's: a `__local`
        array, which OpenCL C allows only at the kernel's outermost scope."""
        t = op.results[0].type
        assert isinstance(t, MemRefType)
        if op.operands or any(d < 0 for d in t.get_shape()):
            raise self.fail(op, "a dynamic size")
        count = max(math.prod(t.get_shape()), 1)
        elt = c_type(t.element_type, memory=True)
        space = t.memory_space
        if isinstance(space, IntegerAttr) and space.value.data == WORKGROUP_SPACE:
            if op.parent_op() is not self.kernel:
                raise self.fail(op, "a __local buffer inside a loop or branch")
            self.line(f"__local {elt} {self.name(op.results[0])}[{count}];")
            return
        if not isinstance(space, NoneAttr) and not (
            isinstance(space, IntegerAttr) and space.value.data == 0
        ):
            raise self.fail(op, f"memory space {space}")
        self.line(f"{elt} {self.name(op.results[0])}[{count}];")

    def for_(self, op: scf.ForOp) -> None:
        lb, ub, step = (self.name(v) for v in (op.lb, op.ub, op.step))
        body = op.body.block
        iv, *carried = body.args
        for res, init in zip(op.results, op.iter_args, strict=True):
            self.line(f"{c_type(res.type)} {self.name(res)} = {self.name(init)};")
        i = self.name(iv)
        self.line(f"for ({c_type(iv.type)} {i} = {lb}; {i} < {ub}; {i} += {step}) {{")
        self.depth += 1
        for arg, res in zip(carried, op.results, strict=True):
            self.define(arg, self.name(res))
        self._body(body, [self.name(r) for r in op.results])
        self.depth -= 1
        self.line("}")

    def if_(self, op: scf.IfOp) -> None:
        for res in op.results:
            self.line(f"{c_type(res.type)} {self.name(res)};")
        self.line(f"if ({self.name(op.cond)}) {{")
        outs = [self.name(r) for r in op.results]
        self.depth += 1
        self._body(op.true_region.block, outs)
        self.depth -= 1
        if op.false_region.blocks and list(op.false_region.block.ops):
            self.line("} else {")
            self.depth += 1
            self._body(op.false_region.block, outs)
            self.depth -= 1
        self.line("}")

    def _body(self, block: Block, outs: list[str]) -> None:
        """A region's ops; its terminator's operands assigned to `outs`."""
        for inner in block.ops:
            if isinstance(inner, scf.YieldOp):
                for name, v in zip(outs, inner.operands, strict=True):
                    self.line(f"{name} = {self.name(v)};")
            else:
                self.op(inner)


def print_opencl_c(module: gpu.ModuleOp) -> str:
    """The OpenCL C program of a gpu.module: the prelude, then each kernel."""
    parts = [PRELUDE]
    for op in module.body.block.ops:
        if isinstance(op, gpu.FuncOp):
            parts.append(KernelPrinter(op).print())
        elif not isinstance(op, memref.GlobalOp):
            raise UserError(f"the OpenCL C printer cannot print {op.name} in a gpu.module")
    return "\n\n".join(parts) + "\n"
